"""Text from a server, a snapshot or a repository in the terminal UI: shown as written, never
read as Rich markup ("[/]" used to end the app, "[bold red]x" to hide the name) nor passed to
the terminal as control sequences; and a UI that fails anyway exits non-zero, saying so."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets._toast import Toast
from triton_doctor import cli
from triton_doctor.evidence import Evidence, from_jsonable, to_jsonable
from triton_doctor.tui import launch
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.findings import FindingsScreen
from triton_doctor.tui.gpu import GpuScreen
from triton_doctor.tui.log import LogScreen
from triton_doctor.tui.model import ModelScreen
from triton_doctor.tui.overview import OverviewScreen

from tests.tui import render
from tests.tui.support import SIZE, NotedApp, Reads, incident, play, settle, source, text_of

#: A hostile name, and how the screen must show it.
SHOWN = {
    "[/]": "[/]",
    "[bold red]x": "[bold red]x",
    "a\x1b]0;t\x07b": "a\\x1b]0;t\\x07b",
    "c\x1b[2J\u202ed": "c\\x1b[2J\\u202ed",
}
#: What must not reach the terminal from outside (a Static's own line breaks may).
CONTROL = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x202E) if c != 0x0A]
PASS = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "TD201" / "pass"


def hostile(name: str) -> Evidence:
    """The recorded incident with its failing model renamed ``name`` everywhere, and ``name``
    in that model's reason, the log's source and last line, and the GPU's name."""
    renamed = json.dumps(to_jsonable(incident())).replace("detector", json.dumps(name)[1:-1])
    evidence: Evidence = from_jsonable(Evidence, json.loads(renamed))
    assert evidence.server and evidence.log and evidence.gpu
    for model in evidence.server.models:
        if model.name == name:
            model.reason = f"{name} failed to load"
    evidence.log.source = name
    evidence.log.lines.append(f"E1129 21:52:49.000000 6646 model.cc:1] {name} error")
    evidence.gpu.devices[0].name = name
    return evidence


def screen(app: WatchApp) -> str:
    return "\n".join(render.screen_text(app.export_screenshot()))


def clean(text: str) -> bool:
    return not any(c in text for c in CONTROL)


@pytest.mark.parametrize("name", list(SHOWN))
def test_hostile_names_are_shown_as_written_on_every_screen(name: str) -> None:
    shown = SHOWN[name]
    cell = re.escape(shown)
    evidence = hostile(name)

    async def look(app: WatchApp, pilot: Pilot[None], selector: str) -> str:
        await settle(app, pilot)
        assert app.is_running
        drawn = text_of(app, selector)
        assert shown in drawn and clean(drawn), drawn
        return drawn

    async def scenario() -> None:
        app = NotedApp(source(Reads(evidence), title=f"snapshot {name}"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert isinstance(app.screen, OverviewScreen) and app.is_running
            drawn = screen(app)  # a GPU's row, a model's, a finding's
            for row in (rf"^ *0 +{cell} ", rf"^ *{cell} +1 +UNAVAILABLE ",
                        rf"TD601 +{cell} +{cell} version 1 is UNAVAILABLE: {cell} failed"):
                assert re.search(row, drawn, re.MULTILINE), (row, drawn)
            await look(app, pilot, "#status")
            await pilot.press("f")
            assert isinstance(app.screen, FindingsScreen)
            await look(app, pilot, "#status")
            assert re.search(rf"TD601 +{cell} ", screen(app)), screen(app)
            await pilot.press("escape", "l")
            assert isinstance(app.screen, LogScreen)
            await look(app, pilot, "#log-source")
            assert shown in screen(app)
            app.push_screen(ModelScreen(name))
            await look(app, pilot, "#numbers")
            app.push_screen(GpuScreen(evidence.gpu.devices[0].key))  # type: ignore[union-attr]
            await look(app, pilot, "#gpu-facts")

    play(scenario())


def test_every_finding_in_the_detail_pane_is_free_of_control_characters() -> None:
    name = "a\x1b]0;t\x07b"

    async def scenario() -> None:
        app = NotedApp(source(Reads(hostile(name))), browse_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            rows = app.screen.query_one("#findings").row_count  # type: ignore[attr-defined]
            details = []
            for _ in range(rows):
                details.append(text_of(app, "#detail"))
                await pilot.press("down")
            assert any(SHOWN[name] in d for d in details)
            assert all(clean(d) for d in details), details
            assert app.is_running

    play(scenario())


@pytest.mark.parametrize("name", list(SHOWN))
def test_a_failed_read_says_why_literally(name: str) -> None:
    def fails() -> Evidence:
        raise RuntimeError(f"{name} refused")

    async def scenario() -> None:
        app = NotedApp(source(Reads(fails)))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.is_running
            assert app.notes and app.notes[-1][0] == "error"
            assert f"{SHOWN[name]} refused" in text_of(app, "#status")
            # Pilot draws no notifications: draw each as its Toast would.
            toasts = [Toast(note).render().plain for note in app._notifications]
            assert any(f"{SHOWN[name]} refused" in toast for toast in toasts), toasts

    play(scenario())


def _crash(self: object, history: object) -> None:
    raise RuntimeError("a defect in a screen")


def _headless(app: WatchApp) -> None:
    """Stands in for a terminal; the app ends on the defect, as it would in one."""
    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)

    with contextlib.suppress(RuntimeError):
        play(scenario())
    assert app.return_code == 1


@pytest.mark.parametrize("command", ["check", "watch"])
def test_a_ui_that_fails_exits_2_and_says_so(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    if command == "check":
        shutil.copytree(PASS, tmp_path / "models")
        argv = ["check", str(tmp_path / "models"), "--tui"]
    else:
        shutil.copy(render.INCIDENT, tmp_path / "incident.json")
        argv = ["watch", "--snapshot", str(tmp_path / "incident.json")]
    monkeypatch.setattr(FindingsScreen if command == "check" else OverviewScreen, "show",
                        _crash)
    monkeypatch.setattr(launch, "_require_terminal", lambda command: None)
    monkeypatch.setattr(WatchApp, "run", _headless)
    assert cli.main(argv) == 2
    assert "terminal UI stopped" in capsys.readouterr().err
