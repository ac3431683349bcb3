"""``check --prometheus`` on a real fleet, every part real: three tritonservers serving the same
model under the same request rate, scraped by Debian's Prometheus every second.

In the skewed trio one replica's model sleeps ten times longer (its latency per request is the
outlier, TD901) and one serves version 2 of the model where its peers serve version 1 (TD902).
A healthy trio (same model, version, speed and load) must give no fleet finding at all. The
trios run one after the other, each with its own Prometheus, so that the machine's two cores
serve one fleet at a time. Each check asks about a window Prometheus already holds: the answer
comes at once, with no window to wait.

A Prometheus that cannot be reached, that answers garbage or HTTP 500, or that never answers,
must give exit 3 or a TD907 finding with a clear message, within --timeout, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import _missing
from tests.monitoring_harness import Service, binary, get, start_prometheus, wait_until
from tests.python_models import SLOW_PY, UNBATCHED, infer, kill, wait_ready
from tests.server_harness import TritonServer, _free_port

MODEL = "embed"
NORMAL_PY = SLOW_PY.replace("time.sleep(0.05)", "time.sleep(0.005)")
"""5 ms an execution: a healthy replica."""
SLOWED_PY = SLOW_PY
"""50 ms an execution, ten times the healthy replicas' (a sick node)."""
RATE_PER_REPLICA = 10.0
"""Requests a second to every replica: the slow one is busy half the time, so it keeps up and
only its latency differs from its peers'."""
WINDOW_S = 20
WINDOW = f"{WINDOW_S}s"
HELD_SAMPLES = 25
"""Scrapes (one a second) of the loaded fleet Prometheus holds before the check runs: more
than the window, so that Prometheus holds the window's start (else TD907 says it does not)."""
HELD_RANGE = f"{HELD_SAMPLES + 5}s"
"""The range those scrapes are counted over."""
SELECTOR = '{job="triton"}'
ANSWER_WITHIN_S = 10.0
"""The issue: the check answers in under 10 s, with no window to wait."""
TRACEBACK = "Traceback (most recent call last)"


@dataclass(frozen=True)
class Replica:
    """One replica: the model source it serves and the version directory it sits in."""

    source: str
    version: int = 1
    config: str = UNBATCHED


#: A parameter no backend reads: the slowed replica's copy of the repository drifted (TD906,
#: seen only with --ask-replicas, which reads the configs the replicas run).
DRIFTED = UNBATCHED + 'parameters { key: "rollout" value { string_value: "canary" } }\n'
SKEWED = {"steady": Replica(NORMAL_PY), "slowed": Replica(SLOWED_PY, config=DRIFTED),
          "other-version": Replica(NORMAL_PY, version=2)}
HEALTHY = {"a": Replica(NORMAL_PY), "b": Replica(NORMAL_PY), "c": Replica(NORMAL_PY)}


@dataclass
class CheckRun:
    """What ``check --prometheus`` did on a fleet, and what Prometheus held when it ran."""

    instances: dict[str, str]
    """Replica name -> its ``instance`` label (the metrics address, ``127.0.0.1:PORT``)."""
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    held: dict[str, dict[str, float]] = field(default_factory=dict)
    """Figures Prometheus answered for the window, per ``instance``: requests, versions,
    latency per request, samples held."""

    @property
    def report(self) -> dict[str, Any]:
        return dict(json.loads(self.stdout))

    def fleet_findings(self) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if f["rule"].startswith("TD9")]

    def on(self, rule: str) -> set[str | None]:
        """The instances ``rule`` found something on."""
        return {f.get("instance") for f in self.report["findings"] if f["rule"] == rule}

    def describe(self) -> str:
        """Everything a failed assertion should show: what ran and what Prometheus held."""
        return (f"exit {self.returncode} in {self.seconds:.2f} s; instances {self.instances};\n"
                f"Prometheus held {json.dumps(self.held, indent=1)}\n"
                f"stdout: {self.stdout[-6000:]}\nstderr: {self.stderr[-3000:]}")


