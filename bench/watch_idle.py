"""`triton-doctor watch` in a real terminal: time to first paint, and CPU while idling.

Starts the bundled tritonserver (the nvidia-pytriton wheel, as the tests do) on a repository
of Python models built by bench/live_cycle.py, then runs each contender in a detached tmux pane
of 160x48 (a real terminal, drawn by tmux) and measures, in the same run:

- first paint: from launching the command until ``capture-pane`` shows a model name, polled
  every 20 ms; median of ``--repeat`` launches;
- idle CPU: user + system CPU seconds of the process (and its live children) over
  ``--idle`` seconds with no traffic, after the first paint and ``--settle`` seconds, as a
  percentage of one core; the tmux server's CPU over the same time is shown beside it (what
  drawing the output costs the terminal).

Contenders: ``triton-doctor watch --url URL --interval 1``; the floor of Textual's own idle
cost (a minimal Textual app showing a static table of the same models: no polling); and the
dashboard a user would script (tritonclient.http repository index and statistics plus a
metrics GET every second, one line printed per poll). Target: watch idling at a 1 s interval
under 5 % of one core.

Usage: ``python bench/watch_idle.py [--models 16] [--idle 30] [--repeat 3] [--settle 3]``.
The script also runs its own contenders: ``--floor-app N`` and ``--script URL METRICS_URL``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.live_cycle import build, traffic  # noqa: E402
from bench.run import compile_doctor  # noqa: E402
from tests.server_harness import ServerInstall, TritonServer, locate_server_tree  # noqa: E402
from tests.tmux_pane import TmuxPane, tmux_available  # noqa: E402

TARGET_PERCENT = 5.0
POLL_S = 0.02
COLUMNS = ("model", "version", "state", "req/s", "avg batch", "queue ms", "p99 ms",
           "failures", "findings")


@dataclass
class Idle:
    """CPU over an idle stretch: the process's and the tmux server's, as % of one core."""

    process_percent: float
    tmux_percent: float
    rss_mb: float


def floor_app(models: int) -> None:
    """The floor: a Textual app with a header line, a static table of ``models`` rows and a
    footer, as the watch's overview has; it reads nothing and never redraws by itself."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Footer, Static

    class Floor(App[None]):
        BINDINGS = [("q", "quit", "quit")]  # noqa: RUF012 (Textual's own idiom)

        def compose(self) -> ComposeResult:
            yield Static(" floor  a static table, no polling")
            table: DataTable[str] = DataTable()
            table.add_columns(*COLUMNS)
            for index in range(models):
                table.add_row(f"model_{index:02d}", "1", "READY", "0.0", "-", "-", "-", "0",
                              "ok")
            yield table
            yield Footer()

    Floor().run()


def script_dashboard(url: str, metrics_url: str) -> None:
    """What a user would script: every second the index, the statistics and the metrics page,
    one line printed."""
    import urllib.request

    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url.removeprefix("http://"))
    while True:
        started = time.monotonic()
        index = client.get_model_repository_index()
        stats = client.get_inference_statistics()
        with urllib.request.urlopen(metrics_url, timeout=5) as response:
            page = response.read()
        ready = [entry["name"] for entry in index if entry.get("state") == "READY"]
        requests = sum(int(s["inference_stats"]["success"]["count"])
                       for s in stats["model_stats"])
        print(f"{time.strftime('%H:%M:%S')}  {len(ready)} READY ({ready[0]} ...)  "
              f"{requests} requests  metrics {len(page)} B", flush=True)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))


def cpu_seconds(pid: int, children: bool = True) -> float:
    """User + system CPU seconds of ``pid`` and (with ``children``) its live descendants."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for each in [process, *(process.children(recursive=True) if children else [])]:
        try:
            times = each.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def read_cycle_costs(url: str, metrics_url: str, cycles: int) -> dict[str, float]:
    """CPU ms per poll of what the watch does each interval besides drawing, in this process:
    the Poller's reading, the rules, and the overview's rows; means over ``cycles``. The
    Poller's clock advances one second a cycle, so the slow-paced reads (configs, container,
    /dev/shm owners every 10 s) come as often as in the watch."""
    from triton_doctor.catalogue import all_rules
    from triton_doctor.checks.live import LiveRequest
    from triton_doctor.checks.poll import Poller
    from triton_doctor.engine import run
    from triton_doctor.tui.overview import firing_rows, model_rows
    from triton_doctor.tui.state import Frame, History

    clock = [0.0]
    poller = Poller(LiveRequest(url, metrics_url, window_s=5.0, timeout_s=5.0),
                    clock=lambda: clock[0])
    rules, history = all_rules(), History()
    parts: dict[str, list[float]] = {"poll": [], "judge": [], "rows": []}
    for cycle in range(cycles + 3):  # the first three warm up (imports, first configs)
        clock[0] += 1.0
        started = time.process_time()
        evidence = poller.poll()
        polled = time.process_time()
        result = run(evidence, rules)
        judged = time.process_time()
        frame = Frame(time.time(), evidence, result)
        history.add(frame)
        model_rows(frame)
        firing_rows(frame)
        done = time.process_time()
        if cycle >= 3:
            parts["poll"].append(polled - started)
            parts["judge"].append(judged - polled)
            parts["rows"].append(done - judged)
        time.sleep(0.05)
    return {part: 1000 * statistics.mean(values) for part, values in parts.items()}


def first_paint(pane: TmuxPane, shown: Callable[[str], bool], timeout: float = 60.0) -> float:
    """Seconds from the pane's start until ``shown(screen)``."""
    pane.wait_for(shown, timeout, every=POLL_S, what="the first paint")
    return time.monotonic() - pane.started_at


