"""TD601 under explicit model control, against a real tritonserver: a model never asked to load
and a version unloaded on request are choices, not failures; a load that fails is one."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.monitoring_harness import wait_until
from tests.python_models import ECHO_PY, write_models
from tests.server_harness import TritonServer

CONFIG = """backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


def _not_ready(url: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "triton_doctor", "check", "--url", url,
                           "--window", "0.2", "--format", "json", "--exit-zero"],
                          capture_output=True, text=True, timeout=60, check=True)
    return {f["model"] for f in json.loads(proc.stdout)["findings"] if f["rule"] == "TD601"}


def _index(server: TritonServer) -> list[dict[str, str]]:
    return list(json.loads(server.post("/v2/repository/index", b"{}")[1]))


def test_models_left_unloaded_on_purpose_are_not_reported(
        triton_server: Callable[..., TritonServer], tmp_path: Path) -> None:
    repository = write_models(tmp_path / "models", {
        "served": (CONFIG, ECHO_PY), "spare": (CONFIG, ECHO_PY), "retired": (CONFIG, ECHO_PY),
        "broken": (CONFIG.replace("[ 4 ] } ]\noutput", "[ 0 ] } ]\noutput"), ECHO_PY)})
    server = triton_server(repository, "--model-control-mode=explicit", "--load-model=served",
                           "--load-model=retired")
    assert server.post("/v2/repository/models/retired/unload", b"{}")[0] == 200
    assert _not_ready(server.http_url) == set()  # while it unloads, too
    wait_until(lambda: {"name": "retired", "version": "1", "state": "UNAVAILABLE",
                        "reason": "unloaded"} in _index(server), 30, "retired unloaded")
    assert {"name": "spare"} in _index(server)  # never asked to load: no state
    assert _not_ready(server.http_url) == set()

    assert not server.load("broken").ok
    assert _not_ready(server.http_url) == {"broken"}
