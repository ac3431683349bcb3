"""Every key and screen of ``watch`` and ``check --tui``, driven with Textual's Pilot.

The app reads a Source in a thread; each test waits for the reads it started
(``settle``) before looking at the screen.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input
from triton_doctor import cli, snapshot
from triton_doctor.catalogue import all_rules
from triton_doctor.checks import collect as collector
from triton_doctor.checks.live import unreachable
from triton_doctor.checks.log_scan import LogScan
from triton_doctor.checks.repository import collect_repository
from triton_doctor.evidence import Evidence, RepositoryEvidence, to_jsonable
from triton_doctor.invocation import Invocation
from triton_doctor.triton.effective_config import effective_config_text
from triton_doctor.tui import launch
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.findings import FindingsScreen
from triton_doctor.tui.gpu import GpuScreen
from triton_doctor.tui.help import HelpScreen
from triton_doctor.tui.log import LogScreen
from triton_doctor.tui.model import ModelScreen
from triton_doctor.tui.overview import OverviewScreen
from triton_doctor.tui.sources import Source

from tests.tui import render
from tests.tui.support import (
    SIZE,
    NotedApp,
    Reads,
    column,
    cursor_key,
    detector_recovered,
    incident,
    play,
    server_unreachable,
    settle,
    source,
    table,
    text_of,
)

INCIDENT_RULES = ["TD601", "TD602", "TD613", "TD611", "TD612", "TD701", "TD814"]


def footer_line(app: NotedApp) -> str:
    """The keys the footer offers, as drawn."""
    return render.screen_text(app.export_screenshot())[-1]


def incident_app(**options: object) -> NotedApp:
    return NotedApp(source(Reads(incident())), **options)


# --- help --------------------------------------------------------------------------------


@pytest.mark.parametrize("close", ["escape", "question_mark"])
def test_question_mark_opens_help_and_esc_or_question_mark_closes_it(close: str) -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press(close)
            assert isinstance(app.screen, OverviewScreen)
            assert len(app.screen_stack) == 1

    play(scenario())


def test_help_over_a_screen_returns_to_that_screen() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f", "question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("question_mark")
            assert isinstance(app.screen, FindingsScreen)

    play(scenario())


def test_keys_under_the_help_do_nothing_until_it_is_closed() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("question_mark", "f", "slash", "l", "r", "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, HelpScreen)
            assert len(app.screen_stack) == 2
            assert app.shown == 1

    play(scenario())


# --- findings: f, /, the filter, a, sorting ----------------------------------------------


def test_f_opens_the_findings_and_esc_goes_back() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("escape")  # at the first screen: nothing to go back to
            assert isinstance(app.screen, OverviewScreen) and app.is_running
            await pilot.press("f")
            assert isinstance(app.screen, FindingsScreen)
            assert isinstance(app.focused, DataTable)
            assert sorted(column(app, "#findings", "rule")) == sorted(INCIDENT_RULES)
            # f again stays on the same screen rather than stacking another one.
            await pilot.press("f")
            assert len(app.screen_stack) == 2
            await pilot.press("escape")
            assert isinstance(app.screen, OverviewScreen)

    play(scenario())


FILTERS = [
    ("rule:TD6", ["TD601", "TD602", "TD611", "TD612", "TD613"]),
    ("rule:td61", ["TD611", "TD612", "TD613"]),
    ("rule:queue-backlog", ["TD611"]),
    ("severity:error", ["TD601", "TD602", "TD613", "TD814"]),
    ("sev:warning", ["TD601", "TD602", "TD611", "TD612", "TD613", "TD701", "TD814"]),
    ("model:tokenizer", ["TD613", "TD814"]),
    ("model:(server)", ["TD602", "TD701"]),
    ("queue", ["TD611"]),
    ("model:image sev:error", []),
    ("severity:nonsense", []),
]


def test_slash_focuses_the_filter_and_typing_filters() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("slash")
            await pilot.pause()
            assert isinstance(app.screen, FindingsScreen)
            assert isinstance(app.focused, Input)
            for query, rules in FILTERS:
                await pilot.press("home", "ctrl+k", *query)
                assert app.screen.query_one("#filter", Input).value == query
                assert sorted(column(app, "#findings", "rule")) == rules, query
                assert text_of(app, "#counts").startswith(
                    f"{len(rules)} shown · 7 firing"), query
                if not rules:
                    assert text_of(app, "#detail") == "No finding matches.", query
            await pilot.press("home", "ctrl+k")
            assert len(column(app, "#findings", "rule")) == 7

    play(scenario())


def test_enter_in_the_filter_returns_to_the_table_esc_leaves_filter_then_screen() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"model:tok", "enter")
            assert isinstance(app.focused, DataTable)
            assert column(app, "#findings", "rule") == ["TD613", "TD814"]
            # / on the findings screen focuses the filter again, keeping what was typed.
            await pilot.press("slash")
            await pilot.pause()
            assert isinstance(app.focused, Input)
            await pilot.press("escape")
            assert isinstance(app.screen, FindingsScreen)
            assert isinstance(app.focused, DataTable)
            assert column(app, "#findings", "rule") == ["TD613", "TD814"]
            await pilot.press("escape")
            assert isinstance(app.screen, OverviewScreen)

    play(scenario())


def test_keys_typed_in_the_filter_are_text_not_commands() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"flqsa")
            assert isinstance(app.screen, FindingsScreen)
            assert app.is_running
            assert app.screen.query_one("#filter", Input).value == "flqsa"

    play(scenario())


def test_a_shows_findings_that_stopped_firing() -> None:
    async def scenario() -> None:
        reads = Reads(incident(), detector_recovered())
        app = NotedApp(source(reads))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            assert len(column(app, "#findings", "rule")) == 7
            await pilot.press("r")
            await settle(app, pilot)
            assert reads.calls == 2
            assert sorted(column(app, "#findings", "rule")) == ["TD611", "TD612", "TD613",
                                                                 "TD701", "TD814"]
            assert "5 shown · 5 firing · 7 seen · firing only" in text_of(app, "#counts")
            await pilot.press("a")
            rules = column(app, "#findings", "rule")
            states = column(app, "#findings", "state")
            assert len(rules) == 7
            # Firing first, the cleared ones after them.
            assert states[:5] == ["firing"] * 5
            assert sorted(rules[5:]) == ["TD601", "TD602"]
            assert all(state.startswith("cleared ") for state in states[5:])
            assert "7 shown · 5 firing · 7 seen · all seen" in text_of(app, "#counts")
            await pilot.press("a")
            assert len(column(app, "#findings", "rule")) == 5

    play(scenario())


def test_the_detail_pane_follows_the_cursor() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            rules = column(app, "#findings", "rule")
            for index, rule in enumerate(rules):
                if index:
                    await pilot.press("down")
                assert text_of(app, "#detail").split("\n")[0].split()[2] == rule
            detail = text_of(app, "#detail")
            assert "first seen 21:52:48Z" in detail

    play(scenario())


def _header_offset(found: DataTable[object], name: str) -> tuple[int, int]:
    """Where to click on column ``name``'s header."""
    x = 0
    for key, col in found.columns.items():
        if key.value == name:
            return (x + 1, 0)
        x += col.get_render_width(found)
    raise KeyError(name)


