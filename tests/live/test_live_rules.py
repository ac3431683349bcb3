"""The live rules against a real tritonserver, each condition induced for real.

One server runs models that each misbehave in one way while clients load them in threads:
a slow model hammered by eight clients (queue backlog), a slower one hammered so that fewer
than ``min-requests`` complete in the window (a backlog judged on what waits) next to the same
model with one client (no backlog), a batching model fed one request at a
time (low batch efficiency) next to the same model fed by eight clients (real batching), a
model that raises on some inputs (failure rate), models that fail to load, a system
shared-memory region a client registered and never unregistered, and a /dev/shm file nobody
uses. ``triton-doctor check --url`` runs while the load goes on, and every rule must fire on
its model and stay silent on the healthy, lightly loaded one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.python_models import (
    ECHO_PY,
    SLOW_PY,
    Load,
    failing_on_negative,
    infer,
    wait_ready,
    write_models,
)
from tests.server_harness import TritonServer

FLAKY_PY = failing_on_negative("negative input")
CRAWL_PY = SLOW_PY.replace("time.sleep(0.05)", "time.sleep(0.25)")
RAISES_PY = '''
class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("cannot open the tokenizer")

    def execute(self, requests):
        return []
'''
IO = """
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""
BATCHER = 'backend: "python"\nmax_batch_size: 8\n' + IO + (
    "dynamic_batching { max_queue_delay_microseconds: 20000 }\n"
)
MODELS = {
    "slow": ('backend: "python"\nmax_batch_size: 0\n' + IO, SLOW_PY),
    "crawling": ('backend: "python"\nmax_batch_size: 0\n' + IO, CRAWL_PY),
    "crawling_alone": ('backend: "python"\nmax_batch_size: 0\n' + IO, CRAWL_PY),
    "one_at_a_time": (BATCHER, ECHO_PY),
    "batched": (BATCHER, ECHO_PY),
    "flaky": ('backend: "python"\nmax_batch_size: 0\n' + IO, FLAKY_PY),
    "healthy": ('backend: "python"\nmax_batch_size: 0\n' + IO, ECHO_PY),
    "init_raises": ('backend: "python"\nmax_batch_size: 0\n' + IO, RAISES_PY),
    "zero_dims": ('backend: "python"\nmax_batch_size: 0\n' + IO.replace("[ 4 ] } ]\noutput",
                                                                       "[ 0 ] } ]\noutput"),
                  ECHO_PY),
}