class PacedLoad:
    """Requests to each replica on a fixed schedule (open loop: the n-th request is due at
    ``start + n / rate`` whatever the previous answer took), so that a slow replica receives as
    many requests as its peers and differs from them only in how long it takes."""

    def __init__(self, urls: list[str], rate: float, senders: int = 2) -> None:
        self.stop = threading.Event()
        self.sent = dict.fromkeys(urls, 0)
        self.failed = dict.fromkeys(urls, 0)
        self._lock = threading.Lock()
        start = time.monotonic()
        self.threads = [threading.Thread(target=self._send, daemon=True,
                                         args=(url, start + i / rate, senders / rate))
                        for url in urls for i in range(senders)]
        for thread in self.threads:
            thread.start()

    def _send(self, url: str, due: float, every: float) -> None:
        while not self.stop.wait(max(0.0, due - time.monotonic())):
            try:
                ok = infer(url, MODEL, 1.0, batched=False) == 200
            except OSError:
                ok = False
            with self._lock:
                self.sent[url] += 1
                self.failed[url] += not ok
            due += every

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


def _write_repository(root: Path, replica: Replica) -> Path:
    (root / MODEL / str(replica.version)).mkdir(parents=True)
    (root / MODEL / "config.pbtxt").write_text(replica.config)
    (root / MODEL / str(replica.version) / "model.py").write_text(replica.source)
    return root


def _prometheus_config(targets: dict[str, str]) -> str:
    """Each metrics address with its server's HTTP port as a target label (``http_port``), as
    a service discovery would label a pod, for --replica-url."""
    return yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "triton", "static_configs": [
            {"targets": [target], "labels": {"http_port": port}}
            for target, port in targets.items()]}],
    })


def query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    """An instant query's result vector, asked with urllib (the set-up's own view of what
    Prometheus holds, independent of the tool under test)."""
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    answer = json.loads(get(url))
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


def _by_instance(prometheus: str, promql: str) -> dict[str, float]:
    return {row["metric"]["instance"]: float(row["value"][1])
            for row in query(prometheus, promql)}


def _held(prometheus: str, instances: list[str]) -> dict[str, dict[str, float]]:
    """What Prometheus holds of the window for each replica: the set-up's sanity figures."""
    series = f'{{job="triton",model="{MODEL}"}}'
    figures = {
        "samples": _by_instance(prometheus, f"count_over_time(up{SELECTOR}[{HELD_RANGE}])"),
        "requests": _by_instance(prometheus, f"sum by (instance) (increase("
                                 f"nv_inference_request_success{series}[{WINDOW}]))"),
        "latency_ms": _by_instance(prometheus, f"sum by (instance) (rate("
                                   f"nv_inference_request_duration_us{series}[{WINDOW}])) / "
                                   f"sum by (instance) (rate("
                                   f"nv_inference_request_success{series}[{WINDOW}])) / 1000"),
    }
    versions = {row["metric"]["instance"]: float(row["metric"]["version"])
                for row in query(prometheus, f"nv_inference_request_success{series}")}
    return {instance: {**{name: values.get(instance, float("nan"))
                          for name, values in figures.items()},
                       "version": versions.get(instance, float("nan"))}
            for instance in instances}


