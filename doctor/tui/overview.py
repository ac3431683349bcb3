"""The first screen: is the server healthy, which GPU is filling up, which model suffers, and
what to do first (the firing findings, errors first, each with its fix)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Label, Static
from triton_doctor.printable import printable
from triton_doctor.tui.gpu import GpuScreen
from triton_doctor.tui.model import ModelScreen
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.state import Frame, History, watch_key
from triton_doctor.tui.tables import Row, fill, new_table, original_key
from triton_doctor.tui.text import (
    GIB,
    clipped,
    gauge,
    number,
    one_line,
    severity,
    sparkline,
    state_style,
)

MODEL_COLUMNS = ("model", "version", "state", "req/s", "avg batch", "queue ms", "p99 ms",
                 "failures", "findings")
GPU_COLUMNS = ("GPU", "name", "memory", "used", "util", "memory over the last polls")
FIRING_COLUMNS = ("severity", "rule", "model", "what is wrong · what to do")
GAUGE_WIDTH = 24
SPARK_WIDTH = 40


class OverviewScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    OverviewScreen #gpus { height: auto; max-height: 9; }
    OverviewScreen #models { height: auto; max-height: 14; }
    OverviewScreen #firing { height: 1fr; }
    OverviewScreen .heading { text-style: bold; margin-top: 1; }
    OverviewScreen #sources { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        yield Static(id="sources")
        yield new_table("gpus", GPU_COLUMNS)
        yield Label("Models", id="models-heading", classes="heading")
        yield new_table("models", MODEL_COLUMNS)
        yield Label("Firing  (Enter: all findings, / filter)", classes="heading")
        yield new_table("firing", FIRING_COLUMNS)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#models", DataTable).focus()

    def show(self, history: History) -> None:
        super().show(history)
        frame = history.latest
        self.query_one("#sources", Static).update(sources_line(frame))
        gpus = self.query_one("#gpus", DataTable)
        fill(gpus, gpu_rows(frame, history))
        gpus.display = gpus.row_count > 0
        self.query_one("#models-heading", Label).update(models_heading(frame))
        fill(self.query_one("#models", DataTable), model_rows(frame))
        fill(self.query_one("#firing", DataTable), firing_rows(frame), height=2)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = original_key(event.row_key.value or "")
        if event.data_table.id == "models":
            self.app.push_screen(ModelScreen(key))
        elif event.data_table.id == "gpus":
            self.app.push_screen(GpuScreen(key))
        else:
            from triton_doctor.tui.findings import FindingsScreen

            self.app.push_screen(FindingsScreen(select=key))


def sources_line(frame: Frame | None) -> Text:
    """Each part ✓ or ✗; the first one missing says why (the findings needing it are skipped)."""
    if frame is None:
        return Text("")
    sources = frame.sources()
    line = Text("sources ")
    for part, why in sources.items():
        line.append(f" {part} {'✓' if not why else '✗'}", style="green" if not why else "red")
    missing = [f"{part}: {printable(why)}" for part, why in sources.items() if why]
    if missing:
        line.append(f"   {missing[0]}", style="dim")
    return line


def gpu_rows(frame: Frame | None, history: History) -> list[Row]:
    """Per GPU: a memory gauge, used/total, utilisation and the memory sparkline."""
    if frame is None or frame.evidence.gpu is None:
        return []
    rows: list[Row] = []
    for device in frame.evidence.gpu.devices:
        total, share = device.memory_total_bytes, device.memory_share
        util = device.utilization_percent
        memory: Text | str
        if device.memory_unified:  # no device total: a gauge would show a false 0 %
            memory, size = "unified memory", "-"
        else:
            memory = gauge(share, GAUGE_WIDTH, frame.gpu_memory_limit()).append(f" {share:4.0%}")
            size = f"{device.memory_used_bytes / GIB:.1f}/{total / GIB:.1f} GiB"
        rows.append((device.key, (
            device.index, device.name, memory, size,
            "-" if util is None else f"{util}%",
            Text(sparkline(history.gpu_memory.get(device.key, []), SPARK_WIDTH, top=1.0),
                 style="magenta"),
        )))
    return rows


def models_heading(frame: Frame | None) -> str:
    """Says what the rates cover: nothing until two readings a window apart exist."""
    window = frame.window_s() if frame else None
    rates = (f"rates over the last {window:.1f} s" if window
             else "rates once a second reading is in")
    return f"Models  ({rates}; Enter: details)"


def model_rows(frame: Frame | None) -> list[Row]:
    if frame is None:
        return []
    rows: list[Row] = []
    for row in frame.models:
        state = Text(printable(row.state), style=state_style(row.state))
        rows.append((row.name, (
            row.name, row.version or "-", state, number(row.requests_per_s),
            number(row.average_batch, 2), number(row.queue_ms), number(row.p99_ms),
            "-" if row.failures is None else str(row.failures), severity(row.worst),
        )))
    return rows


def firing_rows(frame: Frame | None) -> list[Row]:
    if frame is None:
        return []
    rows: list[Row] = []
    for finding in frame.firing:
        what = clipped(finding.message)
        what.append("\n→ " + one_line(finding.fix or "Enter: the finding in full"),
                    style="italic")
        rows.append((watch_key(finding), (
            severity(finding.severity), finding.rule, finding.model or "(server)", what)))
    return rows
