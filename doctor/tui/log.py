"""The server's recent error lines, each next to the rule that explains it where one does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static
from triton_doctor.catalogue import find_rule
from triton_doctor.evidence import LogEvidence
from triton_doctor.printable import printable
from triton_doctor.server_words import explain_log_line
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.state import History
from triton_doctor.tui.tables import fill, new_table, selected_key

#: glog's error and warning prefixes (``E1129 21:52:48.560040 6646 file.cc:714] ...``).
GLOG_PROBLEM = re.compile(r"^[EWF]\d{4} ")
#: The part of a glog line that changes between two reports of the same problem.
GLOG_STAMP = re.compile(r"^[EWIF]\d{4} [\d:.]+ +\d+ ")
PROBLEM_WORDS = ("error", "failed", "unable", "exception", "out of memory")
#: Distinct error lines shown, the most recent last.
MAX_LINES = 200


@dataclass(frozen=True)
class ErrorLine:
    """An error or warning the log repeats ``count`` times; ``number`` is its last line."""

    number: int
    line: str
    rule: str | None
    count: int


def error_lines(log: LogEvidence | None) -> list[ErrorLine]:
    """The log's error and warning lines, each distinct message once with its count: a model
    failing every request writes the same line thousands of times."""
    if log is None:
        return []
    found: dict[str, ErrorLine] = {}
    for number, line in enumerate(log.lines, 1):
        lowered = line.lower()
        if GLOG_PROBLEM.match(line) or any(word in lowered for word in PROBLEM_WORDS):
            key = GLOG_STAMP.sub("", line)
            earlier = found.pop(key, None)
            found[key] = ErrorLine(number, line, explain_log_line(line),
                                   earlier.count + 1 if earlier else 1)
    return list(found.values())[-MAX_LINES:]


class LogScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    LogScreen #log-lines { height: 1fr; }
    LogScreen #log-detail-pane { height: 12; max-height: 50%; border-top: solid $primary; }
    """

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Static(id="log-source")
        yield new_table("log-lines", ("line", "count", "rule", "message"))
        with VerticalScroll(id="log-detail-pane"):
            yield Static(id="log-detail")
        yield Footer()

    def show(self, history: History) -> None:
        super().show(history)
        frame = history.latest
        log = frame.evidence.log if frame else None
        lines = error_lines(log)
        source = self.query_one("#log-source", Static)
        if frame is not None and log is None:
            why = frame.evidence.unavailable.get("log", "not collected")
            source.update(Text(f"no log: {printable(why)}", style="dim"))
        elif log is not None:
            source.update(Text(f"{printable(log.source)}: {sum(e.count for e in lines)} error or "
                               f"warning lines ({len(lines)} distinct) in the last "
                               f"{len(log.lines)} lines"))
        rows = [(str(e.number), (e.number, f"{e.count}x", e.rule or "",
                                 Text(printable(e.line), no_wrap=True, overflow="ellipsis")))
                for e in lines]
        fill(self.query_one("#log-lines", DataTable), rows)
        self._describe(lines, log is not None)

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        frame = self.watch_app.history.latest
        log = frame.evidence.log if frame else None
        self._describe(error_lines(log), log is not None)

    def _describe(self, lines: list[ErrorLine], have_log: bool) -> None:
        key = selected_key(self.query_one("#log-lines", DataTable))
        chosen = next((entry for entry in lines if str(entry.number) == key), None)
        detail = self.query_one("#log-detail", Static)
        if chosen is None:
            detail.update(Text("No error lines." if have_log else "", style="dim"))
            return
        text = Text(printable(chosen.line) + "\n")
        if chosen.count > 1:
            text.append(f"(written {chosen.count} times; this is the last)\n", style="dim")
        rule = find_rule(chosen.rule) if chosen.rule else None
        if rule is None:
            text.append("\nNo rule explains this line.", style="dim")
        else:
            text.append(f"\n{rule.id} {rule.name} — {rule.title}\n", style="bold")
            text.append(rule.doc, style="dim")
        detail.update(text)
