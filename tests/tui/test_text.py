"""Numbers, bars and sparklines as text (pure functions)."""

from __future__ import annotations

import pytest
from triton_doctor.findings import Severity
from triton_doctor.tui.text import (
    BLOCKS,
    clock,
    duration,
    gauge,
    number,
    one_line,
    severity,
    sparkline,
)


def test_sparkline_empty_is_empty() -> None:
    assert sparkline([], 10) == ""


def test_sparkline_scales_to_its_maximum() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7], 8) == BLOCKS
    assert sparkline([5, 10], 8) == "▅█"


def test_sparkline_shows_the_last_width_values() -> None:
    assert sparkline([7, 7, 7, 0, 7], 2) == "▁█"
    assert len(sparkline(range(100), 40)) == 40


def test_sparkline_with_a_fixed_top() -> None:
    assert sparkline([0.5, 1.0], 8, top=1.0) == "▅█"
    assert sparkline([0.5], 8, top=2.0) == "▃"
    # Above the top is drawn full, below zero empty: never an index error.
    assert sparkline([3.0, -1.0], 8, top=1.0) == "█▁"


def test_sparkline_of_zeros_or_a_zero_top_is_flat() -> None:
    assert sparkline([0, 0, 0], 8) == "▁▁▁"
    assert sparkline([1, 2], 8, top=0) == "▁▁"
    assert sparkline([-1, -2], 8) == "▁▁"


def test_sparkline_accepts_a_deque() -> None:
    from collections import deque

    assert sparkline(deque([1.0, 2.0], maxlen=5), 8) == "▅█"


@pytest.mark.parametrize(("share", "filled", "style"), [
    (0.0, 0, "green"), (0.5, 5, "green"), (0.79, 8, "green"), (0.8, 8, "yellow"),
    (0.89, 9, "yellow"), (0.9, 9, "red"), (1.0, 10, "red"),
    (1.7, 10, "red"), (-0.3, 0, "green"),
])
def test_gauge(share: float, filled: int, style: str) -> None:
    bar = gauge(share, 10, red_from=0.9)
    assert bar.plain == "█" * filled + "░" * (10 - filled)
    assert len(bar.plain) == 10
    if filled:
        assert bar.spans[0].style == style


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "unknown"), (0, "0s"), (0.9, "0s"), (59.99, "59s"), (60, "1m 00s"),
    (61, "1m 01s"), (3599, "59m 59s"), (3600, "1h 00m"), (3 * 3600 + 4 * 60 + 5, "3h 04m"),
    (86399, "23h 59m"), (86400, "1d 00h"), (90061, "1d 01h"), (400 * 86400, "400d 00h"),
])
def test_duration(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(("at", "text"), [
    (0, "00:00:00Z"), (1795989168.4269283, "21:52:48Z"), (86399.999, "23:59:59Z"),
])
def test_clock_is_utc(at: float, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert clock(at) == text
    finally:
        monkeypatch.undo()
        time.tzset()


def test_number() -> None:
    assert number(None) == "-"
    assert number(0) == "0.0"
    assert number(1234.56) == "1,234.6"
    assert number(1234.5678, 2) == "1,234.57"


def test_one_line_folds_tracebacks() -> None:
    assert one_line("Traceback:\n  File 'x'\n\tboom  ") == "Traceback: File 'x' boom"
    assert one_line("") == ""


def test_severity_labels() -> None:
    assert severity(None).plain == "ok"
    assert severity(Severity.ERROR).plain == "✗ error"
    assert severity(Severity.WARNING).plain == "! warning"
    assert severity(Severity.INFO).plain == "i info"
    assert str(severity(Severity.ERROR).style) == "bold red"


def test_gauge_turns_red_at_the_threshold_it_is_given() -> None:
    assert gauge(0.85, 10, red_from=0.8).spans[0].style == "red"
    assert gauge(0.75, 10, red_from=0.8).spans[0].style == "yellow"
    assert gauge(0.65, 10, red_from=0.8).spans[0].style == "green"