def test_clicking_a_column_header_sorts_by_it_and_again_reverses() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            await render.still(app, pilot)
            found = table(app, "#findings")
            await pilot.click("#findings", offset=_header_offset(found, "rule"))
            await pilot.pause()
            assert column(app, "#findings", "rule") == sorted(INCIDENT_RULES)
            await pilot.click("#findings", offset=_header_offset(found, "rule"))
            await pilot.pause()
            assert column(app, "#findings", "rule") == sorted(INCIDENT_RULES, reverse=True)
            await pilot.click("#findings", offset=_header_offset(found, "model"))
            await pilot.pause()
            models = column(app, "#findings", "model")
            # (server) findings have no model: they sort first.
            assert models == ["(server)", "(server)", "detector", "image_classifier",
                              "reranker", "tokenizer", "tokenizer"]

    play(scenario())


def test_a_header_selected_message_sorts_by_severity() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            found = table(app, "#findings")

            async def select_header(name: str) -> None:
                key = next(k for k in found.columns if k.value == name)
                found.post_message(DataTable.HeaderSelected(found, key, 0,
                                                            found.columns[key].label))
                await pilot.pause()

            # By rule first, which puts TD613 (an error) among the warnings...
            await select_header("rule")
            assert column(app, "#findings", "rule") == sorted(INCIDENT_RULES)
            # ...then by severity, which brings the errors back to the top.
            await select_header("severity")
            severities = column(app, "#findings", "severity")
            assert severities == sorted(severities, key=lambda s: "✗!i".index(s[0]))
            assert severities[0] == "✗ error" and severities[-1] == "! warning"

    play(scenario())


