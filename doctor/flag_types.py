"""Argument types for flags: values within bounds, or argparse's usage error (exit 2).

For numbers, ``float()`` accepts "inf", "nan" and "-1"; a negative or not-a-number interval
made ``watch`` spin at full CPU, and an infinite timeout or window ended in an OverflowError
traceback.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from triton_doctor.lazy_pattern import LazyPattern


def seconds(low: float, high: float, *, low_excluded: bool = False) -> Callable[[str], float]:
    """A number of seconds from ``low`` (or more than it) to ``high``."""
    bounds = f"more than {low:g} and at most {high:g}" if low_excluded else f"{low:g} to {high:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        too_low = value <= low if low_excluded else value < low
        if not math.isfinite(value) or too_low or value > high:
            raise argparse.ArgumentTypeError(f"give a number of seconds, {bounds}; not {text!r}")
        return value

    return parse


def count(low: int, high: int) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"give a whole number, {low} to {high}; not {text!r}")
        return value

    return parse


#: A Prometheus duration: one or more number-unit pairs, largest unit first (1h30m).
_DURATION = LazyPattern(r"(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?")


def duration(text: str) -> str:
    """A duration as Prometheus writes it (``30s``, ``5m``, ``1h30m``), kept as text: it is
    written into rules, where Prometheus reads it; zero is allowed (an alert with no wait)."""
    if not text or not _DURATION.fullmatch(text):
        raise argparse.ArgumentTypeError(f"give a Prometheus duration such as 30s, 5m or 1h30m; "
                                         f"not {text!r}")
    return text


def positive_duration(text: str) -> str:
    """A Prometheus duration more than zero (a range: Prometheus refuses ``[0s]``)."""
    if not re.fullmatch(r"(?:0+(?:ms|[ywdhms]))+", duration(text)):
        return text
    raise argparse.ArgumentTypeError(f"give a Prometheus duration more than 0, such as 5m; not "
                                     f"{text!r}")


#: The longest --window: Prometheus keeps 15 days by default; a week is the most one check reads.
MAX_WINDOW_S = 7 * 86400
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def window(text: str) -> float:
    """Seconds (``30``, ``2.5``) or a Prometheus duration (``15m``, ``1h30m``), 0 to a week;
    the command decides what it allows (one server's window is at most an hour)."""
    try:
        value = float(text)
    except ValueError:
        parts = re.findall(r"(\d+)(ms|[smhdw])", text)
        whole = "".join(number + unit for number, unit in parts) == text
        value = float(sum(int(n) * _UNIT_S[u] for n, u in parts)) if parts and whole else math.nan
    if not math.isfinite(value) or not 0 <= value <= MAX_WINDOW_S:
        raise argparse.ArgumentTypeError(f"give seconds or a duration such as 30s or 15m, up to "
                                         f"7d; not {text!r}")
    return value


def http_header(text: str) -> tuple[str, str]:
    """``Name: value``: a header token, then its value (no line breaks)."""
    name, colon, value = text.partition(":")
    if not colon or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()) or any(
            c in value for c in "\r\n\0"):
        raise argparse.ArgumentTypeError(f"give a header as NAME:VALUE, e.g. 'X-Scope-OrgID: "
                                         f"tenant1'; not {text!r}")
    return name.strip(), value.strip()


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (every address) or ``[::1]:PORT``; the port 0 to 65535 (0: any
    free port, said when it is chosen)."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"give HOST:PORT or :PORT; not {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def alert_groups(text: str) -> tuple[str, ...]:
    """``metrics``, ``exporter`` or both, comma-separated, in that order."""
    asked = {part.strip() for part in text.split(",") if part.strip()}
    known = ("metrics", "exporter")
    if not asked or asked - set(known):
        raise argparse.ArgumentTypeError(f"give metrics, exporter or metrics,exporter; not "
                                         f"{text!r}")
    return tuple(group for group in known if group in asked)
