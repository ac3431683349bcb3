"""One GPU: its memory over time, who holds it, its health counters and its findings."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static
from triton_doctor.evidence import GpuDevice
from triton_doctor.printable import printable
from triton_doctor.tui.screen import FINDING_COLUMNS, FrameScreen, finding_rows
from triton_doctor.tui.state import History
from triton_doctor.tui.tables import fill, new_table
from triton_doctor.tui.text import GIB, gauge, sparkline

MIB = 1 << 20
SPARK_WIDTH = 60


class GpuScreen(FrameScreen):
    DEFAULT_CSS: ClassVar[str] = """
    GpuScreen #gpu-facts { height: auto; margin-bottom: 1; }
    GpuScreen #gpu-processes { height: auto; max-height: 10; margin-bottom: 1; }
    GpuScreen #gpu-findings { height: auto; max-height: 8; }
    """

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def compose(self) -> ComposeResult:
        yield from self.status_bar()
        with VerticalScroll():
            yield Static(id="gpu-facts")
            yield new_table("gpu-processes", ("pid", "GPU memory", "process"))
            yield new_table("gpu-findings", FINDING_COLUMNS)
        yield Footer()

    def show(self, history: History) -> None:
        super().show(history)
        frame = history.latest
        gpu = frame.evidence.gpu if frame else None
        device = next((d for d in gpu.devices if d.key == self.key), None) if gpu else None
        facts = self.query_one("#gpu-facts", Static)
        if frame is None or gpu is None or device is None:
            facts.update(Text(f"GPU {printable(self.key)}: not in the latest reading",
                              style="dim"))
            return
        facts.update(gpu_facts(device, gpu.driver_version, gpu.cuda_driver_version,
                               list(history.gpu_memory.get(self.key, [])),
                               frame.gpu_memory_limit()))
        servers = set(frame.evidence.host.server_pids) if frame.evidence.host else set()
        fill(self.query_one("#gpu-processes", DataTable), [
            (str(p.pid), (p.pid, "unknown" if p.used_bytes is None
                          else f"{p.used_bytes / MIB:,.0f} MiB",
                          "tritonserver" if p.pid in servers else ""))
            for p in device.processes])
        fill(self.query_one("#gpu-findings", DataTable), finding_rows(
            f for f in frame.firing if f.evidence.get("gpu") == device.index))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "gpu-findings":
            self.open_finding(event.row_key)


def gpu_facts(device: GpuDevice, driver: str, cuda: str, trend: list[float],
              red_from: float) -> Text:
    """What NVML (or a snapshot, which is outside text) says of one GPU."""
    total, share = device.memory_total_bytes, device.memory_share
    text = Text(f"GPU {device.index}  {printable(device.name)}", style="bold")
    text.append(f"  sm_{printable(device.compute_capability.replace('.', ''))}  "
                f"{printable(device.uuid)}\n", style="dim")
    text.append(f"driver {printable(driver) or '?'}  CUDA {printable(cuda) or '?'}\n\n",
                style="dim")
    if device.memory_unified:
        text.append("memory  unified memory (shared with the host; NVML gives no device "
                    "total)\n")
    else:
        text.append("memory  ").append_text(gauge(share, 40, red_from))
        text.append(f" {share:.0%}  {device.memory_used_bytes / GIB:.1f} of "
                    f"{total / GIB:.1f} GiB")
        if device.memory_reserved_bytes is not None:
            text.append(f", {device.memory_reserved_bytes / MIB:,.0f} MiB reserved by the "
                        "driver")
        text.append("\n")
    if device.memory_used_earlier_bytes is not None:
        grown = (device.memory_used_bytes - device.memory_used_earlier_bytes) / MIB
        text.append(f"        {grown:+,.0f} MiB over the window\n")
    text.append("        " + sparkline(trend, SPARK_WIDTH, top=1.0) + "\n", style="magenta")
    util = "?" if device.utilization_percent is None else f"{device.utilization_percent}%"
    text.append(f"\nutilisation {util}   MIG {_state(device.mig_enabled, 'on', 'off')}   "
                f"uncorrected ECC errors {_known(device.ecc_uncorrected_errors)}\n")
    return text


def _state(value: bool | None, yes: str, no: str) -> str:
    return "not supported" if value is None else yes if value else no


def _known(value: int | None) -> str:
    return "not supported" if value is None else str(value)