# --- drilling down: models, firing findings, GPUs ---------------------------------------


def test_enter_on_a_model_row_opens_that_model() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            models = column(app, "#models", "model")
            assert isinstance(app.focused, DataTable) and app.focused.id == "models"
            await pilot.press(*["down"] * models.index("tokenizer"), "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen)
            assert app.screen.model == "tokenizer"
            numbers = text_of(app, "#numbers")
            assert numbers.startswith("tokenizer  version 1  READY")
            assert "failures       1157" in numbers
            assert column(app, "#model-findings", "rule") == ["TD613", "TD814"]
            await pilot.press("escape")
            assert isinstance(app.screen, OverviewScreen)

    play(scenario())


def test_enter_on_a_firing_row_opens_the_findings_on_that_finding() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            firing = table(app, "#firing")
            firing.focus()
            await pilot.press("down", "down", "down")
            chosen = cursor_key(app, "#firing")
            rule = column(app, "#firing", "rule")[3]
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, FindingsScreen)
            assert cursor_key(app, "#findings") == chosen
            assert text_of(app, "#detail").split("\n")[0].split()[2] == rule

    play(scenario())


def test_enter_on_a_finding_with_a_model_opens_the_model_and_without_one_stays() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("f")
            models = column(app, "#findings", "model")
            server_row = models.index("(server)")
            await pilot.press(*["down"] * server_row, "enter")
            assert isinstance(app.screen, FindingsScreen)
            await pilot.press("home")
            await pilot.press(*["down"] * models.index("reranker"), "enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen)
            assert app.screen.model == "reranker"
            # The model's own findings lead back to the findings, on that finding.
            table(app, "#model-findings").focus()
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, FindingsScreen)
            assert column(app, "#findings", "rule")[
                table(app, "#findings").cursor_row] == "TD612"
            assert len(app.screen_stack) == 4

    play(scenario())


def test_the_model_screen_shows_the_configuration_the_server_runs() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.push_screen(ModelScreen("image_classifier"))
            await settle(app, pilot)
            config = text_of(app, "#config")
            assert config.startswith("# as the server runs it")
            assert 'name: "image_classifier"' in config
            app.push_screen(ModelScreen("no_such_model"))
            await settle(app, pilot)
            assert text_of(app, "#numbers") == "no_such_model  the server does not list it\n"

    play(scenario())


def test_enter_on_a_gpu_row_opens_that_gpu() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            table(app, "#gpus").focus()
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, GpuScreen)
            facts = text_of(app, "#gpu-facts")
            assert facts.startswith("GPU 0  NVIDIA H200")
            assert column(app, "#gpu-findings", "rule") == ["TD701"]

    play(scenario())