def idle(pane: TmuxPane, seconds: float) -> Idle:
    import psutil

    pid, tmux_pid = pane.pid, pane.server_pid
    # The tmux server alone: the pane's command is its child.
    mine, tmux = cpu_seconds(pid), cpu_seconds(tmux_pid, children=False)
    started = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - started
    rss = psutil.Process(pid).memory_info().rss / 2**20
    return Idle(100 * (cpu_seconds(pid) - mine) / wall,
                100 * (cpu_seconds(tmux_pid, children=False) - tmux) / wall, rss)


def measure(command: Sequence[str], shown: Callable[[str], bool], sockets: Path, repeat: int,
            idle_s: float, settle_s: float) -> tuple[list[float], Idle]:
    """First paint ``repeat`` times (the last launch also idles), then idle CPU."""
    paints = []
    for run in range(repeat):
        with TmuxPane(command, sockets) as pane:
            paints.append(first_paint(pane, shown))
            if run == repeat - 1:
                time.sleep(settle_s)
                if pane.dead():
                    raise RuntimeError(f"{command[0]} ended:\n{pane.screen()}")
                quiet = idle(pane, idle_s)
    return paints, quiet


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle measured")
    parser.add_argument("--repeat", type=int, default=3, help="launches for the first paint")
    parser.add_argument("--settle", type=float, default=3.0,
                        help="seconds after the first paint before the idle measure starts")
    parser.add_argument("--floor-app", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--script", nargs=2, metavar=("URL", "METRICS_URL"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_app is not None:
        floor_app(args.floor_app)
        return 0
    if args.script:
        script_dashboard(*args.script)
        return 0
    tree = locate_server_tree()
    if tree is None:
        print("the bundled tritonserver is not installed: pip install --no-deps "
              "nvidia-pytriton==0.7.0")
        return 2
    if not tmux_available():
        print("tmux is not installed")
        return 2
    doctor = Path(sys.executable).parent / "triton-doctor"
    compile_doctor()
    with tempfile.TemporaryDirectory(prefix="tdidle") as work:
        work_dir = Path(work)
        build(work_dir / "models", args.models)
        install = ServerInstall.prepare(tree, work_dir / "server")
        sockets = work_dir / "tmux"
        sockets.mkdir()
        with TritonServer(install, work_dir / "models", work_dir / "run",
                          startup_timeout=180) as server:
            traffic(server.http_url, args.models)  # counters and metrics as after real use
            contenders = {
                "triton-doctor watch --interval 1": (
                    [str(doctor), "watch", "--url", server.http_url, "--metrics-url",
                     server.metrics_url, "--interval", "1", "--save-dir", str(work_dir)],
                    lambda screen: "model_00" in screen),
                "Textual floor: static table": (
                    [sys.executable, __file__, "--floor-app", str(args.models)],
                    lambda screen: "model_00" in screen),
                "script: tritonclient + metrics, 1 s": (
                    [sys.executable, __file__, "--script", server.http_url,
                     server.metrics_url],
                    lambda screen: "READY (model_00" in screen),
            }
            results = {}
            for name, (command, shown) in contenders.items():
                results[name] = measure(command, shown, sockets, args.repeat, args.idle,
                                        args.settle)
            costs = read_cycle_costs(server.http_url, server.metrics_url, 30)
    report(results, costs, args)
    return 0


def report(results: dict[str, tuple[list[float], Idle]], costs: dict[str, float],
           args: argparse.Namespace) -> None:
    print(f"watch idle against tritonserver with {args.models} Python models, no traffic; "
          f"{os.cpu_count()} CPUs; first paint median of {args.repeat}, idle CPU over "
          f"{args.idle:g} s after {args.settle:g} s settling")
    print(f"{'':38} {'first paint s':>13} {'CPU % core':>10} {'tmux %':>7} {'RSS MB':>7}")
    for name, (paints, quiet) in results.items():
        print(f"{name:38} {statistics.median(paints):13.2f} {quiet.process_percent:10.2f} "
              f"{quiet.tmux_percent:7.2f} {quiet.rss_mb:7.0f}")
    (watch_paints, watch), (floor_paints, floor), (_, script) = results.values()
    print("first paints (s): " + "; ".join(
        f"{name.split(':')[0].split(' --')[0]} " + ", ".join(f"{p:.2f}" for p in paints)
        for name, (paints, _) in results.items()))
    print(f"ratios: watch CPU {_ratio(watch.process_percent, floor.process_percent)} the "
          f"Textual floor, {_ratio(watch.process_percent, script.process_percent)} the script; "
          f"first paint {_ratio(statistics.median(watch_paints), statistics.median(floor_paints))}"
          f" the floor's")
    per_poll = sum(costs.values())
    print(f"one interval's work in-process, CPU ms (mean of 30): poll {costs['poll']:.1f}, "
          f"rules {costs['judge']:.1f}, overview rows {costs['rows']:.1f} = {per_poll:.1f} ms, "
          f"{per_poll / 10:.2f} % of a core at 1 s; the rest of the watch's "
          f"{watch.process_percent:.2f} % is Textual's (timers, layout, rendering)")
    verdict = "PASS" if watch.process_percent < TARGET_PERCENT else "MISS"
    print(f"{verdict}  watch idling at 1 s: {watch.process_percent:.2f} % of one core "
          f"< {TARGET_PERCENT:g} %")


def _ratio(value: float, base: float) -> str:
    """``value / base`` as "3.1x"; a base under psutil's resolution has no ratio."""
    return f"{value / base:.1f}x" if base >= 0.05 else "(no ratio: base under 0.05)"


if __name__ == "__main__":
    sys.exit(main())
