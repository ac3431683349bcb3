"""The simulated fleet (fixtures/generate/fleet_sim.py), and ``check --prometheus`` on it.

First the simulator itself, which the fleet tests and bench/fleet.py trust: its pages parse
with the project's own parser and with prometheus_client's, its counters only grow and agree
with each other, and each anomaly changes what it says and nothing else.

Then the real Prometheus scraping 24 simulated replicas (3 models each, every second), split
into four jobs of six: a healthy fleet, one whose replica's GPU memory fills, one with a
replica down, one with a lightly loaded replica. ``check --prometheus --selector
'{job="..."}' --window 20s --format json`` must find TD903, TD904 and TD905 on exactly the sick
replica (its ``instance`` in the JSON) and no TD9xx finding on the healthy fleet. One
simulator and one Prometheus serve the module: the checks run once Prometheus holds a window.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from triton_doctor.checks.metrics import parse_metrics

from fixtures.generate.fleet_sim import (
    GPU_TOTAL_BYTES,
    Anomaly,
    Fleet,
    FleetServer,
    prometheus_config,
    scrape_job,
)
from tests.monitoring_harness import get, start_prometheus, wait_until

PER_MODEL = {
    "nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
    "nv_inference_exec_count", "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us", "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us", "nv_inference_compute_output_duration_us",
    "nv_inference_pending_request_count",
}
PER_GPU = {"nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes",
           "nv_gpu_power_usage", "nv_gpu_power_limit", "nv_energy_consumption"}
MACHINE = {"nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes",
           "nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"}
SUMMARIES = {f"nv_inference_{stage}_summary_us" for stage in
             ("request", "queue", "compute_input", "compute_infer", "compute_output")}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of a page, by name and label set, read by the project's parser."""
    scrape = parse_metrics(text, at=0.0)
    assert scrape.bad_lines == 0 and scrape.unread_lines == 0
    return {(s.name, frozenset(s.labels.items())): s.value for s in scrape.samples}


def page(fleet: Fleet, index: int, t: float) -> str:
    status, body = fleet.respond(index, t)
    assert status == 200
    return body.decode()


def value(found: Samples, name: str, **labels: str) -> float:
    """The sum of ``name`` over the samples carrying ``labels`` (e.g. all failure reasons)."""
    matched = [v for (n, ls), v in found.items()
               if n == name and set(labels.items()) <= ls]
    assert matched, (name, labels)
    return sum(matched)


def per_request(fleet: Fleet, index: int, name: str, model: str, t0: float,
                t1: float) -> float:
    """``name``'s growth per successful request of ``model`` between ``t0`` and ``t1``."""
    first, last = samples(page(fleet, index, t0)), samples(page(fleet, index, t1))
    grown = value(last, name, model=model) - value(first, name, model=model)
    requests = (value(last, "nv_inference_request_success", model=model)
                - value(first, "nv_inference_request_success", model=model))
    return grown / requests


def rate(fleet: Fleet, index: int, name: str, t0: float, t1: float, **labels: str) -> float:
    first, last = samples(page(fleet, index, t0)), samples(page(fleet, index, t1))
    return (value(last, name, **labels) - value(first, name, **labels)) / (t1 - t0)


# --- the simulator ----------------------------------------------------------------------------


def test_a_page_parses_cleanly_with_triton_families_and_labels() -> None:
    text = page(Fleet(2, 4, gpus=2, summaries=True), 1, 30.0)
    found = samples(text)
    names = {name for name, _ in found}
    assert names >= PER_MODEL | PER_GPU | MACHINE
    assert {f"{name}_count" for name in SUMMARIES} <= names
    models = {dict(labels).get("model") for name, labels in found if name in PER_MODEL}
    assert models == {"m00", "m01", "m02", "m03"}
    for (name, labels), _ in found.items():
        keys = {key for key, _ in labels}
        if name in PER_MODEL:
            assert keys == ({"model", "version", "reason"}
                            if name == "nv_inference_request_failure" else {"model", "version"})
        if name in PER_GPU:
            assert keys == {"gpu_uuid"}
    uuids = {dict(labels)["gpu_uuid"] for name, labels in found if name in PER_GPU}
    assert len(uuids) == 2 and all(u.startswith("GPU-") for u in uuids)
    # Label order as Triton prints it (its labels are a sorted map; quantile comes last).
    assert 'model="m00",reason="BACKEND",version="1"}' in text
    assert 'model="m00",version="1",quantile="0.99"}' in text