def test_clicking_a_model_row_selects_it_and_clicking_again_opens_it() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await render.still(app, pilot)
            row = column(app, "#models", "model").index("reranker")
            await pilot.click("#models", offset=(2, 1 + row))
            await pilot.pause()
            assert isinstance(app.screen, OverviewScreen)
            assert cursor_key(app, "#models") == "reranker"
            await pilot.click("#models", offset=(2, 1 + row))
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen)
            assert app.screen.model == "reranker"
            await pilot.press("escape")
            # A click, then Enter, opens it too.
            row = column(app, "#models", "model").index("safety_filter")
            await pilot.click("#models", offset=(2, 1 + row))
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen)
            assert app.screen.model == "safety_filter"

    play(scenario())


# --- the log ----------------------------------------------------------------------------


LOG_LINES = [
    "E1129 21:52:41.000003 6646 model_lifecycle.cc:654] failed to load 'detector' version 1: "
    "Internal: FileNotFoundError: anchors.json",
    "W1129 21:52:42.000004 6646 pinned_memory_manager.cc:273] Unable to allocate pinned "
    "system memory, pinned memory pool will not be available",
]


def test_l_opens_the_log_and_each_line_shows_the_rule_that_explains_it() -> None:
    async def scenario() -> None:
        evidence = incident()
        assert evidence.log is not None
        all_rules()  # the scan looks for the words the registered rules declare
        scan = LogScan("server.log")
        scan.feed("".join(f"{line}\n" for line in [*LOG_LINES, *evidence.log.lines]).encode())
        evidence.log = scan.evidence()
        app = NotedApp(source(Reads(evidence)))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("l")
            await settle(app, pilot)
            assert isinstance(app.screen, LogScreen)
            assert text_of(app, "#log-source") == (
                "server.log: 2 problem(s) found, 1 other error or warning line(s) at its end; "
                "62 lines read")
            # The log rules' findings first, in the log's order, then the other error lines.
            assert column(app, "#log-lines", "rule") == ["TD801", "TD814", ""]
            assert column(app, "#log-lines", "model") == ["detector", "tokenizer", ""]
            assert column(app, "#log-lines", "count") == ["1x", "60x", "1x"]
            detail = text_of(app, "#log-detail")
            assert detail.startswith("failed to load 'detector' version 1: Internal: "
                                     "FileNotFoundError: anchors.json\ndetector: failed to "
                                     "load: Internal: FileNotFoundError: anchors.json (log "
                                     "line 1)\nfix: ")
            assert "\nTD801 model-load-failed — The log shows a model failing to load\n" in detail
            await pilot.press("down")
            detail = text_of(app, "#log-detail")
            assert "tokenizer: requests failed: its execute raised ValueError: token id out of " \
                   "the vocabulary (log lines 3-62, 60 times" in detail
            assert "\nTD814 python-execute-failed — A Python model raises on requests\n" in detail
            await pilot.press("down")
            assert "No rule explains this line." in text_of(app, "#log-detail")
            await pilot.press("escape")
            assert isinstance(app.screen, OverviewScreen)

    play(scenario())


def test_the_log_screen_says_why_there_is_no_log() -> None:
    async def scenario() -> None:
        evidence = incident()
        evidence.log = None
        evidence.unavailable["log"] = "no --log FILE given"
        app = NotedApp(source(Reads(evidence)))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("l")
            await settle(app, pilot)
            assert text_of(app, "#log-source") == "no log: no --log FILE given"
            assert table(app, "#log-lines").row_count == 0

    play(scenario())


# --- reading: p, r, errors, an unreachable server ---------------------------------------


