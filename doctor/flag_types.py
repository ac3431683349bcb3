"""Argument types for numeric flags: finite and within bounds, or argparse's usage error (exit 2).

``float()`` accepts "inf", "nan" and "-1"; a negative or not-a-number interval made ``watch``
spin at full CPU, and an infinite timeout or window ended in an OverflowError traceback.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


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