def test_prometheus_client_reads_the_page_with_its_types() -> None:
    text = page(Fleet(1, 2, summaries=True), 0, 10.0)
    types = {family.name: family.type for family in text_string_to_metric_families(text)}
    assert types["nv_inference_request_success"] == "counter"
    assert types["nv_gpu_memory_used_bytes"] == "gauge"
    assert types["nv_energy_consumption"] == "counter"
    assert types["nv_inference_request_summary_us"] == "summary"


def test_counters_only_grow_and_agree_with_each_other() -> None:
    fleet = Fleet(3, 5, summaries=True)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", page(fleet, 0, 1.0), re.MULTILINE))
    growing = {name for name, kind in types.items() if kind == "counter"} | {
        f"{name}{end}" for name, kind in types.items() if kind == "summary"
        for end in ("_count", "_sum")}
    assert "nv_inference_request_summary_us_sum" in growing
    for index in range(3):
        before, after = samples(page(fleet, index, 100.0)), samples(page(fleet, index, 160.0))
        assert before.keys() == after.keys()
        for key, earlier in before.items():
            if key[0] in growing:
                assert after[key] >= earlier, key
        for model in fleet.models:
            latency = per_request(fleet, index, "nv_inference_request_duration_us", model,
                                  100.0, 160.0)
            parts = sum(per_request(fleet, index, name, model, 100.0, 160.0) for name in (
                "nv_inference_queue_duration_us", "nv_inference_compute_input_duration_us",
                "nv_inference_compute_infer_duration_us",
                "nv_inference_compute_output_duration_us"))
            assert parts == pytest.approx(latency, rel=0.01)
            assert 0 < per_request(fleet, index, "nv_inference_queue_duration_us", model,
                                   100.0, 160.0) < latency / 2
            assert per_request(fleet, index, "nv_inference_count", model, 100.0, 160.0) >= 0.99
            assert per_request(fleet, index, "nv_inference_exec_count", model, 100.0,
                               160.0) <= 1.01
            assert rate(fleet, index, "nv_inference_request_failure", 100.0, 160.0,
                        model=model) == 0


def test_healthy_replicas_differ_by_a_few_percent_and_the_seed_decides() -> None:
    fleet = Fleet(8, 3)
    for model in fleet.models:
        rates = [rate(fleet, i, "nv_inference_request_success", 0.0, 600.0, model=model)
                 for i in range(8)]
        assert 1.0 < max(rates) / min(rates) < 1.07
    assert Fleet(2, 3, seed=1).respond(1, 50.0) == Fleet(2, 3, seed=1).respond(1, 50.0)
    assert Fleet(2, 3, seed=1).respond(1, 50.0) != Fleet(2, 3, seed=2).respond(1, 50.0)


def test_slow_multiplies_one_models_latency_from_since_without_a_jump() -> None:
    fleet = Fleet(2, 3, anomalies={1: Anomaly("slow", factor=4, model="m01", since=50)})
    name = "nv_inference_request_duration_us"
    for model, factor in (("m01", 4.0), ("m02", 1.0)):
        before = per_request(fleet, 1, name, model, 10.0, 40.0)
        after = per_request(fleet, 1, name, model, 60.0, 120.0)
        assert after / before == pytest.approx(factor, rel=0.01)
    # Counters are continuous at `since`: a scrape just before and just after agree.
    just_before, just_after = samples(page(fleet, 1, 49.999)), samples(page(fleet, 1, 50.001))
    for key, earlier in just_before.items():
        if key[0] == name:
            assert 0 <= just_after[key] - earlier <= 0.01 * earlier + 10