def test_p_pauses_a_live_source_and_p_again_resumes() -> None:
    async def scenario() -> None:
        reads = Reads(incident())
        app = NotedApp(source(reads, live=True), interval_s=0.02)
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and (
                    reads.calls < 3 or " p pause" not in footer_line(app)):
                await pilot.pause(0.02)  # three reads in 60 ms: the footer may come later
            assert reads.calls >= 3
            assert " p pause" in footer_line(app)
            await pilot.press("p")
            assert app.paused
            await settle(app, pilot)
            assert "PAUSED" in text_of(app, "#status")
            paused_at = reads.calls
            await pilot.pause(0.3)
            assert reads.calls == paused_at, "a paused watch must not read"
            await pilot.press("p")
            assert not app.paused
            deadline = time.monotonic() + 10
            while reads.calls == paused_at and time.monotonic() < deadline:
                await pilot.pause(0.02)
            assert reads.calls > paused_at
            await settle(app, pilot)
            assert "PAUSED" not in text_of(app, "#status")
            assert ("information", "paused: press p to poll again") in app.notes

    play(scenario())


def test_p_on_a_source_that_is_not_polled_does_nothing() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert " p pause" not in footer_line(app) and " l log" in footer_line(app)
            await pilot.press("p")
            assert not app.paused
            assert "PAUSED" not in text_of(app, "#status")

    play(scenario())


