"""Measure ``check --prometheus`` on simulated fleets of 10, 50 and 200 Triton replicas.

Three simulators (fixtures/generate/fleet_sim.py, one process per fleet, 20 models each by
default) serve the replicas' metrics pages; one real Prometheus (Debian's, with a temporary
tsdb) scrapes all of them every few seconds as jobs ``fleet10``, ``fleet50`` and ``fleet200``.
Once Prometheus holds a window of every replica, ``triton-doctor check --prometheus URL
--selector '{job="fleetN"}' --window W --format json --exit-zero`` runs ``--repeat`` times per
fleet, as a user runs it; the table shows the median wall time and the child's own peak RSS
(``os.wait4``, see bench/run.py) and the time against the 10-replica fleet's, with PASS/MISS
against the issue's targets. The simulators and Prometheus run in their own processes, so this
script stays small: a child's peak RSS is never below its parent's at spawn.

Sanity figures come from Prometheus itself (series per job, replicas up, requests/s), and the
findings: a healthy simulated fleet must give no TD9xx finding; fleet50 has one slowed replica
(``--slow-factor``), which must be found (TD901) and be the only fleet finding there.

Usage: ``python bench/fleet.py [--window 1m] [--repeat 3] [--scrape-interval 5] [--models 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run import Run, compile_doctor, measure, median, verdict

HERE = Path(__file__).resolve().parent
SIMULATOR = HERE.parent / "fixtures" / "generate" / "fleet_sim.py"
sys.path.insert(0, str(SIMULATOR.parent))
from fleet_sim import prometheus_config, scrape_job  # noqa: E402  (a fixture, not a package)

#: Targets from the issue, for the largest fleet.
WALL_TARGET_S = 3.0
RSS_TARGET_MB = 150.0
GROWTH_TARGET = 1.5
#: The replica of fleet50 that is slowed, and so must be the one outlier found there.
SLOW_REPLICA = 7


@dataclass
class Fleet:
    job: str
    replicas: int
    models: int
    anomaly: str | None = None
    process: subprocess.Popen[str] | None = None
    port: int = 0
    series: int = 0
    up: int = 0
    requests_per_s: float = 0.0
    slowdown: float | None = None
    runs: list[Run] = field(default_factory=list)

    @property
    def expected(self) -> str | None:
        """The instance a fleet finding must be on (None: a healthy fleet, no finding)."""
        return f"triton-{SLOW_REPLICA}:8002" if self.anomaly else None


def start_simulator(fleet: Fleet, seed: int) -> None:
    """The fleet's simulator in its own process; its port read from the line it prints."""
    command = [sys.executable, str(SIMULATOR), "--replicas", str(fleet.replicas), "--models",
               str(fleet.models), "--seed", str(seed), "--port", "0"]
    if fleet.anomaly:
        command += ["--anomaly", fleet.anomaly]
    fleet.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert fleet.process.stdout is not None
    line = fleet.process.stdout.readline()
    found = re.search(r"127\.0\.0\.1:([0-9]+)/", line)
    if found is None:
        sys.exit(f"simulator for {fleet.job} did not start: {line!r}")
    fleet.port = int(found.group(1))