def test_failing_light_and_version_change_their_replica_only() -> None:
    fleet = Fleet(4, 2, anomalies={1: Anomaly("failing", factor=0.2),
                                   2: Anomaly("light", factor=0.25, model="m00"),
                                   3: Anomaly("version", model="m01", version="7")})
    failed = rate(fleet, 1, "nv_inference_request_failure", 0, 500, model="m00", reason="BACKEND")
    succeeded = rate(fleet, 1, "nv_inference_request_success", 0, 500, model="m00")
    assert failed / (failed + succeeded) == pytest.approx(0.2, rel=0.01)
    assert rate(fleet, 1, "nv_inference_request_failure", 0, 500, reason="REJECTED") == 0
    light = rate(fleet, 2, "nv_inference_request_success", 0, 500, model="m00")
    peer = rate(fleet, 0, "nv_inference_request_success", 0, 500, model="m00")
    assert 0.2 < light / peer < 0.3
    assert rate(fleet, 2, "nv_inference_request_success", 0, 500, model="m01") == pytest.approx(
        rate(fleet, 0, "nv_inference_request_success", 0, 500, model="m01"), rel=0.07)
    versions = {(dict(ls)["model"], dict(ls)["version"]) for name, ls in samples(
        page(fleet, 3, 5.0)) if name == "nv_inference_count"}
    assert versions == {("m00", "1"), ("m01", "7")}


def test_gpu_fill_grows_at_its_rate_until_full() -> None:
    fleet = Fleet(2, 1, anomalies={0: Anomaly("gpu_fill", bytes_per_s=1e9, start_share=0.5,
                                              since=10)})
    used = {t: value(samples(page(fleet, 0, t)), "nv_gpu_memory_used_bytes")
            for t in (0.0, 9.0, 10.0, 20.0, 1000.0)}
    assert used[0.0] == used[9.0] < 0.6 * GPU_TOTAL_BYTES
    assert used[10.0] == pytest.approx(0.5 * GPU_TOTAL_BYTES, abs=1)
    assert used[20.0] - used[10.0] == pytest.approx(10e9, abs=1)
    assert used[1000.0] == GPU_TOTAL_BYTES
    steady = {value(samples(page(fleet, 1, t)), "nv_gpu_memory_used_bytes") for t in (0, 500)}
    assert len(steady) == 1


def test_down_and_gone_answer_500_and_404_over_http() -> None:
    fleet = Fleet(3, 1, anomalies={1: Anomaly("down"), 2: Anomaly("gone", since=1e9)})
    with FleetServer(fleet) as server:
        assert b"nv_inference_count" in get(server.url(0))
        assert b"nv_inference_count" in get(server.url(2))  # gone only from `since` on
        for url, status in ((server.url(1), 500), (server.url(9), 404),
                            (server.url(0).replace("/metrics", "/other"), 404)):
            with pytest.raises(urllib.error.HTTPError) as error:
                get(url)
            assert error.value.code == status
    assert fleet.respond(2, 2e9)[0] == 404


def test_anomaly_from_the_command_line() -> None:
    assert Anomaly.parse("3:slow:factor=4,model=m02") == (3, Anomaly("slow", 4.0, "m02"))
    assert Anomaly.parse("0:down") == (0, Anomaly("down"))
    with pytest.raises(ValueError, match="not one of"):
        Anomaly.parse("1:melting")
    with pytest.raises(ValueError, match="the fleet has 2"):
        Fleet(2, 1, anomalies={5: Anomaly("down")})


def test_prometheus_config_gives_each_replica_its_instance() -> None:
    config = yaml.safe_load(prometheus_config(9000, "fleet", 3, 1.0,
                                              more_jobs=[scrape_job(9001, "other", [7])]))
    assert config["global"] == {"scrape_interval": "1000ms", "scrape_timeout": "1000ms"}
    jobs = {job["job_name"]: job["static_configs"] for job in config["scrape_configs"]}
    assert [group["labels"] for group in jobs["fleet"]] == [
        {"__metrics_path__": f"/replica/{i}/metrics", "instance": f"triton-{i}:8002"}
        for i in range(3)]
    assert {tuple(group["targets"]) for group in jobs["fleet"]} == {("127.0.0.1:9000",)}
    assert jobs["other"][0]["labels"]["instance"] == "triton-7:8002"


# --- check --prometheus on the simulated fleet -------------------------------------------------

WINDOW_S = 20
WINDOW = f"{WINDOW_S}s"
REPLICAS_PER_JOB = 6
#: Job -> (first replica index, the sick replica's index and anomaly).
SCENARIOS: dict[str, tuple[int, tuple[int, Anomaly] | None]] = {
    "sim-healthy": (0, None),
    # 70 MB/s from 30 % of 86 GB: full in ~14 min (a warning, not yet an error), and 1.4 GB
    # over the window, past TD903's 1 % of the GPU.
    "sim-gpu-fill": (6, (7, Anomaly("gpu_fill", bytes_per_s=70e6, start_share=0.3))),
    "sim-down": (12, (14, Anomaly("down"))),
    "sim-light": (18, (21, Anomaly("light", factor=0.2))),
}


