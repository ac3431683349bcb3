"""Start-up: a one-model ``check`` against ``python -c pass``, measured in the same run.

On a one-model repository nearly all of ``check``'s time is the interpreter starting and the
doctor importing itself, so it is compared with what the same interpreter takes to do
nothing. The commands run alternately (one round runs each once), so a machine that slows
down mid-run slows all of them alike; each figure is the median over the rounds. Wall time is
the target; user + system CPU time is printed beside it, steadier on a busy machine. ``check``
runs twice per round: with an empty cache directory (a first check: every config parsed, the
ModelConfig schema loaded) and with the cache its earlier runs kept (a check run again).

Usage: ``python bench/cold_start.py [REPOSITORY] [--runs 11]``; without REPOSITORY a one-model
ONNX repository is generated (``build_repo.build_onnx``). See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from run import HERE, Run, compile_doctor, doctor_command, measure, verdict

#: A one-model check may take this many times ``python -c pass`` (the issue's target).
TARGET_RATIO = 3.5


def one_model_repository(out: Path) -> Path:
    """A repository holding one valid ONNX model, from the benchmark's own generator (which
    imports onnx: in a subprocess, so that this process stays small)."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
            "from pathlib import Path; import build_repo\n"
            f"build_repo.build_onnx(Path({str(out)!r}), 'onnx_0000', 0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    return out


FIRST, AGAIN = "check, first run (json)", "check, cached (json)"


def commands(repository: Path) -> dict[str, list[str]]:
    check = doctor_command(repository)
    return {"python -c pass": [sys.executable, "-c", "pass"],
            "triton-doctor --version": [check[0], "--version"], FIRST: check, AGAIN: check}


def run_once(label: str, command: list[str], scratch: Path) -> Run:
    """One run; ``FIRST`` with a cache directory of its own, empty, the rest with one kept."""
    cache = Path(tempfile.mkdtemp(dir=scratch)) if label == FIRST else scratch / "kept"
    os.environ["XDG_CACHE_HOME"] = str(cache)
    return measure(command, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repository", nargs="?", type=Path,
                        help="a one-model repository (default: one generated now)")
    parser.add_argument("--runs", type=int, default=11, help="rounds measured (median; >= 9)")
    args = parser.parse_args()
    compile_doctor()
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        repository = args.repository or one_model_repository(scratch / "repo")
        chosen = commands(repository)
        for label, command in chosen.items():  # warm-up: page cache, the kept cache; not counted
            run_once(label, command, scratch)
        runs: dict[str, list[Run]] = {label: [] for label in chosen}
        for _ in range(max(args.runs, 1)):
            for label, command in chosen.items():
                runs[label].append(run_once(label, command, scratch))
    wall = {label: statistics.median(r.wall_s for r in done) for label, done in runs.items()}
    cpu = {label: statistics.median(r.cpu_s for r in done) for label, done in runs.items()}
    floor_wall, floor_cpu = wall["python -c pass"], cpu["python -c pass"]
    print(f"{args.runs} alternating rounds, medians; repository: {repository}")
    print(f"{'command':<26} {'wall s':>8} {'ratio':>7} {'cpu s':>8} {'ratio':>7}")
    for label in chosen:
        print(f"{label:<26} {wall[label]:8.3f} {wall[label] / floor_wall:6.2f}x "
              f"{cpu[label]:8.3f} {cpu[label] / floor_cpu:6.2f}x")
    for label in (FIRST, AGAIN):
        ratio = wall[label] / floor_wall
        print(f"{verdict(ratio <= TARGET_RATIO)}: {label} of one model takes {ratio:.2f}x "
              f"`python -c pass` (target <= {TARGET_RATIO:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
