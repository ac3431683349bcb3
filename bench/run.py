"""Measure triton-doctor against a naive baseline on generated repositories, in one run.

Each figure is printed next to the baseline's, measured in the same run on the same files, so
a number is never compared with one taken on another machine or another day. Both tools run as
subprocesses, exactly as a user or CI runs them; wall time is taken around the process and
peak RSS comes from ``os.wait4`` (the kernel's ru_maxrss of that one child, which
``getrusage(RUSAGE_CHILDREN)`` would mix up across runs).

Linux carries a process's RSS high-water mark across fork and exec, so a child's ru_maxrss is
never below its parent's RSS at spawn time. This script therefore stays small (stdlib only;
the repositories are built by a ``build_repo.py`` subprocess, which imports onnx) and prints
its own peak RSS, the floor under every figure it reports.

Usage: ``python bench/run.py [--models 1000] [--big-bytes 1e9] [--repeat 3] [--keep] [--cold]``.
See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
#: The code that writes the repositories: a change to any of it invalidates the cache.
GENERATORS = (HERE / "build_repo.py", HERE.parent / "fixtures" / "generate" / "onnx_models.py",
              HERE.parent / "fixtures" / "generate" / "plan_headers.py")
#: A baseline run slower than this is not repeated (onnx.load of gigabytes takes a while).
SLOW_BASELINE_S = 30.0

#: Targets from the issue.
WALL_TARGET_S = 2.0
RSS_TARGET_MB = 150.0
SPEEDUP_TARGET = 20.0


@dataclass
class Run:
    wall_s: float
    #: User + system CPU seconds: steadier than wall time on a busy machine.
    cpu_s: float
    rss_mb: float
    stdout: str


@dataclass
class Scenario:
    label: str
    #: Models of the realistic mix (0: only the big ONNX models).
    mix: int
    big_bytes: int
    models: int = 0
    repo: Path = Path()
    disk_bytes: int = 0
    built_now: bool = False
    doctor: list[Run] = field(default_factory=list)
    baseline: list[Run] = field(default_factory=list)


def measure(command: list[str], cold_repo: Path | None) -> Run:
    """Run ``command`` to completion; wall seconds and that process's own peak RSS."""
    if cold_repo is not None:
        evict(cold_repo)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        # wait4 instead of Popen.wait: it reports the rusage of exactly this child.
        child = os.posix_spawn(command[0], command, os.environ,
                               file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                             (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status, usage = os.wait4(child, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(command)} failed:\n{err.read().decode(errors='replace')}")
        # Linux reports ru_maxrss in KiB.
        return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                   out.read().decode())


def evict(repo: Path) -> None:
    """Drop the repository's files from the page cache, for a cold-cache measurement."""
    for top, _, names in os.walk(repo):
        for name in names:
            fd = os.open(os.path.join(top, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def ensure_repo(scenario: Scenario) -> None:
    """Build the scenario's repository in bench/.cache, or reuse a complete earlier build."""
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in GENERATORS)).hexdigest()
    prefix = f"n{scenario.mix}-w{scenario.big_bytes}-"
    scenario.repo = CACHE / (prefix + digest[:10])
    meta = scenario.repo.with_suffix(".json")
    if meta.exists() and scenario.repo.is_dir():
        facts = json.loads(meta.read_text())
        print(f"  {scenario.label}: reusing {scenario.repo.relative_to(HERE.parent)}")
    else:
        for stale in CACHE.glob(prefix + "*"):  # older generators, or an interrupted build
            if stale.is_dir():
                shutil.rmtree(stale)
            else:
                stale.unlink()
        start = time.perf_counter()
        built = subprocess.run(
            [sys.executable, str(HERE / "build_repo.py"), str(scenario.repo),
             "--models", str(scenario.mix), "--big-bytes", str(scenario.big_bytes)],
            check=True, capture_output=True, text=True)
        facts = json.loads(built.stdout)
        meta.write_text(json.dumps(facts))
        scenario.built_now = True
        print(f"  {scenario.label}: built {scenario.repo.relative_to(HERE.parent)} in "
              f"{time.perf_counter() - start:.1f} s")
    scenario.models, scenario.disk_bytes = facts["models"], facts["disk_bytes"]


def compile_doctor() -> None:
    """Write the doctor's bytecode, as installing a wheel does.

    An editable install leaves the sources uncompiled, and with PYTHONDONTWRITEBYTECODE set (as
    on this project's machines) every run would compile them again: about 45 ms that no
    installed copy pays. The baseline's libraries (onnx, protobuf) come compiled from pip.
    """
    code = ("import compileall, importlib.util as u\n"
            "for name in ('triton_doctor', 'triton_doctor.checks', 'triton_doctor.rules'):\n"
            "    for where in u.find_spec(name).submodule_search_locations:\n"
            "        compileall.compile_dir(where, quiet=1)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def doctor_command(repo: Path) -> list[str]:
    """The installed console script, as users run it; ``python -m`` when it is not on PATH."""
    script = shutil.which("triton-doctor") or shutil.which(
        "triton-doctor", path=str(Path(sys.executable).parent))
    head = [script] if script else [sys.executable, "-m", "triton_doctor"]
    return [*head, "check", str(repo), "--format", "json", "--exit-zero"]


def median(runs: list[Run], attribute: str) -> float:
    return statistics.median(getattr(run, attribute) for run in runs)


def size_label(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:g} B"


def findings_summary(run: Run, models: int) -> str:
    """The doctor's finding counts: a jump means a regression that flags valid models."""
    summary = json.loads(run.stdout)["summary"]
    if summary["models"] != models:
        sys.exit(f"doctor saw {summary['models']} models, expected {models}")
    return f"{summary['error']} errors, {summary['warning']} warnings, {summary['info']} info"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def break_even(plain: Scenario, _small: Scenario, mixed_big: Scenario, only_big: Scenario) -> str:
    """Where the ratio reaches the target: the baseline's cost grows linearly with the weights
    (measured between 'mixed' and 'mixed + big'), the doctor's does not."""
    per_gb = (median(mixed_big.baseline, "wall_s") - median(plain.baseline, "wall_s")) / (
        mixed_big.big_bytes / 1e9)
    doctor = median(only_big.doctor, "wall_s")
    fixed = median(only_big.baseline, "wall_s") - per_gb * only_big.big_bytes / 1e9
    if per_gb <= 0:
        return "note: the baseline did not slow down with the weights; no break-even to report"
    needed_gb = (SPEEDUP_TARGET * doctor - fixed) / per_gb
    return (f"note: the baseline pays {per_gb:.2f} s per GB of weights and {fixed:.2f} s besides; "
            f"the doctor takes {doctor:.2f} s whatever the weights, so on a repository of big "
            f"ONNX models it is {SPEEDUP_TARGET:g}x faster from about {max(needed_gb, 0):.1f} GB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000, help="models of the mixed repository")
    parser.add_argument("--big-bytes", type=float, default=1e9,
                        help="initializer bytes of the large-ONNX scenarios (0: skip them)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the repositories built now in bench/.cache for later runs")
    parser.add_argument("--cold", action="store_true",
                        help="evict the repository from the page cache before every run")
    args = parser.parse_args()

    scenarios = [Scenario("mixed", args.models, 0),
                 Scenario("mixed + 10 MB", args.models, 10_000_000)]
    if args.big_bytes > 0:
        big = int(args.big_bytes)
        scenarios += [Scenario(f"mixed + {size_label(big)}", args.models, big),
                      Scenario(f"{size_label(big)} ONNX only", 0, big)]
    print(f"triton-doctor benchmark: median of {args.repeat} runs, "
          f"{'cold' if args.cold else 'warm'} page cache")
    print(f"  {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}")
    CACHE.mkdir(exist_ok=True)
    for scenario in scenarios:
        ensure_repo(scenario)

    compile_doctor()
    os.sync()  # the freshly written gigabytes must not be flushed while the tools run
    notes = []
    baseline = [sys.executable, str(HERE / "baseline.py")]
    for scenario in scenarios:
        cold = scenario.repo if args.cold else None
        if not args.cold:  # one uncounted run each, so every counted run finds the same cache
            measure(doctor_command(scenario.repo), None)
            measure([*baseline, str(scenario.repo)], None)
        for _ in range(args.repeat):
            scenario.doctor.append(measure(doctor_command(scenario.repo), cold))
        for index in range(args.repeat):
            scenario.baseline.append(measure([*baseline, str(scenario.repo)], cold))
            if scenario.baseline[-1].wall_s > SLOW_BASELINE_S and index + 1 < args.repeat:
                notes.append(f"baseline on '{scenario.label}' ran {index + 1} time(s): it took "
                             f"over {SLOW_BASELINE_S:g} s")
                break
    own_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print()
    header = ("scenario", "models", "on disk", "doctor s", "doctor MB", "baseline s",
              "baseline MB", "speedup")
    rows = []
    for scenario in scenarios:
        doctor_s = median(scenario.doctor, "wall_s")
        baseline_s = median(scenario.baseline, "wall_s")
        rows.append((scenario.label, str(scenario.models), size_label(scenario.disk_bytes),
                     f"{doctor_s:.2f}", f"{median(scenario.doctor, 'rss_mb'):.0f}",
                     f"{baseline_s:.2f}", f"{median(scenario.baseline, 'rss_mb'):.0f}",
                     f"{baseline_s / doctor_s:.1f}x"))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        print("  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                        for i, (cell, width) in enumerate(zip(row, widths, strict=True))))

    print()
    for scenario in scenarios:
        base = json.loads(scenario.baseline[0].stdout)
        found = findings_summary(scenario.doctor[0], scenario.models)
        print(f"{scenario.label}: doctor found {found};"
              f" baseline loaded {base['onnx_loaded']} ONNX files, skipped "
              f"{base['skipped_torchscript']} TorchScript and {base['skipped_tensorrt']} TensorRT, "
              f"found {base['problems']} problems")
    for scenario in scenarios:
        print(f"{scenario.label}: wall s per run: doctor "
              f"{' '.join(f'{run.wall_s:.2f}' for run in scenario.doctor)} "
              f"(CPU {median(scenario.doctor, 'cpu_s'):.2f}), baseline "
              f"{' '.join(f'{run.wall_s:.2f}' for run in scenario.baseline)} "
              f"(CPU {median(scenario.baseline, 'cpu_s'):.2f})")
    plain = scenarios[0]
    for scenario in scenarios[1:]:
        if scenario.mix != plain.mix:
            continue
        extra_doctor = median(scenario.doctor, "wall_s") - median(plain.doctor, "wall_s")
        extra_base = median(scenario.baseline, "wall_s") - median(plain.baseline, "wall_s")
        print(f"{scenario.label}: the weights add {extra_doctor:+.2f} s to the doctor, "
              f"{extra_base:+.2f} s to the baseline")
    notes.append(f"peak RSS of this script {own_mb:.0f} MB: no reported RSS can be below it")
    for note in notes:
        print(f"note: {note}")

    print()
    for scenario in scenarios:
        wall, rss = median(scenario.doctor, "wall_s"), median(scenario.doctor, "rss_mb")
        print(f"{verdict(wall < WALL_TARGET_S)}  {scenario.label}: doctor wall {wall:.2f} s "
              f"< {WALL_TARGET_S:g} s")
        print(f"{verdict(rss < RSS_TARGET_MB)}  {scenario.label}: doctor peak RSS {rss:.0f} MB "
              f"< {RSS_TARGET_MB:g} MB")
    for scenario in scenarios[2:]:
        speedup = median(scenario.baseline, "wall_s") / median(scenario.doctor, "wall_s")
        print(f"{verdict(speedup >= SPEEDUP_TARGET)}  {scenario.label}: {speedup:.1f}x faster "
              f"than the baseline >= {SPEEDUP_TARGET:g}x")
    if len(scenarios) == 4:
        print(break_even(*scenarios))

    if not args.keep:
        for scenario in scenarios:
            if scenario.built_now:
                shutil.rmtree(scenario.repo)
                scenario.repo.with_suffix(".json").unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
