"""``check`` against the floor: the least work a Python linter must do for the same answer.

The floor is ``floor_check.py --extras`` of the shared workload (../shared/bench: every config
parsed with protobuf's text_format, ONNX I/O by a wire walk, plan headers, ``ast.parse`` of each
model.py, the zip directory of each TorchScript file, one process). Both run as subprocesses,
alternating, in this one run, on the same files; each figure is a median, printed beside the
floor's and as a ratio:

- the shared mixed 1,000-model repository (and this project's own mix, bench/build_repo.py):
  ``check --format json --exit-zero`` on a first run (an empty cache directory, which the run
  fills, as a user's first run does: the target), with ``--no-cache`` (nothing cached, nothing
  written: shown beside it), with the cache (a re-run of an unchanged repository), and in one
  process (``--no-cache --jobs 1``);
- two 512 MiB ONNX models (the graph's inputs after the weights): time and peak RSS.

Every report is compared byte for byte across the ways of running: the cache and the
processes change the time, never the output.

Usage: ``python bench/floor.py [--shared ../shared/bench] [--repeat 3] [--keep]``. Building
the shared repositories needs numpy and onnx (the test extras have both).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from run import HERE, Run, compile_doctor, measure, median, verdict

#: Targets from the issue, as ratios to the floor measured in the same run.
FIRST_RUN_TARGET, CACHED_TARGET, BIG_TARGET = 1.0, 0.25, 1.5
BIG_RSS_TARGET_MB = 64.0
#: The cache keeps nothing written in the last seconds (checks/model_fingerprint.py).
SETTLE_S = 3.2


def doctor(repo: Path, *flags: str) -> list[str]:
    return [str(Path(sys.executable).parent / "triton-doctor"), "check", "--format", "json",
            "--exit-zero", *flags, str(repo)]


def floor(shared: Path, repo: Path) -> list[str]:
    return [sys.executable, str(shared / "floor_check.py"), str(repo), "--extras"]


def alternate(commands: dict[str, list[str]], repeat: int,
              before_each: dict[str, Callable[[], None]] | None = None) -> dict[str, list[Run]]:
    """Each command ``repeat`` times, taking turns, after one unmeasured warm-up of each (the
    page cache holds the repository for all alike)."""
    for command in commands.values():
        measure(command, None)
    runs: dict[str, list[Run]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, command in commands.items():
            prepare = (before_each or {}).get(label)
            if prepare is not None:
                prepare()
            runs[label].append(measure(command, None))
    return runs


def mixed(label: str, repo: Path, shared: Path, repeat: int, work: Path) -> list[str]:
    """The figures of one mixed repository; the lines that failed their target."""
    cache = work / f"cache-{label}"
    fresh = work / f"fresh-{label}"

    def cold() -> None:
        shutil.rmtree(fresh, ignore_errors=True)

    runs = alternate({
        "floor": floor(shared, repo),
        "first run": doctor(repo, "--cache-dir", str(fresh)),
        "no cache": doctor(repo, "--no-cache"),
        "one process": doctor(repo, "--no-cache", "--jobs", "1"),
        "cached re-run": doctor(repo, "--cache-dir", str(cache)),
    }, repeat, {"first run": cold})
    base = median(runs["floor"], "wall_s")
    print(f"\n{label}: {repo}")
    print(f"  {'':16} {'wall s':>7} {'cpu s':>7} {'MB':>6} {'x floor':>8}")
    misses = []
    targets = {"first run": FIRST_RUN_TARGET, "cached re-run": CACHED_TARGET}
    for name, measured in runs.items():
        wall = median(measured, "wall_s")
        ratio = wall / base
        target = targets.get(name)
        mark = "" if target is None else f"  {verdict(ratio <= target)} (<= {target}x)"
        print(f"  {name:16} {wall:7.3f} {median(measured, 'cpu_s'):7.3f} "
              f"{median(measured, 'rss_mb'):6.1f} {ratio:8.2f}{mark}")
        if target is not None and ratio > target:
            misses.append(f"{label} {name}: {ratio:.2f}x the floor")
    reports = {run.stdout for name in runs if name != "floor" for run in runs[name]}
    print(f"  reports byte-identical across first run, no cache, one process and cache: "
          f"{verdict(len(reports) == 1)}")
    if len(reports) != 1:
        misses.append(f"{label}: the reports differ")
    return misses


def big(repo: Path, shared: Path, repeat: int) -> list[str]:
    runs = alternate({"floor": floor(shared, repo), "check": doctor(repo, "--no-cache")},
                     repeat)
    base, wall = median(runs["floor"], "wall_s"), median(runs["check"], "wall_s")
    rss = median(runs["check"], "rss_mb")
    print(f"\n2 x 512 MiB ONNX: floor {base:.3f} s, check {wall:.3f} s = {wall / base:.2f}x "
          f"{verdict(wall / base <= BIG_TARGET)} (<= {BIG_TARGET}x); check's peak RSS "
          f"{rss:.1f} MB {verdict(rss < BIG_RSS_TARGET_MB)} (< {BIG_RSS_TARGET_MB:g} MB)")
    return ([f"big: {wall / base:.2f}x the floor"] * (wall / base > BIG_TARGET)
            + [f"big: {rss:.1f} MB"] * (rss >= BIG_RSS_TARGET_MB))


def build(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, help="where to build (default: a temporary "
                        "directory, deleted at the end)")
    args = parser.parse_args()
    if not (args.shared / "floor_check.py").exists():
        sys.exit(f"{args.shared}: no floor_check.py; give the shared bench with --shared DIR")
    compile_doctor()
    work = args.work or Path(tempfile.mkdtemp(prefix="td-floor-"))
    try:
        shared_mixed, own_mixed = work / "shared-mixed", work / "own-mixed"
        shared_big = work / "big"
        if not shared_mixed.exists():
            build([sys.executable, str(args.shared / "gen_repo.py"), "mixed", "--out",
                   str(shared_mixed), "--n", "1000", "--bad", "10"])
        if not own_mixed.exists():
            build([sys.executable, str(HERE / "build_repo.py"), str(own_mixed), "--models",
                   "1000"])
        if not shared_big.exists():
            build([sys.executable, str(args.shared / "gen_repo.py"), "big", "--out",
                   str(shared_big), "--n", "2", "--gib", "0.5"])
        time.sleep(SETTLE_S)  # files written a moment ago are never cached
        misses = mixed("shared mixed 1,000", shared_mixed, args.shared, args.repeat, work)
        misses += mixed("own mixed 1,000", own_mixed, args.shared, args.repeat, work)
        misses += big(shared_big, args.shared, args.repeat)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\nall targets met" if not misses else "\nmissed: " + "; ".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
