"""The end of a run: the process's own check ends the process once its report is written,
without the interpreter's teardown, where nothing is left to run at exit; else, and for other
subcommands, it freezes the collector's objects (its exit walks none of them) and its atexit
handlers still run. A run called with arguments, as tests and pre-commit call it, does
neither."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from triton_doctor import cli

from tests.helpers import DEMO

PROBE = """\
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"frozen at exit: {gc.get_freeze_count() > 0}"))
from triton_doctor.cli import main
sys.argv = ["triton-doctor", *sys.argv[1:]]
sys.exit(main())
"""


def test_the_process_run_writes_its_report_then_freezes(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, "check", "--format", "json",
                           "--no-cache", "-o", str(report), str(DEMO)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert json.loads(report.read_text())["summary"]["models"] > 1
    assert proc.stderr.endswith("frozen at exit: True")


#: A module whose teardown says so: the interpreter frees it, and runs its __del__, at exit.
CANARY = """\
import sys
class Canary:
    def __del__(self):
        sys.stderr.write("torn down")
sys.modules["canary"] = Canary()
from triton_doctor.cli import main
sys.argv = ["triton-doctor", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.parametrize("argv", [["check", "--format", "json", "--no-cache"],
                                  ["check", "--format", "json", "--jobs", "2", "--no-cache"]])
def test_a_check_process_ends_once_its_report_is_out(argv: list[str]) -> None:
    """Its whole report on stdout, its exit code, and no teardown after them."""
    proc = subprocess.run([sys.executable, "-c", CANARY, *argv, str(DEMO)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["summary"]["models"] > 1
    assert "torn down" not in proc.stderr


def test_a_profiled_check_returns_to_its_profiler(tmp_path: Path) -> None:
    """``python -m cProfile`` prints its statistics once the program returns."""
    script = tmp_path / "run.py"
    script.write_text(CANARY)
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-s", "cumulative", str(script),
                           "check", "--format", "json", "--no-cache", str(DEMO)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert '"summary"' in proc.stdout and "function calls" in proc.stdout, proc.stderr[-2000:]


def test_other_subcommands_are_torn_down_as_usual() -> None:
    proc = subprocess.run([sys.executable, "-c", CANARY, "rules", "--format", "json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and json.loads(proc.stdout)
    assert proc.stderr == "torn down"


def test_a_run_given_its_arguments_freezes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    before = gc.get_freeze_count()
    assert cli.main(["rules", "--format", "json"]) == 0
    assert gc.get_freeze_count() == before


def test_a_check_pauses_the_collector_while_it_reads_and_judges(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Paused while the models are read and judged, and as it was once the check is over."""
    from triton_doctor import result_cache
    from triton_doctor.checks import model_dir

    seen: list[bool] = []
    read, judge = model_dir.collect_model, result_cache._run

    def reading(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return read(*args, **kwargs)  # type: ignore[arg-type]

    def judging(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return judge(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(model_dir, "collect_model", reading)
    monkeypatch.setattr(result_cache, "_run", judging)
    assert gc.isenabled()
    assert cli.main(["check", "--format", "json", "--no-cache", "--jobs", "1", str(DEMO)]) == 1
    assert seen and not any(seen)
    assert gc.isenabled()


def test_no_collection_walks_what_a_check_made(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Paused from reading through the report, and once resumed, what the check made is in the
    oldest generation: from its first model read to its end, no collection runs, not even
    the one the paused collector's count would start at once (all of it in the youngest
    generation)."""
    from triton_doctor.checks import model_dir

    started: list[int] = []
    reading = [False]
    read = model_dir.collect_model

    def first_read(*args: object, **kwargs: object) -> object:
        reading[0] = True
        return read(*args, **kwargs)  # type: ignore[arg-type]

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and reading[0]:
            started.append(info["generation"])

    monkeypatch.setattr(model_dir, "collect_model", first_read)
    gc.callbacks.append(seen)
    try:
        assert cli.main(["check", "--format", "json", "--no-cache", "--jobs", "1", str(DEMO)]) == 1
    finally:
        gc.callbacks.remove(seen)
    assert reading[0] and started == []
    assert gc.isenabled() and gc.get_freeze_count() == 0
