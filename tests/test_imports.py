"""Start-up budgets: what each subcommand imports, as ``python -X importtime`` reports it.

A one-model ``check`` should take little more than the interpreter's own start
(bench/cold_start.py measures that). Time is not asserted here, the machine being shared;
what is imported is: each subcommand names the modules it must not import, and caps how many
modules it imports beyond ``python -c pass``, so that an import added at the top of a module
that a path does not need fails here. ``inspect`` is not named: ``dataclasses`` imports it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from triton_doctor.checks.model_fingerprint import SETTLE_NS

from tests.helpers import DEMO

HEAVY = ("textual", "tritonclient.http", "tritonclient.grpc", "grpc", "docker", "pynvml", "onnx",
         "requests", "psutil", "prometheus_client", "numpy", "http.client", "ssl", "socket")
#: What no offline subcommand uses: the live side (its Evidence, collectors and front-ends),
#: readers of model kinds a repository of one ONNX model lacks, what only an error, a
#: baseline or --statistics needs, and shutil (argparse's formatter finds the terminal's width
#: with it, cli's without).
OFFLINE = (*HEAVY, "triton_doctor.live_evidence", "triton_doctor.tui", "triton_doctor.exporter",
           "triton_doctor.alerts", "triton_doctor.checks.live", "triton_doctor.checks.server",
           "triton_doctor.checks.metrics", "triton_doctor.checks.gpu",
           "triton_doctor.checks.container", "triton_doctor.checks.host",
           "triton_doctor.checks.logs", "triton_doctor.checks.log_scan",
           "triton_doctor.checks.fleet", "triton_doctor.checks.poll",
           "triton_doctor.checks.prometheus", "triton_doctor.baseline",
           "triton_doctor.report.baselined", "triton_doctor.report.statistics",
           "triton_doctor.docs", "difflib", "xml.etree", "pickletools", "shutil")
#: Report formats, each imported only by a run that writes it.
TEXT = ("triton_doctor.report.text", "triton_doctor.report.several", "textwrap")
PLATFORMS = ("triton_doctor.report.platforms", "triton_doctor.report.sarif",
             "triton_doctor.report.github", "triton_doctor.report.gitlab",
             "triton_doctor.report.junit")
#: What listing or explaining rules never needs: collectors, reports, the config schema.
NO_REPOSITORY = ("triton_doctor.checks", "triton_doctor.report", "google.protobuf.descriptor_pool",
                 "hashlib")
#: What judging a repository alone never needs: the rules of a server, a log or a fleet, and
#: the models of what they read; and the readers of what a repository of one ONNX model lacks
#: (plans, OpenVINO IR, TorchScript zips, a model.py).
STATIC = ("triton_doctor.rules.fleet", "triton_doctor.rules.reachability",
          "triton_doctor.rules.resources", "triton_doctor.rules.server_log",
          "triton_doctor.rules.serving", "triton_doctor.triton.server_model",
          "triton_doctor.triton.fleet_model", "triton_doctor.triton.server_log",
          "triton_doctor.checks.formats.openvino", "triton_doctor.checks.formats.tensorrt",
          "triton_doctor.checks.formats.torchscript", "zipfile",
          "triton_doctor.checks.python_source", "ast")
#: What printing the version never needs: the commands and what they run.
NO_COMMAND = ("triton_doctor.commands", "triton_doctor.invocation", "triton_doctor.engine",
              "triton_doctor.catalogue", "triton_doctor.evidence", "triton_doctor.settings",
              "triton_doctor.triton")

#: Subcommand (``{repo}``: a repository of one ONNX model) -> the most modules it may import
#: beyond ``python -c pass``, and the modules it must not import (a package stands for its
#: submodules).
BUDGETS: dict[str, tuple[int, tuple[str, ...]]] = {
    "check {repo} --format json --exit-zero": (108, (*OFFLINE, *STATIC, *TEXT, *PLATFORMS)),
    "check {repo} --format text --exit-zero": (111, (*OFFLINE, *STATIC, *PLATFORMS)),
    # SARIF lists every rule, so it imports every family.
    "check {repo} --format sarif --exit-zero": (129, (
        *OFFLINE, *TEXT, "triton_doctor.report.github", "triton_doctor.report.gitlab",
        "triton_doctor.report.junit")),
    "config {repo}/resnet50": (122, (*OFFLINE, *STATIC, "triton_doctor.report")),
    "rules": (85, (*OFFLINE, *NO_REPOSITORY)),
    "explain TD301": (94, (*OFFLINE, *NO_REPOSITORY)),
    "--version": (17, (*OFFLINE, *NO_REPOSITORY, *NO_COMMAND, "triton_doctor.rules")),
}


def _imports(args: list[str], cache: Path) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    """The modules a run imports, in order, and the run; ``cache``: its own (empty) cache
    directory, so that the run reads and parses what a first run does."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    modules = [line.split("|")[2].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "imported package" not in line]
    return modules, proc