def start_prometheus(config: str, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("prometheus")
    if binary is None:
        sys.exit("prometheus not found: apt-get install prometheus")
    (work / "prometheus.yml").write_text(config)
    port = free_port()
    log = (work / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [binary, f"--config.file={work / 'prometheus.yml'}",
         f"--storage.tsdb.path={work / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
         "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2):
                return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"prometheus did not start:\n{(work / 'prometheus.log').read_text()}")
            time.sleep(0.25)


def free_port() -> int:
    """A free loopback port, released for Prometheus to take."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def query(url: str, promql: str) -> list[dict[str, Any]]:
    address = f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(address, timeout=30) as response:
        answer = json.load(response)
    if answer.get("status") != "success":
        sys.exit(f"Prometheus refused {promql}: {answer}")
    return list(answer["data"]["result"])


def scalar(url: str, promql: str) -> float:
    rows = query(url, promql)
    return float(rows[0]["value"][1]) if rows else 0.0


def wait_for_window(url: str, fleets: list[Fleet], window_s: float, interval_s: float) -> float:
    """Seconds until Prometheus holds a window of samples of every replica."""
    jobs = "|".join(fleet.job for fleet in fleets)
    total = sum(fleet.replicas for fleet in fleets)
    # Samples over the window and two scrapes more: the check reads each series at the
    # window's start too, so the oldest sample must be older than the window.
    needed = int(window_s / interval_s) + 2
    start = time.monotonic()
    while True:
        rows = query(url, f'count_over_time(up{{job=~"{jobs}"}}[{window_s + 2 * interval_s:g}s])')
        held = sorted(float(row["value"][1]) for row in rows)
        if len(held) == total and held[0] >= needed:
            return time.monotonic() - start
        if time.monotonic() - start > window_s * 3 + 120:
            sys.exit(f"Prometheus holds {len(held)} of {total} replicas, the fewest samples "
                     f"{held[0] if held else 0:g} of {needed}: scrapes are failing")
        print(f"  waiting: {len(held)}/{total} replicas, fewest samples "
              f"{held[0] if held else 0:g} of {needed}", flush=True)
        time.sleep(max(interval_s, 5.0))


def held_figures(url: str, fleet: Fleet, window: str) -> None:
    """What Prometheus holds for the fleet, independent of the tool under test."""
    selector = f'{{job="{fleet.job}"}}'
    fleet.series = int(scalar(url, f"count({selector})"))
    fleet.up = int(scalar(url, f"sum(up{selector})"))
    fleet.requests_per_s = scalar(
        url, f"sum(rate(nv_inference_request_success{selector}[{window}]))")
    if fleet.expected:
        latency = {row["metric"]["instance"]: float(row["value"][1]) for row in query(
            url, f"sum by (instance) (rate(nv_inference_request_duration_us{selector}[{window}]))"
            f" / sum by (instance) (rate(nv_inference_request_success{selector}[{window}]))")}
        sick = latency.pop(fleet.expected)
        fleet.slowdown = sick / statistics.median(latency.values())


def check_command(url: str, fleet: Fleet, window: str) -> list[str]:
    script = shutil.which("triton-doctor") or shutil.which(
        "triton-doctor", path=str(Path(sys.executable).parent))
    head = [script] if script else [sys.executable, "-m", "triton_doctor"]
    return [*head, "check", "--prometheus", url, "--selector", f'{{job="{fleet.job}"}}',
            "--window", window, "--format", "json", "--exit-zero"]


def fleet_findings(run: Run) -> tuple[int, Counter[str], set[str]]:
    """All findings, the TD9xx ones by rule, and the instances those are on."""
    findings = json.loads(run.stdout)["findings"]
    fleet = [f for f in findings if f["rule"].startswith("TD9")]
    return (len(findings), Counter(f["rule"] for f in fleet),
            {str(f.get("instance")) for f in fleet})


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))


def report(fleets: list[Fleet]) -> bool:
    """Print the table and the findings; whether every target and sanity check held."""
    base = median(fleets[0].runs, "wall_s")
    rows = []
    for fleet in fleets:
        rows.append((fleet.job, str(fleet.replicas), str(fleet.models), str(fleet.series),
                     f"{fleet.requests_per_s:.0f}", f"{median(fleet.runs, 'wall_s'):.2f}",
                     f"{median(fleet.runs, 'cpu_s'):.2f}",
                     f"{median(fleet.runs, 'rss_mb'):.0f}",
                     f"{median(fleet.runs, 'wall_s') / base:.2f}x"))
    table(("job", "replicas", "models", "series", "req/s", "wall s", "CPU s", "peak RSS MB",
           "vs 10"), rows)
    print()
    ok = True
    for fleet in fleets:
        total, rules, instances = fleet_findings(fleet.runs[0])
        named = ", ".join(f"{rule} x{count}" for rule, count in sorted(rules.items())) or "none"
        expected = fleet.expected
        right = instances == ({expected} if expected else set()) and (
            not expected or rules.get("TD901", 0) > 0)
        ok &= right
        want = f"TD901 on {expected} only" if expected else "no TD9xx finding"
        print(f"{fleet.job}: {fleet.up}/{fleet.replicas} up, {total} findings; fleet findings: "
              f"{named} on {sorted(instances) or '-'}; want {want}: "
              f"{'OK' if right else 'WRONG'}")
        print(f"  wall s per run: {' '.join(f'{run.wall_s:.2f}' for run in fleet.runs)}")
    largest = fleets[-1]
    wall, rss = median(largest.runs, "wall_s"), median(largest.runs, "rss_mb")
    targets = [(f"{largest.replicas} replicas under {WALL_TARGET_S:g} s", wall < WALL_TARGET_S,
                f"{wall:.2f} s"),
               (f"{largest.replicas} replicas under {RSS_TARGET_MB:g} MB", rss < RSS_TARGET_MB,
                f"{rss:.0f} MB"),
               (f"at most {GROWTH_TARGET:g}x the {fleets[0].replicas}-replica time",
                wall <= GROWTH_TARGET * base, f"{wall / base:.2f}x")]
    print()
    for what, met, figure in targets:
        print(f"{verdict(met)}  {what}: {figure}")
        ok &= met
    return ok


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has used (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", default="1m", help="the checks' window (and the wait)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per fleet (median)")
    parser.add_argument("--scrape-interval", type=float, default=5.0, metavar="S")
    parser.add_argument("--models", type=int, default=20, help="models per replica")
    parser.add_argument("--slow-factor", type=float, default=5.0,
                        help=f"latency x of fleet50's replica {SLOW_REPLICA}")
    args = parser.parse_args()
    window_s = _seconds(args.window)
    fleets = [Fleet("fleet10", 10, args.models),
              Fleet("fleet50", 50, args.models, f"{SLOW_REPLICA}:slow:factor={args.slow_factor}"),
              Fleet("fleet200", 200, args.models)]
    print(f"check --prometheus on simulated fleets: window {args.window}, scrape every "
          f"{args.scrape_interval:g} s, median of {args.repeat} runs, {os.cpu_count()} CPUs")
    compile_doctor()
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as work:
        prometheus = None
        try:
            for seed, fleet in enumerate(fleets):
                start_simulator(fleet, seed)
            first, *rest = fleets
            config = prometheus_config(first.port, first.job, first.replicas,
                                       args.scrape_interval,
                                       [scrape_job(f.port, f.job, f.replicas) for f in rest])
            prometheus, url = start_prometheus(config, Path(work))
            started = {f.job: cpu_seconds(f.process.pid) for f in fleets if f.process}
            waited = wait_for_window(url, fleets, window_s, args.scrape_interval)
            used = sum(cpu_seconds(f.process.pid) - started[f.job] for f in fleets if f.process)
            print(f"  Prometheus held a window after {waited:.0f} s; the simulators used "
                  f"{used / waited:.1%} of a core serving {sum(f.replicas for f in fleets)} "
                  "replicas")
            for fleet in fleets:
                held_figures(url, fleet, args.window)
                print(f"  {fleet.job}: Prometheus holds {fleet.series} series, {fleet.up} of "
                      f"{fleet.replicas} replicas up, {fleet.requests_per_s:.0f} requests/s"
                      + (f"; {fleet.expected} takes {fleet.slowdown:.1f}x its peers' median "
                         "latency per request" if fleet.slowdown else ""), flush=True)
            for fleet in fleets:
                measure(check_command(url, fleet, args.window), None)  # uncounted warm-up
                fleet.runs = [measure(check_command(url, fleet, args.window), None)
                              for _ in range(args.repeat)]
        finally:
            if prometheus is not None:
                prometheus.send_signal(signal.SIGTERM)
                prometheus.wait(timeout=30)
            for fleet in fleets:
                if fleet.process is not None:
                    fleet.process.send_signal(signal.SIGINT)
                    fleet.process.wait(timeout=30)
    print()
    ok = report(fleets)
    own_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"note: peak RSS of this script {own_mb:.0f} MB: no reported RSS can be below it")
    return 0 if ok else 1


def _seconds(text: str) -> float:
    """``90``, ``90s``, ``1m`` or ``1h`` in seconds."""
    found = re.fullmatch(r"([0-9.]+)([smh]?)", text)
    if found is None:
        sys.exit(f"--window {text!r}: give seconds or a duration like 1m")
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


if __name__ == "__main__":
    sys.exit(main())