def _abandoned_region(url: str, key: str) -> None:
    """A client that creates a shared-memory region, registers it and exits without
    unregistering or unlinking it."""
    code = f"""
import json, mmap, os, urllib.request
fd = os.open("/dev/shm/{key}", os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, 4096)
mapped = mmap.mmap(fd, 4096)
body = json.dumps({{"key": "/{key}", "offset": 0, "byte_size": 4096}}).encode()
request = urllib.request.Request("{url}/v2/systemsharedmemory/region/{key}/register",
                                 data=body, method="POST")
urllib.request.urlopen(request, timeout=10).read()
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


@pytest.fixture(scope="module")
def incident(triton_server: Callable[..., TritonServer],
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    repository = tmp_path_factory.mktemp("live") / "models"
    server = triton_server(write_models(repository, MODELS), "--exit-on-error=false",
                          wait_for="/v2/health/live")
    wait_ready(server.http_url, "healthy")  # the good models are READY once it is
    suffix = uuid.uuid4().hex[:8]
    region_key = f"tdoctor_region_{suffix}"
    _abandoned_region(server.http_url, region_key)
    orphan = Path(f"/dev/shm/tdoctor_orphan_{suffix}")
    with open(orphan, "wb") as handle:
        handle.write(b"\0" * 8192)
    url = server.http_url
    load = Load()
    load.clients(8, lambda i: infer(url, "slow", 1.0, batched=False))
    load.clients(8, lambda i: infer(url, "crawling", 1.0, batched=False))
    load.clients(1, lambda i: infer(url, "crawling_alone", 1.0, batched=False))
    load.clients(1, lambda i: infer(url, "one_at_a_time"))
    load.clients(8, lambda i: infer(url, "batched"))
    load.clients(1, lambda i: infer(url, "flaky", -1.0 if i % 4 == 0 else 1.0, batched=False))
    load.clients(1, lambda i: infer(url, "healthy", batched=False), pause=0.05)
    time.sleep(1.0)  # every client has its first requests in flight
    healthy_before = _inferences(url, "healthy")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "triton_doctor", "check", "--url", url,
             "--metrics-url", server.metrics_url, "--window", "4", "--format", "json",
             "--exit-zero"],
            capture_output=True, text=True, timeout=120, check=False,
        )
        healthy_during = _inferences(url, "healthy") - healthy_before
        alone_served = _inferences(url, "crawling_alone")
    finally:
        load.end()
    yield {"proc": proc, "region": region_key, "orphan": orphan.name,
           "healthy_during": healthy_during, "alone_served": alone_served,
           "report": json.loads(proc.stdout) if proc.returncode == 0 else None}
    orphan.unlink(missing_ok=True)
    Path(f"/dev/shm/{region_key}").unlink(missing_ok=True)


def _inferences(url: str, model: str) -> int:
    with urllib.request.urlopen(f"{url}/v2/models/{model}/stats", timeout=10) as answer:
        return int(json.load(answer)["model_stats"][0]["inference_count"])


def _findings(incident: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    assert incident["report"] is not None, incident["proc"].stderr
    return [f for f in incident["report"]["findings"] if f["rule"] == rule]


def _models(incident: dict[str, Any], rule: str) -> set[str]:
    return {f["model"] for f in _findings(incident, rule)}


def test_check_runs_cleanly(incident: dict[str, Any]) -> None:
    proc = incident["proc"]
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert incident["report"]["target"]["server"].startswith("http://127.0.0.1:")


def test_queue_backlog_on_the_hammered_slow_model(incident: dict[str, Any]) -> None:
    assert _models(incident, "TD611") >= {"slow"}
    (finding,) = [f for f in _findings(incident, "TD611") if f["model"] == "slow"]
    assert finding["evidence"]["queue_share"] >= 0.5
    assert "instance" in finding["fix"]


def test_backlog_with_few_completions_is_an_error_with_its_pending_count(
        incident: dict[str, Any]) -> None:
    """0.25 s per request on one instance, eight clients: about 16 complete in the 4 s window,
    fewer than min-requests, while seven wait; the waiting requests are the evidence."""
    (finding,) = [f for f in _findings(incident, "TD611") if f["model"] == "crawling"]
    evidence = finding["evidence"]
    assert evidence["completed"] < 20
    assert evidence["pending_requests"] >= 4 and evidence["pending_at_start"] >= 1
    assert finding["severity"] == "error"
    assert f"{evidence['pending_requests']:g} pending now" in finding["message"]


def test_slow_model_with_one_client_is_not_backlogged(incident: dict[str, Any]) -> None:
    assert incident["alone_served"] >= 10  # busy all along, one request at a time
    assert not [f for f in incident["report"]["findings"] if f["model"] == "crawling_alone"]


def test_low_batch_efficiency_only_where_requests_come_one_at_a_time(
        incident: dict[str, Any]) -> None:
    flagged = _models(incident, "TD612")
    assert "one_at_a_time" in flagged and "batched" not in flagged
    (finding,) = [f for f in _findings(incident, "TD612") if f["model"] == "one_at_a_time"]
    assert finding["evidence"]["average_batch"] < 1.5
    assert "one at a time" in finding["message"]


def test_failure_rate_of_the_model_that_raises(incident: dict[str, Any]) -> None:
    (finding,) = [f for f in _findings(incident, "TD613") if f["model"] == "flaky"]
    assert 0.1 < finding["evidence"]["failure_share"] < 0.5


def test_models_that_failed_to_load_with_their_reasons(incident: dict[str, Any]) -> None:
    found = {f["model"]: f for f in _findings(incident, "TD601")}
    assert "cannot open the tokenizer" in (found["init_raises"]["triton_message"] or "")
    assert found["zero_dims"]["evidence"]["explained_by"] == "TD212"


def test_abandoned_shared_memory_region(incident: dict[str, Any]) -> None:
    regions = [f["evidence"]["region"] for f in _findings(incident, "TD711")
               if "region" in f["evidence"]]
    assert incident["region"] in regions


def test_orphaned_dev_shm_segment(incident: dict[str, Any]) -> None:
    segments = {f["evidence"]["segment"] for f in _findings(incident, "TD712")}
    assert incident["orphan"] in segments
    assert incident["region"] not in segments  # registered with the server: TD711's case


def test_healthy_lightly_loaded_model_gets_nothing(incident: dict[str, Any]) -> None:
    # Enough requests that the rate rules judge it (min-requests is 20 in the 4 s window).
    assert incident["healthy_during"] >= 40
    assert not [f for f in incident["report"]["findings"] if f["model"] == "healthy"]