@pytest.fixture(scope="module")
def one_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repository = tmp_path_factory.mktemp("one-model") / "repo"
    shutil.copytree(DEMO / "resnet50", repository / "resnet50")
    return repository


@pytest.fixture(scope="module")
def interpreter_start(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    modules, _ = _imports(["-c", "pass"], tmp_path_factory.mktemp("cache"))
    assert "site" in modules  # -X importtime is read as it is written
    return set(modules)


@pytest.mark.parametrize("command", sorted(BUDGETS))
def test_a_subcommand_imports_within_its_budget(command: str, one_model: Path,
                                                 interpreter_start: set[str],
                                                 tmp_path: Path) -> None:
    cap, forbidden = BUDGETS[command]
    args = command.format(repo=one_model).split()
    modules, proc = _imports(["-m", "triton_doctor", *args], tmp_path)
    assert proc.returncode in (0, 1) and proc.stdout, proc.stderr[-2000:]  # 1: refusals
    if "json" in args:
        assert json.loads(proc.stdout)["summary"]["models"] == 1
    unwanted = [m for m in modules
                if any(m == name or m.startswith(f"{name}.") for name in forbidden)]
    assert not unwanted, f"{command} imports {unwanted}"
    added = [m for m in dict.fromkeys(modules) if m not in interpreter_start]
    assert len(added) <= cap, f"{command} imports {len(added)} modules (budget {cap}): {added}"


#: What a re-run answered by the cache never needs: judging, reading models, OpenSSL's hashes
#: (hashlib), pickling.
ANSWERED = ("triton_doctor.engine", "triton_doctor.triton.repository_model",
            "triton_doctor.triton.model_config", "triton_doctor.checks.model_dir", "hashlib",
            "pickle", "threading")


def test_a_rerun_answered_by_the_cache_imports_no_judging(one_model: Path,
                                                          tmp_path: Path) -> None:
    time.sleep(SETTLE_NS / 1e9 + 0.2)  # files younger than this are not cached
    args = ["-m", "triton_doctor", "check", str(one_model), "--format", "json", "--exit-zero"]
    first, _ = _imports(args, tmp_path)
    again, proc = _imports(args, tmp_path)
    assert "triton_doctor.engine" in first and json.loads(proc.stdout)["summary"]["models"] == 1
    assert [m for m in again if m in ANSWERED] == []


def test_the_budget_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The parse of -X importtime finds a module imported on the way (here by ``-c``)."""
    modules, proc = _imports(["-c", "import difflib"], tmp_path)
    assert proc.returncode == 0 and "difflib" in modules


def test_check_does_not_import_heavy_modules() -> None:
    probe = (  # told at exit: the check's process is not torn down when nothing is left to run
        "import atexit, sys, runpy\n"
        f"sys.argv = ['triton-doctor', 'check', '--format', 'json', '--exit-zero', {str(DEMO)!r}]\n"
        f"heavy = lambda: [m for m in {HEAVY!r} if m in sys.modules]\n"
        "atexit.register(lambda: sys.stderr.write('HEAVY=' + ','.join(heavy())))\n"
        "runpy.run_module('triton_doctor', run_name='__main__')\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert '"findings"' in proc.stdout
    assert proc.stderr.strip().endswith("HEAVY="), proc.stderr[-500:]