def test_r_reads_again_now() -> None:
    async def scenario() -> None:
        reads = Reads(incident())
        app = NotedApp(source(reads, live=True), interval_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert reads.calls == 1 and app.shown == 1
            await pilot.press("r")
            await settle(app, pilot)
            assert reads.calls == 2 and app.shown == 2
            await pilot.press("f", "r")
            await settle(app, pilot)
            assert reads.calls == 3

    play(scenario())


def test_r_while_a_read_runs_starts_no_second_one() -> None:
    async def scenario() -> None:
        reads = Reads(incident())
        reads.hold.clear()
        app = NotedApp(source(reads, live=True), interval_s=0.02)
        try:
            async with app.run_test(size=SIZE) as pilot:
                assert await asyncio.to_thread(reads.entered.wait, 10)
                await pilot.press("r")
                await pilot.press("r")
                await pilot.pause(0.2)  # ten intervals of the timer
                assert reads.calls == 1
                assert reads.running == 1
                assert ("information", "a read is already running") in app.notes
                reads.hold.set()
                await settle(app, pilot)
                deadline = time.monotonic() + 10
                while reads.calls < 3 and time.monotonic() < deadline:
                    await pilot.pause(0.02)
                assert reads.calls >= 3
                assert reads.most_running == 1, "polls overlapped"
        finally:
            reads.hold.set()

    play(scenario())


def test_a_poll_that_ends_after_p_is_not_shown_but_r_is() -> None:
    async def scenario() -> None:
        reads = Reads(incident(), detector_recovered())
        reads.hold.clear()
        app = NotedApp(source(reads, live=True), interval_s=3600)
        try:
            async with app.run_test(size=SIZE) as pilot:
                assert await asyncio.to_thread(reads.entered.wait, 10)
                await pilot.press("p")  # pause while the first poll runs
                reads.hold.set()
                await settle(app, pilot)
                assert reads.calls == 1 and not app.reading
                assert app.shown == 0, "a paused screen changed"
                await pilot.press("r")  # asked for: shown even while paused
                await settle(app, pilot)
                assert app.shown == 1
                assert "ready ✓" in text_of(app, "#status")
        finally:
            reads.hold.set()

    play(scenario())


def test_a_read_landing_while_the_ui_closes_is_ignored() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
        assert not app.screen_stack
        app._show(app.history.latest)  # what a read finishing during shutdown does

    play(scenario())


class LandingWhileClosing(OverviewScreen):
    """Shows a frame from its unmount handler: the moment a read landing during shutdown
    meets a screen whose widgets are already removed."""

    def on_unmount(self) -> None:
        frame = self.watch_app.history.latest
        assert frame is not None
        self.watch_app._show(frame)


class ClosingApp(NotedApp):
    def get_default_screen(self) -> OverviewScreen:
        return LandingWhileClosing()


def test_a_read_landing_on_a_screen_being_torn_down_is_ignored() -> None:
    async def scenario() -> None:
        app = ClosingApp(source(Reads(incident())))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
        assert app.shown == 2, "the read landing at shutdown was not taken"

    play(scenario())


def test_a_read_landing_before_a_pushed_screen_is_built_waits_for_it() -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            frame = app.history.latest
            assert frame is not None
            app.push_screen(FindingsScreen())  # on the stack, its widgets not made yet
            app._show(frame)
            await settle(app, pilot)
            assert isinstance(app.screen, FindingsScreen)
            assert sorted(column(app, "#findings", "rule")) == sorted(INCIDENT_RULES)

    play(scenario())


def broken() -> Evidence:
    raise RuntimeError("the collector fell over")


def test_a_read_that_raises_is_notified_and_the_watch_goes_on() -> None:
    async def scenario() -> None:
        reads = Reads(incident(), broken, incident())
        app = NotedApp(source(reads, live=True, title="test source"), interval_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("r")
            await settle(app, pilot)
            assert ("error", "reading test source failed: RuntimeError: the collector fell "
                    "over") in app.notes
            assert app.is_running and not app.reading
            assert isinstance(app.screen, OverviewScreen)
            status = text_of(app, "#status")
            assert "last read failed" in status
            # What the last good read showed stays on the screen.
            assert "triton 2.51.0" in status
            assert len(column(app, "#models", "model")) == 6
            await pilot.press("r")
            await settle(app, pilot)
            assert reads.calls == 3
            assert "last read failed" not in text_of(app, "#status")

    play(scenario())


def test_a_first_read_that_fails_says_so_in_the_status_bar() -> None:
    async def scenario() -> None:
        app = NotedApp(source(Reads(broken), title="test source"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.is_running and not app.reading
            assert app.notes == [("error", "reading test source failed: RuntimeError: the "
                                  "collector fell over")]
            status = text_of(app, "#status")
            assert "last read failed" in status
            assert "reading…" not in status

    play(scenario())


def test_a_server_that_goes_away_shows_unreachable_then_recovers() -> None:
    async def scenario() -> None:
        reads = Reads(incident(), server_unreachable(), incident())
        app = NotedApp(source(reads, live=True), interval_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "triton 2.51.0  live ✓  ready ✗" in text_of(app, "#status")
            await pilot.press("r")
            await settle(app, pilot)
            status = text_of(app, "#status")
            assert "server unreachable" in status and "triton 2.51.0" not in status
            assert "server ✗" in text_of(app, "#sources")
            assert "cannot connect" in text_of(app, "#sources")
            assert column(app, "#models", "model") == []
            await pilot.press("r")
            await settle(app, pilot)
            status = text_of(app, "#status")
            assert "server unreachable" not in status and "triton 2.51.0" in status
            assert len(column(app, "#models", "model")) == 6

    play(scenario())


def dead_server() -> Evidence:
    """What the Poller gives while the server the user named does not answer."""
    evidence = server_unreachable()
    unreachable(evidence, "server", evidence.unavailable["server"])
    return evidence


def test_a_dead_server_is_a_firing_finding_until_it_answers() -> None:
    async def scenario() -> None:
        reads = Reads(dead_server(), incident())
        app = NotedApp(source(reads, live=True), interval_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "TD603" in column(app, "#firing", "rule")
            await pilot.press("f")
            rows = zip(column(app, "#findings", "severity"), column(app, "#findings", "rule"),
                       column(app, "#findings", "message"), strict=True)
            assert ("error", "TD603", "cannot connect to http://127.0.0.1:36419: refused") in [
                (severity.split()[-1], rule, message) for severity, rule, message in rows]
            await pilot.press("escape", "r")
            await settle(app, pilot)
            assert "TD603" not in column(app, "#firing", "rule")

    play(scenario())


def test_keys_before_the_first_read_has_finished() -> None:
    async def scenario() -> None:
        reads = Reads(incident())
        reads.hold.clear()
        app = NotedApp(source(reads, live=True), interval_s=3600)
        try:
            async with app.run_test(size=SIZE) as pilot:
                assert await asyncio.to_thread(reads.entered.wait, 10)
                assert text_of(app, "#status").endswith("reading…")
                await pilot.press("s")
                assert app.notes == [
                    ("warning", "nothing to save yet: the first read has not finished")]
                await pilot.press("f")
                assert text_of(app, "#detail") == "Reading…"
                await pilot.press("escape", "l")
                assert isinstance(app.screen, LogScreen)
                await pilot.press("escape", "enter")
                assert isinstance(app.screen, OverviewScreen)
                app.push_screen(ModelScreen("tokenizer"))
                await pilot.pause()
                assert text_of(app, "#numbers") == "tokenizer\n"
                reads.hold.set()
                await settle(app, pilot)
                # The screen on top draws the first frame when it comes.
                assert text_of(app, "#numbers").startswith("tokenizer  version 1  READY")
        finally:
            reads.hold.set()

    play(scenario())


@pytest.mark.parametrize("size", [(60, 16), (80, 24), (200, 60)])
def test_every_screen_draws_in_a_small_or_large_terminal(size: tuple[int, int]) -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            for keys, screen in ((("f",), FindingsScreen), (("escape", "l"), LogScreen),
                                 (("escape", "enter"), ModelScreen),
                                 (("escape", "question_mark"), HelpScreen),
                                 (("escape",), OverviewScreen)):
                await pilot.press(*keys)
                await settle(app, pilot)
                assert isinstance(app.screen, screen)
                assert "triton 2.51.0" in render.screen_text(app.export_screenshot())[0]

    play(scenario())


# --- s and q ----------------------------------------------------------------------------


def test_s_saves_a_snapshot_that_reads_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = NotedApp(source(Reads(incident())), save_dir=str(tmp_path))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("s")
            await pilot.pause()
        saved = list(tmp_path.iterdir())
        # Named after when the server was sampled, in UTC.
        assert [path.name for path in saved] == ["triton-doctor-20261129-215248.json"]
        assert json.dumps(to_jsonable(snapshot.read(str(saved[0])))) == json.dumps(
            to_jsonable(incident()))
        assert any(severity == "information" and message.startswith(f"saved {saved[0]}")
                   for severity, message in app.notes)

    play(scenario())


def test_s_into_a_directory_that_is_not_there_says_so(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = NotedApp(source(Reads(incident())), save_dir=str(tmp_path / "missing"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("s")
            await pilot.pause()
            assert app.is_running
            assert any(severity == "error" and message.startswith("cannot write")
                       for severity, message in app.notes)

    play(scenario())


@pytest.mark.parametrize("screen_keys", [(), ("f",), ("l",)])
def test_q_quits(screen_keys: tuple[str, ...]) -> None:
    async def scenario() -> None:
        app = incident_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press(*screen_keys, "q")
            await pilot.pause()
            assert not app.is_running

    play(scenario())


# --- check --tui ------------------------------------------------------------------------


def demo_app() -> NotedApp:
    source = render.repository_source()
    return NotedApp(source, browse_only=True)


def test_check_tui_starts_on_the_findings_and_esc_there_does_nothing() -> None:
    async def scenario() -> None:
        app = demo_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert isinstance(app.screen, FindingsScreen)
            assert len(app.screen_stack) == 1
            assert len(column(app, "#findings", "rule")) == 26
            await pilot.press("escape")
            await pilot.pause()
            assert app.is_running
            assert isinstance(app.screen, FindingsScreen)
            assert len(app.screen_stack) == 1
            # A repository check has no timeline: the detail pane leaves it out.
            assert "first seen" not in text_of(app, "#detail")

    with render.at_root():
        play(scenario())


def test_check_tui_has_no_log() -> None:
    async def scenario() -> None:
        app = demo_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            # The footer does not offer the log, and l does nothing.
            footer = footer_line(app)
            assert " r refresh" in footer and " l log" not in footer and " p pause" not in footer
            await pilot.press("l")
            await pilot.pause()
            assert isinstance(app.screen, FindingsScreen)
            assert len(app.screen_stack) == 1

    with render.at_root():
        play(scenario())


def test_check_tui_with_a_log_shows_its_diagnosis(tmp_path: Path) -> None:
    """`check --tui --log FILE`: l opens the log screen, with the log rules' diagnosis."""
    log_file = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "no_temp_dir.log"
    no_settings = tmp_path / "settings.toml"
    no_settings.write_text("")
    argv = ["check", "--log", str(log_file), "--config", str(no_settings)]
    invocation = Invocation.from_args(cli.build_parser().parse_args(argv))
    evidence = collector.collect(invocation)

    async def scenario() -> None:
        app = NotedApp(Source(collect=lambda: evidence, judge=invocation.judge, title="log",
                              live=False), browse_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert column(app, "#findings", "rule") == ["TD802", "TD806"]
            assert " l log" in footer_line(app)
            await pilot.press("l")
            await settle(app, pilot)
            assert isinstance(app.screen, LogScreen)
            # The findings, in the log's order, then the other error lines of its end.
            assert column(app, "#log-lines", "rule")[:3] == ["TD806", "TD802", ""]
            assert column(app, "#log-lines", "model")[:2] == ["feature_cache", ""]
            assert column(app, "#log-lines", "count")[:2] == ["2x", "1x"]

    play(scenario())


def test_check_tui_enter_opens_the_model_with_its_effective_configuration() -> None:
    async def scenario() -> None:
        app = demo_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"model:text_encoder", "enter")
            assert set(column(app, "#findings", "model")) == {"text_encoder"}
            await pilot.press("enter")
            await settle(app, pilot)
            assert isinstance(app.screen, ModelScreen)
            assert app.screen.model == "text_encoder"
            config = text_of(app, "#config")
            assert config.startswith("# as the server would run it, worked out from the "
                                     "repository (1 GPU)")
            evidence = app.history.latest.evidence if app.history.latest else None
            assert evidence is not None
            assert config.endswith(effective_config_text(evidence, "text_encoder", gpus=1))
            assert 'backend: "python"' in config
            await pilot.press("escape")
            assert isinstance(app.screen, FindingsScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, FindingsScreen) and app.is_running

    with render.at_root():
        play(scenario())


def test_check_tui_r_reads_the_repository_again() -> None:
    async def scenario() -> None:
        app = demo_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("r")
            await settle(app, pilot)
            assert app.shown == 2
            assert len(column(app, "#findings", "rule")) == 26

    with render.at_root():
        play(scenario())


def test_check_tui_judges_what_check_read_then_r_reads_the_fixed_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the command line: the repository is read from disk once before the UI, the
    UI's first frame is that reading, r reads the fix, and the exit code is the last one's."""
    rules = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "TD201"
    repository = tmp_path / "models"
    shutil.copytree(rules / "fail", repository)
    reads: list[str] = []

    def counted(*args: object, **kwargs: object) -> RepositoryEvidence:
        reads.append("read")
        return collect_repository(*args, **kwargs)  # type: ignore[arg-type]

    def headless(app: WatchApp) -> None:  # stands in for a terminal
        async def scenario() -> None:
            async with app.run_test(size=SIZE) as pilot:
                await settle(app, pilot)
                assert reads == ["read"]
                assert "TD201" in column(app, "#findings", "rule")
                shutil.rmtree(repository)
                shutil.copytree(rules / "pass", repository)
                await pilot.press("r")
                await settle(app, pilot)
                assert reads == ["read", "read"]
                assert "TD201" not in column(app, "#findings", "rule")

        play(scenario())

    monkeypatch.setattr(collector, "collect_repository", counted)
    monkeypatch.setattr(launch, "_require_terminal", lambda command: None)
    monkeypatch.setattr(WatchApp, "run", headless)
    assert cli.main(["check", str(repository), "--tui"]) == 0
    assert len(reads) == 2
