"""Every finding seen since the watch began: sortable, filterable, with the whole story of the
one under the cursor (message, numbers, the server's words, the fix, the rule's docs)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Input, Static
from triton_doctor.catalogue import find_rule
from triton_doctor.findings import Severity
from triton_doctor.printable import printable
from triton_doctor.registry import key_matches
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.state import History, Seen
from triton_doctor.tui.tables import fill, new_table, original_key, selected_key
from triton_doctor.tui.text import clipped, clock, severity

COLUMNS = ("severity", "rule", "model", "message", "state")
FIELDS = {"severity", "sev", "model", "rule"}


def matches(seen: Seen, query: str) -> bool:
    """``query``: words that must all match; ``severity:``/``sev:`` (at least that severe),
    ``model:`` and ``rule:`` (prefixes, e.g. rule:TD6) narrow to a field, bare words search
    the rule, model, message and fix."""
    finding = seen.finding
    text = " ".join([finding.rule, finding.name, finding.model or "(server)", finding.message,
                     finding.fix or "", finding.triton_message or ""]).lower()
    for word in query.lower().split():
        field, _, value = word.partition(":")
        if field in FIELDS and value:
            if field in ("severity", "sev"):
                try:
                    if finding.severity < Severity.parse(value):
                        return False
                except ValueError:
                    return False
            elif not _field_matches(field, value, finding.model or "(server)", finding.rule,
                                    finding.name):
                return False
        elif word not in text:
            return False
    return True


def _field_matches(field: str, value: str, model: str, rule_id: str, rule_name: str) -> bool:
    if field == "model":
        return model.lower().startswith(value)
    # As rules are named everywhere (an id, an id prefix, a name), and a name's prefix too.
    return key_matches(rule_id, rule_name, value) or rule_name.startswith(value)


class FindingsScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    FindingsScreen #filter { height: 3; }
    FindingsScreen #findings { height: 1fr; }
    FindingsScreen #detail-pane { height: 2fr; border-top: solid $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "back"),
        Binding("a", "toggle_firing", "firing only/all"),
    ]

    def __init__(self, select: str | None = None, filter_first: bool = False) -> None:
        super().__init__()
        self.select = select
        #: Opened with ``/``: the cursor starts in the filter box rather than the table.
        self.filter_first = filter_first
        self.firing_only = True
        self.sort_column: str | None = None
        self.sort_reverse = False

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Input(id="filter", placeholder="/ filter: words, severity:warning, model:NAME, "
                    "rule:TD6 — Enter or Esc back to the table")
        yield Static(id="counts")
        yield new_table("findings", COLUMNS)
        with VerticalScroll(id="detail-pane"):
            yield Static(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter" if self.filter_first else "#findings").focus()

    def focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def shown(self, history: History) -> list[Seen]:
        query = self.query_one("#filter", Input).value
        kept = [s for s in history.findings(self.firing_only) if matches(s, query)]
        if self.sort_column is not None:
            kept.sort(key=lambda s: _sort_key(s, self.sort_column or ""),
                      reverse=self.sort_reverse)
        return kept

    def show(self, history: History) -> None:
        super().show(history)
        kept = self.shown(history)
        found = self.query_one("#findings", DataTable)
        keys = [s.key for s in kept]
        fill(found, [(s.key, _cells(s)) for s in kept])
        if self.select in keys:
            found.move_cursor(row=keys.index(self.select))
            self.select = None
        firing = sum(s.firing for s in history.seen.values())
        scope = "firing only (a: show all)" if self.firing_only else "all seen (a: firing only)"
        self.query_one("#counts", Static).update(
            f"{len(kept)} shown · {firing} firing · {len(history.seen)} seen · {scope}")
        self._describe()

    def _describe(self) -> None:
        """The detail pane: the finding under the cursor (the table shows only kept ones)."""
        key = selected_key(self.query_one("#findings", DataTable))
        chosen = self.watch_app.history.seen.get(key) if key is not None else None
        self.query_one("#detail", Static).update(
            detail(chosen, self.watch_app.browse_only) if chosen else Text(
                "No finding matches." if self.watch_app.history.latest
                else "Nothing read yet." if self.watch_app.last_error else "Reading…",
                style="dim"))

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._describe()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        seen = self.watch_app.history.seen.get(original_key(event.row_key.value or ""))
        if seen is not None:
            self.watch_app.open_finding(seen.finding)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        self.sort_reverse = self.sort_column == column and not self.sort_reverse
        self.sort_column = column
        self.show(self.watch_app.history)

    def on_input_changed(self, _: Input.Changed) -> None:
        self.show(self.watch_app.history)

    def on_input_submitted(self, _: Input.Submitted) -> None:
        self.query_one("#findings", DataTable).focus()

    def action_toggle_firing(self) -> None:
        self.firing_only = not self.firing_only
        self.show(self.watch_app.history)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave":
            return self.query_one("#filter", Input).has_focus or len(self.app.screen_stack) > 1
        return True

    def action_leave(self) -> None:
        """Esc leaves the filter box first, then the screen."""
        if self.query_one("#filter", Input).has_focus:
            self.query_one("#findings", DataTable).focus()
        else:
            self.watch_app.action_go_back()


def _cells(seen: Seen) -> tuple[object, ...]:
    finding = seen.finding
    state = Text("firing", style="bold") if seen.firing else Text(
        f"cleared {clock(seen.last_at)}", style="dim")
    return (severity(finding.severity), finding.rule, finding.model or "(server)",
            clipped(finding.message), state)


def _sort_key(seen: Seen, column: str) -> tuple[object, ...]:
    finding = seen.finding
    keys: dict[str, object] = {
        "severity": -finding.severity, "rule": finding.rule, "model": finding.model or "",
        "message": finding.message, "state": (not seen.firing, -seen.last_at),
    }
    return (keys.get(column, ""), finding.rule, finding.model or "")


def detail(seen: Seen, browse_only: bool) -> Text:
    """The finding in full, as an engineer on call needs it; what it quotes from outside is
    escaped (``printable``), the line breaks of a message, a reason or a fix kept."""
    finding = seen.finding
    text = Text.assemble(severity(finding.severity), " ", (f"{finding.rule} {finding.name}",
                                                            "bold"), f" — {finding.title}\n")
    where = [f"model {printable(finding.model)}" if finding.model else "server"]
    if finding.instance:
        where.insert(0, f"replica {printable(finding.instance)}")
    if finding.version:
        where.append(f"version {printable(finding.version)}")
    if finding.location.path:
        line = f":{finding.location.line}" if finding.location.line else ""
        where.append(f"{printable(finding.location.path)}{line}")
    text.append("  ".join(where) + "\n", style="dim")
    if not browse_only:
        state = "firing" if seen.firing else "cleared"
        text.append(f"first seen {clock(seen.first_at)} · last seen {clock(seen.last_at)} · "
                    f"{state}\n", style="dim")
    text.append(f"\n{printable(finding.message, keep_newlines=True)}\n")
    if finding.triton_message:
        text.append("\nThe server says\n", style="bold")
        text.append(f"  {printable(finding.triton_message, keep_newlines=True)}\n")
    if finding.evidence:
        text.append("\nEvidence\n", style="bold")
        for key, value in finding.evidence.items():
            text.append(f"  {printable(key)}: {printable(str(value))}\n")
    if finding.fix:
        text.append("\nFix\n", style="bold green")
        text.append(f"  {printable(finding.fix, keep_newlines=True)}\n")
    rule = find_rule(finding.rule)
    if rule is not None:
        text.append(f"\nAbout {rule.id} (triton-doctor explain {rule.id})\n", style="bold")
        text.append(rule.doc + "\n", style="dim")
    return text
