"""``triton-doctor config MODEL_DIR --gpus 0`` against what the real server serves on CPU.

One explicit-mode server (2.51.0) loads every model of :data:`EFFECTIVE_CONFIG_CASES` and
answers ``GET /v2/models/<m>/config``; ``triton-doctor config`` runs on each model directory
meanwhile. Both are compared as parsed ModelConfig messages: the server prints every scalar
(``runtime: ""``, ``priority: PRIORITY_DEFAULT`` ...), which in proto3 equals leaving it unset.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from google.protobuf import json_format, text_format
from triton_doctor.triton import model_config

from .cases import EFFECTIVE_CONFIG_CASES, Case
from .oracle import TritonServer, load_all, write_repository

EXPLICIT_MODE = ("--model-control-mode=explicit", "--exit-on-error=false")


@dataclass
class Served:
    """What the server and triton-doctor said about each model."""

    states: dict[str, str]
    errors: dict[str, str | None]
    served: dict[str, Any]
    """The JSON of ``GET /v2/models/<m>/config`` per READY model."""
    doctor: dict[str, subprocess.CompletedProcess[str]]


def _doctor_config(path: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "triton_doctor", "config", path, "--gpus", "0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def served(
    triton_server: Callable[..., TritonServer], tmp_path_factory: pytest.TempPathFactory
) -> Served:
    repository = write_repository(
        tmp_path_factory.mktemp("effective") / "repository", EFFECTIVE_CONFIG_CASES
    )
    names = [case.name for case in EFFECTIVE_CONFIG_CASES]
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending = {name: pool.submit(_doctor_config, str(repository / name)) for name in names}
        server = triton_server(repository, *EXPLICIT_MODE, wait_for="/v2/health/live")
        try:
            result = load_all(server, names)
            configs = {
                name: server.get_json(f"/v2/models/{name}/config")
                for name in names
                if result.states.get((name, "1")) == "READY"
            }
        finally:
            server.stop(grace=1.0)  # a graceful exit waits for every stub: seconds for nothing
        doctor = {name: future.result() for name, future in pending.items()}
    states = {name: result.states.get((name, "1"), "") for name in names}
    errors = {name: load.error for name, load in result.loads.items()}
    return Served(states, errors, configs, doctor)


def _from_server(answer: Any) -> Any:
    config = model_config.new_config()
    json_format.ParseDict(answer, config, ignore_unknown_fields=True)
    return config


def _from_doctor(text: str) -> Any:
    config = model_config.new_config()
    text_format.Parse(text, config)
    return config


@pytest.mark.parametrize("case", EFFECTIVE_CONFIG_CASES, ids=lambda case: case.name)
def test_config_is_what_the_server_serves(served: Served, case: Case) -> None:
    assert served.states[case.name] == "READY", (
        f"the server did not load {case.name}: {served.errors[case.name]}"
    )
    proc = served.doctor[case.name]
    assert proc.returncode == 0, f"triton-doctor config {case.name}: {proc.stderr}"
    expected = _from_server(served.served[case.name])
    got = _from_doctor(proc.stdout)
    assert got == expected, (
        f"{case.name}: triton-doctor config printed\n{proc.stdout}\n"
        f"the server serves\n{text_format.MessageToString(expected)}"
    )
