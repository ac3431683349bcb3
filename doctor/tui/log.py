"""The server's recent error lines, each next to the rule that explains it where one does."""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static
from triton_doctor.evidence import LogEvidence
from triton_doctor.registry import find_rule
from triton_doctor.rules.serving import explain_log_line
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.state import History
from triton_doctor.tui.tables import fill, new_table, selected_key

#: glog's error and warning prefixes (``E1129 21:52:48.560040 6646 file.cc:714] ...``).
GLOG_PROBLEM = re.compile(r"^[EWF]\d{4} ")
PROBLEM_WORDS = ("error", "failed", "unable", "exception", "out of memory")
#: Error lines shown, newest last.
MAX_LINES = 200


def error_lines(log: LogEvidence | None) -> list[tuple[int, str, str | None]]:
    """(line number, line, rule) for the log's error and warning lines, the last MAX_LINES."""
    if log is None:
        return []
    found = []
    for number, line in enumerate(log.lines, 1):
        lowered = line.lower()
        if GLOG_PROBLEM.match(line) or any(word in lowered for word in PROBLEM_WORDS):
            found.append((number, line, explain_log_line(line)))
    return found[-MAX_LINES:]


class LogScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    LogScreen #log-lines { height: 1fr; }
    LogScreen #log-detail-pane { height: 12; border-top: solid $primary; }
    """

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Static(id="log-source")
        yield new_table("log-lines", ("line", "rule", "message"))
        with VerticalScroll(id="log-detail-pane"):
            yield Static(id="log-detail")
        yield Footer()

    def show(self, history: History) -> None:
        super().show(history)
        frame = history.latest
        log = frame.evidence.log if frame else None
        source = self.query_one("#log-source", Static)
        if frame is not None and log is None:
            why = frame.evidence.unavailable.get("log", "not collected")
            source.update(Text(f"no log: {why}", style="dim"))
        elif log is not None:
            lines = error_lines(log)
            source.update(f"{log.source}: {len(lines)} error or warning lines in the last "
                          f"{len(log.lines)} lines")
        rows = [(str(n), (n, rule or "", Text(line, no_wrap=True, overflow="ellipsis")))
                for n, line, rule in error_lines(log)]
        fill(self.query_one("#log-lines", DataTable), rows)
        self._describe(log)

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        frame = self.watch.history.latest
        self._describe(frame.evidence.log if frame else None)

    def _describe(self, log: LogEvidence | None) -> None:
        key = selected_key(self.query_one("#log-lines", DataTable))
        chosen = next((entry for entry in error_lines(log) if str(entry[0]) == key), None)
        detail = self.query_one("#log-detail", Static)
        if chosen is None:
            detail.update(Text("No error lines." if log else "", style="dim"))
            return
        _, line, rule_id = chosen
        text = Text(line + "\n")
        rule = find_rule(rule_id) if rule_id else None
        if rule is None:
            text.append("\nNo rule explains this line.", style="dim")
        else:
            text.append(f"\n{rule.id} {rule.name} — {rule.title}\n", style="bold")
            text.append(rule.doc, style="dim")
        detail.update(text)
