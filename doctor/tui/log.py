"""The server's log: the log rules' findings (the diagnosis, each problem once, with its lines),
then the other error lines of its end, each next to the rule that explains it where one does."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static
from triton_doctor.catalogue import find_rule
from triton_doctor.evidence import LogEvidence
from triton_doctor.findings import Finding
from triton_doctor.printable import printable
from triton_doctor.records import record
from triton_doctor.server_words import explain_log_line, in_log
from triton_doctor.triton.server_log import read_line
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


@record(frozen=True)
class ErrorLine:
    """An error or warning the log repeats ``count`` times; ``number`` is its last line (in
    the whole log where its length is known, else in its last lines)."""

    number: int
    line: str
    rule: str | None
    count: int


@record(frozen=True)
class Entry:
    """A row of the log screen: a problem the log rules found, or an error line of the end."""

    key: str
    line: int
    count: int
    rule: str
    model: str
    text: str
    #: Shown under the row's text: where it repeats, what explains it.
    notes: tuple[str, ...] = ()


def error_lines(log: LogEvidence | None) -> list[ErrorLine]:
    """The error and warning lines of the log's end that no log rule claims (those are in
    its diagnosis), each distinct message once with its count: a model failing every request
    writes the same line thousands of times."""
    if log is None:
        return []
    found: dict[str, ErrorLine] = {}
    first = max(log.total_lines - len(log.lines), 0)
    for number, line in enumerate(log.lines, first + 1):
        lowered = line.lower()
        if not (GLOG_PROBLEM.match(line) or any(word in lowered for word in PROBLEM_WORDS)):
            continue
        if log.occurrences and in_log(read_line(line).message) is not None:
            continue
        key = GLOG_STAMP.sub("", line)
        earlier = found.pop(key, None)
        found[key] = ErrorLine(number, line, explain_log_line(line),
                               earlier.count + 1 if earlier else 1)
    return list(found.values())[-MAX_LINES:]


def entries(log: LogEvidence | None, findings: Sequence[Finding]) -> list[Entry]:
    """The log rules' findings (the diagnosis: each problem once), in the log's order, then
    the other error lines of its end."""
    if log is None:
        return []
    rows = []
    diagnosis = [f for f in findings if (found := find_rule(f.rule)) and found.scope == "log"]
    for index, finding in enumerate(sorted(diagnosis, key=lambda f: f.location.line or 0)):
        notes = [finding.message]
        if finding.fix:
            notes.append(f"fix: {finding.fix}")
        rows.append(Entry(f"f{index}", finding.location.line or 0,
                          int(finding.evidence.get("count", 1)), finding.rule,
                          finding.model or "", finding.triton_message or finding.message,
                          tuple(notes)))
    for line in error_lines(log):
        repeated = [f"(written {line.count} times; this is the last)"] if line.count > 1 else []
        rows.append(Entry(f"l{line.number}", line.number, line.count, line.rule or "", "",
                          line.line, tuple(repeated)))
    return rows


class LogScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    LogScreen #log-lines { height: 1fr; }
    LogScreen #log-detail-pane { height: 12; max-height: 50%; border-top: solid $primary; }
    """

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Static(id="log-source")
        yield new_table("log-lines", ("line", "count", "rule", "model", "message"))
        with VerticalScroll(id="log-detail-pane"):
            yield Static(id="log-detail")
        yield Footer()

    def show(self, history: History) -> None:
        super().show(history)
        frame = history.latest
        log = frame.evidence.log if frame else None
        rows = entries(log, frame.result.findings if frame else ())
        source = self.query_one("#log-source", Static)
        if frame is not None and log is None:
            why = frame.evidence.unavailable.get("log", "not collected")
            source.update(Text(f"no log: {printable(why)}", style="dim"))
        elif log is not None:
            problems = sum(row.key.startswith("f") for row in rows)
            others = len(rows) - problems
            lines = max(log.total_lines, len(log.lines))
            read = f"{lines} lines read" if log.whole else f"the last {lines} lines"
            source.update(Text(f"{printable(log.source)}: {problems} problem(s) found, "
                               f"{others} other error or warning line(s) at its end; {read}"))
        fill(self.query_one("#log-lines", DataTable),
             [(e.key, (e.line, f"{e.count}x", e.rule, e.model,
                       Text(printable(e.text.split(chr(10), 1)[0]), no_wrap=True,
                            overflow="ellipsis"))) for e in rows])
        self._describe(rows, log is not None)

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        frame = self.watch_app.history.latest
        log = frame.evidence.log if frame else None
        self._describe(entries(log, frame.result.findings if frame else ()), log is not None)

    def _describe(self, rows: list[Entry], have_log: bool) -> None:
        key = selected_key(self.query_one("#log-lines", DataTable))
        chosen = next((entry for entry in rows if entry.key == key), None)
        detail = self.query_one("#log-detail", Static)
        if chosen is None:
            detail.update(Text("No problem and no error lines." if have_log else "",
                               style="dim"))
            return
        # Line by line: a traceback reads as one, and each line is escaped on its own.
        text = Text("\n".join(printable(line) for line in chosen.text.split("\n")) + "\n")
        for note in chosen.notes:
            text.append(printable(note) + "\n", style="dim")
        rule = find_rule(chosen.rule) if chosen.rule else None
        if rule is None:
            text.append("\nNo rule explains this line.", style="dim")
        else:
            text.append(f"\n{rule.id} {rule.name} — {rule.title}\n", style="bold")
            text.append(rule.doc, style="dim")
        detail.update(text)
