"""The exporter over a long run (``TD_SOAK_SECONDS``, default 600) against a real tritonserver
whose failures come and go: its memory stays flat, a cleared finding leaves no series, and
every scrape is fast. Marked ``soak``: a suite of its own (``pytest -m soak -s``), run on a
quiet machine: beside the main suite, which churns processes and /dev/shm files that the
exporter's host collector reads, its memory and timings measure the neighbours."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.monitoring_harness import Exporter, series
from tests.python_models import (
    ECHO_PY,
    UNBATCHED,
    Load,
    failing_on_negative,
    infer,
    write_models,
)
from tests.server_harness import TritonServer

pytestmark = pytest.mark.soak

#: Seconds of failing requests, then as many of good ones, over and over.
PHASE_S = 15.0
#: Memory read as the baseline once the exporter has run this long (imports, first checks,
#: the allocator's pools settled).
WARM_S = 60.0


def _scrape(url: str) -> tuple[str, float]:
    """The page and how long the scrape took, timed by curl: this process runs the load's
    client threads, whose turns at the interpreter would be counted as the exporter's."""
    done = subprocess.run(["curl", "-sS", "--max-time", "5", "-w", "\n%{time_total}", url],
                          capture_output=True, text=True, timeout=10, check=True)
    page, _, taken = done.stdout.rpartition("\n")
    return page, float(taken)


def test_a_long_run_stays_flat_clears_what_clears_and_scrapes_fast(
        triton_server: Callable[..., TritonServer], tmp_path: Path) -> None:
    duration = float(os.environ.get("TD_SOAK_SECONDS", "600"))
    repository = write_models(tmp_path / "models", {
        "flaky": (UNBATCHED, failing_on_negative("negative input")),
        "echo": (UNBATCHED, ECHO_PY)})
    server = triton_server(repository)
    failing = [True]
    load = Load()
    load.clients(1, lambda i: infer(server.http_url, "flaky", -1.0 if failing[0] else 1.0,
                                    batched=False), pause=0.05)
    load.clients(1, lambda i: infer(server.http_url, "echo", batched=False), pause=0.1)
    exporter = Exporter("--url", server.http_url, "--interval", "0.5", "--window", "2",
                        workdir=tmp_path)
    process = psutil.Process(exporter.process.pid)
    scrapes: list[float] = []
    seen: list[tuple[bool, bool]] = []  # (failing, TD613 served), at each phase's end
    baseline = None
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < duration:
            phase_started = time.monotonic()
            failing[0] = int(elapsed // PHASE_S) % 2 == 0
            while time.monotonic() - phase_started < PHASE_S:
                page, taken = _scrape(exporter.url + "/metrics")
                scrapes.append(taken)
                if baseline is None and time.monotonic() - started >= WARM_S:
                    baseline = process.memory_info().rss
                time.sleep(0.5)
            served = any(labels["rule"] == "TD613" and value for labels, value in
                         series(page, "triton_doctor_finding"))
            seen.append((failing[0], served))
        end_rss = process.memory_info().rss
        checks = next(value for _, value in series(page, "triton_doctor_checks_total"))
    finally:
        load.end()
        exporter.stop()
    assert baseline is not None, "the run was shorter than the warm-up"
    grown_mb = (end_rss - baseline) / 1e6
    print(f"\nsoak: {duration:.0f} s, {checks:.0f} checks, {len(scrapes)} scrapes "
          f"(median {statistics.median(scrapes) * 1000:.1f} ms, slowest "
          f"{max(scrapes) * 1000:.1f} ms), RSS {baseline / 1e6:.1f} MB after "
          f"{WARM_S:.0f} s, {end_rss / 1e6:.1f} MB at the end ({grown_mb:+.2f} MB), "
          f"phases {seen}")
    assert all(served == failed for failed, served in seen[1:]), seen  # the first one warms
    assert sum(not failed for failed, _ in seen) >= 1 and sum(f for f, _ in seen) >= 2
    assert grown_mb < 5, f"RSS grew {grown_mb:.2f} MB"
    assert max(scrapes) < 0.05, f"slowest scrape {max(scrapes) * 1000:.0f} ms"
    assert checks >= duration / 0.5 / 2, checks  # at least every other interval checked
