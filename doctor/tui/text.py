"""Numbers, bars and sparklines as text for the watch screens (pure, so snapshots are stable)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from triton_doctor.findings import Severity
from triton_doctor.printable import printable
from triton_doctor.tui.state import NOT_READ

BLOCKS = "▁▂▃▄▅▆▇█"
SEVERITY_STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
SEVERITY_MARKS = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "i"}
GIB = 1 << 30


def sparkline(values: Sequence[float], width: int, top: float | None = None) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (default: their max)."""
    shown = list(values)[-width:]
    if not shown:
        return ""
    high = top if top is not None else max(shown)
    if high <= 0:
        return BLOCKS[0] * len(shown)
    last = len(BLOCKS) - 1
    return "".join(BLOCKS[min(last, max(0, round(v / high * last)))] for v in shown)


def gauge(share: float, width: int, red_from: float) -> Text:
    """A bar filled to ``share`` (0-1): green, yellow from 0.1 below ``red_from``, red from
    it (the threshold of the rule that fires on it)."""
    share = min(max(share, 0.0), 1.0)
    filled = round(share * width)
    style = "red" if share >= red_from else "yellow" if share >= red_from - 0.1 else "green"
    return Text.assemble(("█" * filled, style), ("░" * (width - filled), "grey50"))


def severity(value: Severity | None) -> Text:
    if value is None:
        return Text("ok", style="green")
    return Text(f"{SEVERITY_MARKS[value]} {value}", style=SEVERITY_STYLES[value])


def state_style(state: str) -> str:
    """A model's state: green when READY, dim when not read ("-": a replica judged from
    Prometheus's series), red otherwise."""
    return "green" if state == "READY" else "dim" if state == NOT_READ else "bold red"


def one_line(text: str) -> str:
    """A message for one table row: tracebacks and wrapped text folded onto a line, what
    would act on the terminal escaped (``printable``)."""
    return printable(" ".join(text.split()))


def clipped(text: str) -> Text:
    """A message cell: on one line, cut with an ellipsis where its column ends."""
    return Text(one_line(text), no_wrap=True, overflow="ellipsis")


def number(value: float | None, digits: int = 1) -> str:
    """A value for a table cell: "-" when the window has no traffic to say it."""
    return "-" if value is None else f"{value:,.{digits}f}"


def duration(seconds: float | None) -> str:
    """3h 04m, 12m 05s, 42s; "unknown" without a start time."""
    if seconds is None:
        return "unknown"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def clock(at: float) -> str:
    """A time of day in UTC, the same on every machine (and in every screenshot)."""
    return time.strftime("%H:%M:%SZ", time.gmtime(at))