@dataclass
class Checked:
    """One ``check --prometheus`` run on a job."""

    returncode: int
    stdout: str
    stderr: str

    def findings(self) -> list[dict[str, Any]]:
        assert self.returncode in (0, 1), self.describe()
        return list(json.loads(self.stdout)["findings"])

    def on(self, rule: str) -> set[str | None]:
        """The instances ``rule`` found something on."""
        return {f.get("instance") for f in self.findings() if f["rule"] == rule}

    def describe(self) -> str:
        return f"exit {self.returncode}\nstdout: {self.stdout[-4000:]}\nstderr: {self.stderr}"


def _held(url: str) -> dict[str, float]:
    """Samples of ``up`` Prometheus holds over the window and 5 s more, per instance of the
    sim jobs: the check reads each series at the window's start too (Prometheus scrapes a
    target first some seconds after it starts)."""
    query = urllib.parse.urlencode(
        {"query": f'count_over_time(up{{job=~"sim-.+"}}[{WINDOW_S + 5}s])'})
    answer = json.loads(get(f"{url}/api/v1/query?{query}"))
    return {row["metric"]["instance"]: float(row["value"][1])
            for row in answer["data"]["result"]}


@pytest.fixture(scope="module")
def checked(prometheus: str) -> Iterator[dict[str, Checked]]:
    """Every scenario checked once, after Prometheus holds a window of every replica."""
    anomalies = dict(sick for _, sick in SCENARIOS.values() if sick is not None)
    fleet = Fleet(REPLICAS_PER_JOB * len(SCENARIOS), 3, anomalies=anomalies, seed=16)
    with FleetServer(fleet) as server, tempfile.TemporaryDirectory() as work:
        (job, (first, _)), *others = SCENARIOS.items()
        config = prometheus_config(
            server.port, job, range(first, first + REPLICAS_PER_JOB), 1.0,
            more_jobs=[scrape_job(server.port, other, range(start, start + REPLICAS_PER_JOB))
                       for other, (start, _) in others])
        service = start_prometheus(config, Path(work))
        try:
            wait_until(lambda: len(held := _held(service.url)) == len(fleet.replicas)
                       and min(held.values()) >= WINDOW_S + 3, 60, "Prometheus holding a window",
                       every=1.0)
            yield {job: _check(service.url, job) for job in SCENARIOS}
        finally:
            service.stop()


def _check(url: str, job: str) -> Checked:
    proc = subprocess.run(
        [sys.executable, "-m", "triton_doctor", "check", "--prometheus", url,
         "--selector", f'{{job="{job}"}}', "--window", WINDOW, "--format", "json"],
        capture_output=True, text=True, timeout=60, check=False)
    return Checked(proc.returncode, proc.stdout, proc.stderr)


def _instance(index: int) -> str:
    return f"triton-{index}:8002"


def test_a_healthy_simulated_fleet_has_no_fleet_finding(checked: dict[str, Checked]) -> None:
    run = checked["sim-healthy"]
    assert [f for f in run.findings() if f["rule"].startswith("TD9")] == [], run.describe()
    assert run.returncode == 0, run.describe()


def test_the_filling_gpu_is_found_on_its_replica_only(checked: dict[str, Checked]) -> None:
    run = checked["sim-gpu-fill"]
    assert run.on("TD903") == {_instance(7)}, run.describe()
    finding = next(f for f in run.findings() if f["rule"] == "TD903")
    assert finding["severity"] == "warning", run.describe()  # full in ~14 min, not under 10


def test_the_down_replica_is_found_as_an_error(checked: dict[str, Checked]) -> None:
    run = checked["sim-down"]
    assert run.on("TD904") == {_instance(14)}, run.describe()
    assert {f["severity"] for f in run.findings() if f["rule"] == "TD904"} == {"error"}
    assert run.returncode == 1, run.describe()


def test_the_light_replica_is_the_imbalance(checked: dict[str, Checked]) -> None:
    run = checked["sim-light"]
    assert run.on("TD905") == {_instance(21)}, run.describe()
    assert not run.on("TD904") and not run.on("TD903"), run.describe()