def run_check(prometheus: str, *extra: str, timeout: float = 60) -> tuple[
        subprocess.CompletedProcess[str], float]:
    """``triton-doctor check --prometheus`` as a user runs it (a new process, so its wall time
    includes the interpreter's start); the process and its wall time in seconds."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "triton_doctor", "check", "--prometheus", prometheus,
         "--selector", SELECTOR, "--window", WINDOW, "--format", "json", *extra],
        capture_output=True, text=True, timeout=timeout, check=False)
    return proc, time.monotonic() - started


@pytest.fixture(scope="module")
def prometheus_binary() -> None:
    if binary("prometheus") is None:
        _missing("prometheus not installed: apt-get install prometheus (scripts/test.sh does)")


@contextlib.contextmanager
def _fleet(replicas: Mapping[str, Replica], triton_server: Callable[..., TritonServer],
           work: Path) -> Iterator[tuple[Service, dict[str, str]]]:
    """The replicas serving under :class:`PacedLoad`, and a Prometheus scraping them that
    holds :data:`HELD_SAMPLES` seconds of that load; everything stopped on exit."""
    servers: dict[str, TritonServer] = {}
    load: PacedLoad | None = None
    prometheus: Service | None = None
    try:
        for name, replica in replicas.items():  # started together, waited for together
            servers[name] = triton_server(_write_repository(work / name, replica),
                                          wait_for=None)
        for name, server in servers.items():
            try:
                wait_ready(server.http_url, MODEL)
            except OSError as error:
                raise RuntimeError(f"replica {name} not ready ({error}):\n"
                                   f"{server.log_tail()}") from error
        instances = {name: server.metrics_url.split("/")[2] for name, server in servers.items()}
        load = PacedLoad([server.http_url for server in servers.values()], RATE_PER_REPLICA)
        # Started under load: every sample it holds is of the loaded fleet.
        ports = {instances[name]: str(server.http_port) for name, server in servers.items()}
        prometheus = start_prometheus(_prometheus_config(ports), work)
        prom = prometheus.url
        wait_until(lambda: len(samples := _by_instance(
            prom, f"count_over_time(up{SELECTOR}[{HELD_RANGE}])")) == len(replicas)
            and min(samples.values()) >= HELD_SAMPLES, 90,
            f"Prometheus holding {HELD_SAMPLES} s of every replica", every=1.0)
        yield prometheus, instances
        assert not any(load.failed.values()), f"requests failed: {load.failed}"
    finally:
        if load is not None:
            load.end()
        if prometheus is not None:
            prometheus.stop()
        for server in servers.values():
            kill(server)


def _check_run(url: str, prometheus: str, instances: dict[str, str]) -> CheckRun:
    """The check asked at ``url``; what Prometheus (at ``prometheus``) held just after."""
    proc, seconds = run_check(url)
    held = _held(prometheus, list(instances.values()))
    return CheckRun(instances, proc.returncode, proc.stdout, proc.stderr, seconds, held)


@pytest.fixture(scope="module")
def skewed_runs(prometheus_binary: None, triton_server: Callable[..., TritonServer],
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckRun]:
    """The skewed trio, checked from its series alone (``series``) and with its replicas' own
    APIs read too (``asked``: --ask-replicas, each at the URL its target's ``http_port``
    label makes); stopped before the fixture returns, so that the next fleet has the machine
    to itself."""
    with _fleet(SKEWED, triton_server, tmp_path_factory.mktemp("skewed-fleet")) as (
            prometheus, instances):
        series = _check_run(prometheus.url, prometheus.url, instances)
        proc, seconds = run_check(prometheus.url, "--ask-replicas", "--replica-url",
                                  "http://{host}:{http_port}")
        asked = CheckRun(instances, proc.returncode, proc.stdout, proc.stderr, seconds,
                         _held(prometheus.url, list(instances.values())))
    return {"series": series, "asked": asked}


@pytest.fixture(scope="module")
def skewed(skewed_runs: dict[str, CheckRun]) -> CheckRun:
    return skewed_runs["series"]


@pytest.fixture(scope="module")
def asked(skewed_runs: dict[str, CheckRun]) -> CheckRun:
    return skewed_runs["asked"]


@pytest.fixture(scope="module")
def healthy(prometheus_binary: None, triton_server: Callable[..., TritonServer],
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckRun]:
    """The healthy trio checked directly (``direct``), and through a proxy that marks every
    answer of its Prometheus partial, as Thanos or Mimir do when a store does not answer
    (``partial``)."""
    with _fleet(HEALTHY, triton_server, tmp_path_factory.mktemp("healthy-fleet")) as (
            prometheus, instances):
        direct = _check_run(prometheus.url, prometheus.url, instances)
        proxy = _PartialProxy(prometheus.url)
        try:
            partial = _check_run(proxy.url, prometheus.url, instances)
        finally:
            proxy.stop()
    return {"direct": direct, "partial": partial}


def test_prometheus_holds_the_load_the_checks_judge(skewed: CheckRun) -> None:
    """The set-up itself, from Prometheus's answers: every replica got the same requests over
    the window, the slowed one takes several times as long per request, the other-version one
    reports version 2. Otherwise the assertions below would judge another scene."""
    held = {name: skewed.held[instance] for name, instance in skewed.instances.items()}
    expected = RATE_PER_REPLICA * WINDOW_S
    for name, figures in held.items():
        assert figures["samples"] >= HELD_SAMPLES, skewed.describe()
        assert 0.7 * expected <= figures["requests"], (name, skewed.describe())
    requests = [figures["requests"] for figures in held.values()]
    assert max(requests) <= 1.25 * min(requests), skewed.describe()
    peers = max(held["steady"]["latency_ms"], held["other-version"]["latency_ms"])
    assert held["slowed"]["latency_ms"] >= 5 * peers, skewed.describe()
    assert [held[name]["version"] for name in SKEWED] == [1, 1, 2], skewed.describe()


def test_the_slow_replica_is_the_outlier(skewed: CheckRun) -> None:
    assert skewed.on("TD901") == {skewed.instances["slowed"]}, skewed.describe()
    outlier = next(f for f in skewed.report["findings"] if f["rule"] == "TD901")
    assert outlier["name"] == "replica-outlier" and outlier["model"] == MODEL, skewed.describe()
    assert outlier["severity"] == "warning", skewed.describe()


def test_the_other_version_is_the_skew(skewed: CheckRun) -> None:
    assert skewed.on("TD902") == {skewed.instances["other-version"]}, skewed.describe()
    skew = next(f for f in skewed.report["findings"] if f["rule"] == "TD902")
    assert skew["name"] == "version-skew" and skew["model"] == MODEL, skewed.describe()


def test_the_skewed_fleet_has_no_other_fleet_finding(skewed: CheckRun) -> None:
    """Same load everywhere and every replica up: nothing imbalanced, down or partial."""
    others = {f["rule"] for f in skewed.fleet_findings()} - {"TD901", "TD902"}
    assert not others, skewed.describe()


def test_the_check_answers_at_once_with_the_exit_its_findings_say(skewed: CheckRun) -> None:
    assert skewed.seconds < ANSWER_WITHIN_S, skewed.describe()
    errors = [f for f in skewed.report["findings"] if f["severity"] == "error"]
    assert skewed.returncode == (1 if errors else 0), skewed.describe()
    assert skewed.report["summary"]["exit_code"] == skewed.returncode
    assert TRACEBACK not in skewed.stderr


def test_asked_replicas_show_their_config_drift_and_nothing_false(asked: CheckRun) -> None:
    """Each replica's API answered (no TD907), every model READY (no TD601 or TD602 on any
    replica), the slowed replica's drifted config is TD906 naming the field, and what the
    series showed is found as before."""
    assert asked.on("TD906") == {asked.instances["slowed"]}, asked.describe()
    drift = next(f for f in asked.report["findings"] if f["rule"] == "TD906")
    assert drift["evidence"]["fields"] == ["parameters"], asked.describe()
    assert not asked.on("TD601") | asked.on("TD602") | asked.on("TD907"), asked.describe()
    assert asked.on("TD901") == {asked.instances["slowed"]}, asked.describe()
    assert asked.on("TD902") == {asked.instances["other-version"]}, asked.describe()
    assert asked.seconds < ANSWER_WITHIN_S, asked.describe()


def test_a_healthy_trio_has_no_fleet_finding(healthy: dict[str, CheckRun]) -> None:
    run = healthy["direct"]
    requests = [figures["requests"] for figures in run.held.values()]
    assert min(requests) >= 0.7 * RATE_PER_REPLICA * WINDOW_S, run.describe()
    assert run.fleet_findings() == [], run.describe()
    assert run.returncode == 0, run.describe()
    assert run.seconds < ANSWER_WITHIN_S, run.describe()


def test_partial_answers_are_a_finding_not_a_verdict(healthy: dict[str, CheckRun]) -> None:
    """Every answer marked partial: TD907 quotes the engine's warning, and the healthy trio is
    still judged healthy (no outlier or skew made up from the data that did come)."""
    run = healthy["partial"]
    assert TRACEBACK not in run.stderr, run.describe()
    partial = [f for f in run.report["findings"] if f["rule"] == "TD907"]
    assert partial, run.describe()
    assert any(PARTIAL_WARNING in f["message"] for f in partial), run.describe()
    assert {f["rule"] for f in run.fleet_findings()} == {"TD907"}, run.describe()
    assert run.returncode == 0, run.describe()  # TD907 is a warning


PARTIAL_WARNING = "store 10.0.0.7:10901 did not answer: partial response"


class _PartialProxy(ThreadingHTTPServer):
    """Forwards every request to a real Prometheus and adds a ``warnings`` entry to each
    successful JSON answer, as Thanos's querier does when one of its stores is down."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        super().__init__(("127.0.0.1", 0), _Forwarding)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Forwarding(BaseHTTPRequestHandler):
    server: _PartialProxy

    def do_GET(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = urllib.request.Request(
            self.server.upstream + self.path, data=self.rfile.read(length) if length else None,
            headers={"Content-Type": self.headers.get("Content-Type",
                                                      "application/x-www-form-urlencoded")},
            method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        answer = json.loads(body)
        if answer.get("status") == "success":
            answer["warnings"] = [*answer.get("warnings", []), PARTIAL_WARNING]
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what the check made of the answers."""


# A Prometheus that cannot answer.

CHECK_TIMEOUT_S = 2.0
"""--timeout for the broken-Prometheus cases."""
WITHIN_TIMEOUT_S = CHECK_TIMEOUT_S + 5.0
"""--timeout plus the interpreter's start and the report, on a loaded CI machine."""


def _assert_clear_failure(proc: subprocess.CompletedProcess[str], url: str) -> None:
    """Exit 3 naming the URL, or a report with a TD907 finding; never a traceback."""
    shown = f"exit {proc.returncode}\nstdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
    assert TRACEBACK not in proc.stderr + proc.stdout, shown
    if proc.returncode == 3:
        assert url in proc.stderr, shown
        return
    assert proc.returncode in (0, 1), shown
    report = json.loads(proc.stdout)
    partial = [f for f in report["findings"] if f["rule"] == "TD907"]
    assert partial and all(f["message"] for f in partial), shown


def test_an_unreachable_prometheus_exits_3_naming_it() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    proc, _ = run_check(url, "--timeout", str(CHECK_TIMEOUT_S))
    assert proc.returncode == 3, proc.stderr
    assert url in proc.stderr and TRACEBACK not in proc.stderr, proc.stderr
    assert proc.stdout == "" or json.loads(proc.stdout), proc.stdout


class _Broken(ThreadingHTTPServer):
    """A local HTTP server answering every request with one canned (status, body)."""

    daemon_threads = True

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        super().__init__(("127.0.0.1", 0), _Canned)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Canned(BaseHTTPRequestHandler):
    server: _Broken

    def do_GET(self) -> None:
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what the check made of the answers."""


BROKEN_ANSWERS = {
    "garbage": (200, b"<html><body>Bad gateway, try later</body></html>"),
    "http-500": (500, b'{"status":"error","errorType":"internal","error":"query failed"}'),
    "not-prometheus": (200, b'{"hello": "world"}'),
}


@pytest.mark.parametrize("answer", sorted(BROKEN_ANSWERS))
def test_a_prometheus_answering_nonsense_is_a_clear_failure(answer: str) -> None:
    server = _Broken(*BROKEN_ANSWERS[answer])
    try:
        proc, seconds = run_check(server.url, "--timeout", str(CHECK_TIMEOUT_S))
    finally:
        server.shutdown()
        server.server_close()
    _assert_clear_failure(proc, server.url)
    assert seconds < WITHIN_TIMEOUT_S, (seconds, proc.stderr)


def test_a_prometheus_that_never_answers_fails_within_the_timeout(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    proc, seconds = run_check(url, "--timeout", str(CHECK_TIMEOUT_S))
    _assert_clear_failure(proc, url)
    assert seconds < WITHIN_TIMEOUT_S, (seconds, proc.stderr)
