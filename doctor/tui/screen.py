"""What every watch screen shares: the status bar, Esc to go back, a redraw on each frame,
and a table of its own findings that opens the findings screen."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static
from textual.widgets.data_table import RowKey
from triton_doctor.findings import Finding
from triton_doctor.printable import printable
from triton_doctor.tui.state import History, watch_key
from triton_doctor.tui.tables import Row, original_key
from triton_doctor.tui.text import clipped, clock, duration, severity

if TYPE_CHECKING:
    from triton_doctor.tui.app import WatchApp


class FrameScreen(Screen[None]):
    """A screen drawn from the watch's History; ``show`` is called on every new frame."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.go_back", "back")]

    @property
    def watch_app(self) -> WatchApp:
        return cast("WatchApp", self.app)

    def status_bar(self) -> ComposeResult:
        yield Static(id="status", classes="status")

    def show(self, history: History) -> None:
        """Redraw from ``history``; subclasses draw their part after the status bar."""
        self.query_one("#status", Static).update(status_line(self.watch_app, history))

    def on_screen_resume(self) -> None:
        self.show(self.watch_app.history)

    def open_finding(self, row_key: RowKey) -> None:
        """Enter on a finding's row: the findings screen, with that finding selected."""
        from triton_doctor.tui.findings import FindingsScreen

        self.app.push_screen(FindingsScreen(select=original_key(row_key.value or "")))


#: The columns of a screen's own findings (a model's, a GPU's).
FINDING_COLUMNS = ("severity", "rule", "message")


def finding_rows(findings: Iterable[Finding]) -> list[Row]:
    """Rows of a FINDING_COLUMNS table, keyed as the findings screen keys them."""
    return [(watch_key(f), (severity(f.severity), f.rule, clipped(f.message)))
            for f in findings]


def status_line(app: WatchApp, history: History) -> Text:
    """Where the data comes from, the server's health, and whether polling runs."""
    line = Text.assemble((" triton-doctor ", "bold reverse"), " ",
                         (printable(app.heading()), "bold"))
    frame = history.latest
    if frame is None:
        if app.last_error:
            return line.append(f"  last read failed: {printable(app.last_error)}",
                               style="bold red")
        return line.append("  reading…", style="dim")
    server = frame.evidence.server
    if server is not None and server.from_metrics:
        line.append("  state not read: from Prometheus's series", style="dim")
    elif server is not None:
        line.append(f"  triton {printable(server.version) or '?'}  ")
        line.append_text(_flag("live", server.live))
        line.append("  ")
        line.append_text(_flag("ready", server.ready))
        line.append(f"  up {duration(frame.uptime_s())}")
    elif "server" in frame.evidence.unavailable:
        line.append("  server unreachable", style="bold red")
    line.append(f"  read {clock(frame.at)}", style="dim")
    if app.paused:
        line.append("  PAUSED", style="bold black on yellow")
    if app.last_error:
        line.append("  last read failed", style="bold red")
    return line


def _flag(name: str, good: bool) -> Text:
    return Text(f"{name} {'✓' if good else '✗'}", style="green" if good else "bold red")
