"""One model: its state, its numbers over time, its findings, and the configuration it runs."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static
from triton_doctor.printable import printable
from triton_doctor.tui.config_text import model_config_text
from triton_doctor.tui.screen import FINDING_COLUMNS, FrameScreen, finding_rows
from triton_doctor.tui.state import History
from triton_doctor.tui.tables import fill, new_table
from triton_doctor.tui.text import number, sparkline, state_style

SPARK_WIDTH = 48


class ModelScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    ModelScreen #numbers { height: auto; margin-bottom: 1; }
    ModelScreen #model-findings { height: auto; max-height: 12; }
    ModelScreen #config-pane { width: 1fr; border-left: solid $primary; padding-left: 1; }
    ModelScreen #left { width: 1fr; }
    """

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model
        self._config_shown = ""

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        with Horizontal():
            with VerticalScroll(id="left"):
                yield Static(id="numbers")
                yield new_table("model-findings", FINDING_COLUMNS)
            with VerticalScroll(id="config-pane"):
                yield Static(id="config")
        yield Footer()

    def show(self, history: History) -> None:
        super().show(history)
        self.query_one("#numbers", Static).update(self._numbers(history))
        frame = history.latest
        findings = [f for f in frame.firing if f.model == self.model] if frame else []
        fill(self.query_one("#model-findings", DataTable), finding_rows(findings))
        config = model_config_text(frame.evidence, self.model) if frame else ""
        if config != self._config_shown:
            self._config_shown = config
            self.query_one("#config", Static).update(Text(printable(config, keep_newlines=True)))

    def _numbers(self, history: History) -> Text:
        frame = history.latest
        row = next((r for r in frame.models if r.name == self.model), None) if frame else None
        text = Text(printable(self.model), style="bold")
        if row is None:
            source = "the server does not list it" if frame and frame.evidence.server else ""
            return text.append(f"  {source}\n" if source else "\n", style="dim")
        text.append(f"  version {printable(row.version) or '-'}  ").append(
            printable(row.state), style=state_style(row.state))
        if row.reason:
            text.append(f"\n{printable(row.reason, keep_newlines=True)}", style="red")
        text.append("\n\nover the last window, and the last polls\n", style="dim")
        series = history.model_series.get(self.model, {})
        for name, now in row.series().items():
            text.append(f"{name:>14} {number(now, 2):>10}  ")
            text.append(sparkline(series.get(name, []), SPARK_WIDTH) + "\n", style="magenta")
        failures = "-" if row.failures is None else str(row.failures)
        text.append(f"{'failures':>14} {failures:>10}\n")
        return text

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.open_finding(event.row_key)
