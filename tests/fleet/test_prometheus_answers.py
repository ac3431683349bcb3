"""What the fleet collector makes of every answer an engine can give: the API's own errors,
garbage, a hang, a flood, partial data. A small local HTTP server plays the engine, answering
by which query it is asked (the real Prometheus is in test_simulated.py and
test_real_replicas.py); nothing here may end in a traceback or in figures made up."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.fleet import (
    MAX_SERIES,
    FleetRequest,
    FleetTarget,
    SelectorRefused,
    collect_fleet,
    matchers,
    replica_url,
)
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence, FleetEvidence

AT = 1_800_000_000.0
#: An answer: (status, body bytes, seconds to wait first).
Reply = tuple[int, bytes, float]


def vector(*series: tuple[dict[str, str], float], warnings: list[str] | None = None) -> Reply:
    document: dict[str, Any] = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [AT, str(value)]} for labels, value in series]}}
    if warnings:
        document["warnings"] = warnings
    return 200, json.dumps(document).encode(), 0.0


def error(kind: str, text: str, status: int = 400) -> Reply:
    return status, json.dumps({"status": "error", "errorType": kind, "error": text}).encode(), 0


class Engine(ThreadingHTTPServer):
    """Answers each query with the first reply whose key is in its PromQL (or ``default``)."""

    daemon_threads = True

    def __init__(self, replies: dict[str, Reply], default: Reply | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies = replies
        self.default = default or vector()
        self.asked: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reply(self, path: str) -> Reply:
        query = parse_qs(urlsplit(path).query).get("query", [path])[0]
        self.asked.append(query)
        for key, answer in self.replies.items():
            if key in query:
                return answer
        return self.default


class _Handler(BaseHTTPRequestHandler):
    server: Engine

    def do_GET(self) -> None:
        status, body, wait = self.server.reply(self.path)
        time.sleep(wait)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def engine() -> Iterator[Callable[..., Engine]]:
    started: list[Engine] = []

    def start(replies: dict[str, Reply], default: Reply | None = None) -> Engine:
        server = Engine(replies, default)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def fleet_of(url: str, timeout: float = 2.0, window: float = 60.0) -> FleetEvidence:
    return collect_fleet(FleetRequest(url, '{job="triton"}', window, timeout,
                                      clock=lambda: AT))


COUNT = "count(nv_inference_count"
#: The query of the window's start (its ``up`` row: the replica was there then).
START = "offset"
#: The query of which instances are tritonservers.
TRITON = "count by (instance) (last_over_time("
UP = {"instance": "a:8002", "job": "triton"}


def test_a_replica_is_laid_out_as_its_endpoints_give_it(engine: Callable[..., Engine]) -> None:
    """The start value plus increase() is the end: a restart inside the window (increase
    sees through it) is not a negative rate."""
    model = {"instance": "a:8002", "model": "m", "version": "1"}
    fam = "td_family"
    served = engine({
        COUNT: vector(({}, 3)),
        TRITON: vector(({"instance": "a:8002"}, 1)),
        "count_over_time(up": vector((UP, 12)),
        "increase(": vector(({**model, fam: "nv_inference_request_success"}, 120),
                            ({**model, fam: "nv_inference_exec_count"}, 60),
                            ({**model, fam: "nv_inference_count"}, 120),
                            ({**model, fam: "nv_inference_queue_duration_us"}, 240_000)),
        "offset": vector(({**model, fam: "nv_inference_request_success"}, 1000)),
        "deriv(": vector(),
        "count by": vector(),
        "up{": vector((UP, 1)),
    })
    fleet = fleet_of(served.url)
    assert [t.instance for t in fleet.targets] == ["a:8002"]
    (replica,) = fleet.replicas
    first, last = replica.server.samples
    assert last.at - first.at == 60.0
    assert (first.stats[0].success_count, last.stats[0].success_count) == (1000, 1120)
    assert last.stats[0].queue_ns == 240_000_000
    assert replica.server.from_metrics and fleet.errors == {}


def test_no_engine_there_is_unreachable_with_its_address() -> None:
    with pytest.raises(SourceUnavailable, match=r"cannot reach Prometheus at http://127\.0\.0\.1:1"
                       r": connection refused"):
        fleet_of("http://127.0.0.1:1")


@pytest.mark.parametrize(("reply", "words"), [
    ((200, b"<html>login</html>", 0.0), "not the Prometheus API: '<html>login</html>'"),
    ((502, b"bad gateway", 0.0), "HTTP 502, not the Prometheus API"),
    (error("internal", "storage is closed", 500), "internal: storage is closed"),
    ((200, b'{"status": "success", "data": {"resultType": "matrix", "result": []}}', 0.0),
     "not an instant vector"),
])
def test_an_engine_answering_garbage_or_errors_first_is_unreachable(
        engine: Callable[..., Engine], reply: Reply, words: str) -> None:
    served = engine({}, default=reply)
    with pytest.raises(SourceUnavailable, match="answered, but not with data") as raised:
        fleet_of(served.url)
    assert words in str(raised.value)


def test_a_hanging_engine_is_given_up_on_at_the_timeout(engine: Callable[..., Engine]) -> None:
    served = engine({}, default=(200, b"{}", 5.0))
    began = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"no answer within 0\.5 s"):
        fleet_of(served.url, timeout=0.5)
    assert time.monotonic() - began < 3


def test_a_selector_the_engine_refuses_is_a_usage_error(engine: Callable[..., Engine]) -> None:
    served = engine({}, default=error("bad_data", 'parse error: unexpected "}"'))
    with pytest.raises(SelectorRefused, match='refused the query for --selector'):
        fleet_of(served.url)


def test_a_selector_matching_too_much_is_refused_before_loading(
        engine: Callable[..., Engine]) -> None:
    served = engine({COUNT: vector(({}, MAX_SERIES + 1))})
    with pytest.raises(SelectorRefused, match="narrow it with label matchers"):
        fleet_of(served.url)
    assert len(served.asked) == 1  # nothing else was asked, let alone loaded


def test_a_selector_matching_nothing_is_said(engine: Callable[..., Engine]) -> None:
    served = engine({}, default=vector())
    with pytest.raises(SelectorRefused, match="holds no series of tritonserver"):
        fleet_of(served.url)


def test_a_query_failing_later_and_warnings_are_partial_answers(
        engine: Callable[..., Engine]) -> None:
    """Kept apart from the figures and reported by TD907, not taken as zero traffic."""
    served = engine({
        COUNT: vector(({}, 3)),
        TRITON: vector(({"instance": "a:8002"}, 1)),
        START: vector(({"instance": "a:8002", "td_family": "up"}, 1)),
        "increase(nv_inference_queue_duration_us": error(
            "timeout", "query timed out in expression evaluation", 503),
        "increase(nv_inference_request_success": vector(
            ({"instance": "a:8002", "model": "m", "version": "1",
              "td_family": "nv_inference_request_success"}, 5)),
        "up{": vector((UP, 1), warnings=["store 10.0.0.3:10901 did not answer"]),
    })
    fleet = fleet_of(served.url)
    assert fleet.errors == {"the query of request durations over the window (increase)":
                            "timeout: query timed out in expression evaluation"}
    assert fleet.warnings == ["store 10.0.0.3:10901 did not answer"]
    result = run(Evidence(fleet=fleet), [r for r in all_rules() if r.id == "TD907"])
    assert sorted(f.message for f in result.findings) == [
        f"Prometheus at {served.url} warns: store 10.0.0.3:10901 did not answer",
        f"Prometheus at {served.url}: the query of request durations over the window "
        "(increase): timeout: query timed out in expression evaluation"]


def test_malformed_series_are_skipped_not_trusted(engine: Callable[..., Engine]) -> None:
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": UP, "value": [AT, "not a number"]}, {"metric": "x", "value": [AT, "1"]},
        "junk", {"metric": {"instance": "b:8002", "job": "triton"}, "value": [AT, "1"]}]}})
    served = engine({COUNT: vector(({}, 2))}, default=(200, body.encode(), 0.0))
    fleet = fleet_of(served.url)
    assert [t.instance for t in fleet.targets] == ["b:8002"]


@pytest.mark.parametrize(("given", "inside"), [
    ('{job="triton"}', 'job="triton"'),
    ('job="triton", namespace=~"prod-.*"', 'job="triton",namespace=~"prod-.*"'),
    ("", ""),
    ('{pod="a}b"}', 'pod="a}b"'),
    ("{job='x',}", 'job="x"'),
    ('{path=`C:\\d`, n!~"\\\\d+"}', 'path="C:\\\\d",n!~"\\\\d+"'),
])
def test_selectors_are_label_matchers(given: str, inside: str) -> None:
    assert matchers(given) == inside


@pytest.mark.parametrize("given", [
    "up", '{job="x"', 'job="x"} or vector(1) or {a="b', "job",
    # A PromQL comment: the rest of the line is not read, the next line is another query.
    'job="a" #"\n} or vector(1) or up{z="\""'])
def test_what_is_not_label_matchers_is_refused(given: str) -> None:
    with pytest.raises(SelectorRefused, match="is not label matchers"):
        matchers(given)


def test_replica_urls_come_from_the_scrape_address_and_labels() -> None:
    target = FleetTarget("10.0.0.7:8002", scrape_url="https://10.0.0.7:8002/metrics",
                         labels={"pod": "triton-7"})
    assert replica_url("{scheme}://{host}:8000", target) == "https://10.0.0.7:8000"
    assert replica_url("http://{pod}.triton:8000", target) == "http://triton-7.triton:8000"
    with pytest.raises(ValueError, match="has no 'node'"):
        replica_url("http://{node}:8000", target)


def test_a_replica_whose_api_does_not_answer_is_judged_from_its_series(
        engine: Callable[..., Engine]) -> None:
    """--ask-replicas: the replica's API at a closed port is TD907 on that replica, apart
    from the engine's own errors (the exporter keeps replicas' findings only for those)."""
    served = engine({COUNT: vector(({}, 1)), TRITON: vector(({"instance": "a:8002"}, 1)),
                     START: vector(({"instance": "a:8002", "td_family": "up"}, 1)),
                     "up{": vector((UP, 1))})
    fleet = collect_fleet(FleetRequest(served.url, "", 60, 2.0, ask_replicas=True,
                                       replica_url="http://127.0.0.1:1", clock=lambda: AT))
    assert fleet.errors == {} and list(fleet.replica_errors) == ["a:8002"]
    assert "connection refused" in fleet.replica_errors["a:8002"]
    assert fleet.replicas[0].server.from_metrics
    result = run(Evidence(fleet=fleet), [r for r in all_rules() if r.id == "TD907"])
    assert [(f.instance, f.evidence) for f in result.findings] == [
        ("a:8002", {"replica_api": "a:8002"})]


def test_values_that_are_not_numbers_are_no_figures(engine: Callable[..., Engine]) -> None:
    """Prometheus writes NaN and infinities as "NaN", "+Inf": a counter's NaN must not end in
    a traceback (round() of NaN) nor pass for a figure."""
    model = {"instance": "a:8002", "model": "m", "version": "1"}
    served = engine({
        COUNT: vector(({}, 1)),
        "increase(": (200, json.dumps({"status": "success", "data": {
            "resultType": "vector", "result": [
                {"metric": {**model, "td_family": "nv_inference_request_success"},
                 "value": [AT, "NaN"]},
                {"metric": {**model, "td_family": "nv_inference_exec_count"},
                 "value": [AT, "+Inf"]},
                {"metric": {**model, "td_family": "nv_inference_count"},
                 "value": [AT, "7"]}]}}).encode(), 0.0),
        "up{": vector((UP, 1)),
    })
    (replica,) = fleet_of(served.url).replicas
    stats = replica.server.samples[-1].stats[0]
    assert (stats.success_count, stats.execution_count, stats.inference_count) == (0, 0, 7)


def test_targets_that_are_not_tritonservers_are_no_replicas(
        engine: Callable[..., Engine]) -> None:
    """Without a selector every target answers ``up``: a node exporter that is down is not
    a replica down, while a Triton replica down since before the window (no Triton series in
    it) still is one, by its job."""
    served = engine({
        COUNT: vector(({}, 2)),
        TRITON: vector(({"instance": "a:8002"}, 1)),
        "count_over_time(up": vector(({**UP}, 12), ({"instance": "b:8002", "job": "triton"}, 12),
                                     ({"instance": "node:9100", "job": "node"}, 12)),
        "up{": vector((UP, 1), ({"instance": "b:8002", "job": "triton"}, 0),
                      ({"instance": "node:9100", "job": "node"}, 0)),
    })
    fleet = collect_fleet(FleetRequest(served.url, "", 60, 2.0, clock=lambda: AT))
    assert [(t.instance, t.up, t.samples) for t in fleet.targets] == [
        ("a:8002", 1, 12), ("b:8002", 0, 12)]
    result = run(Evidence(fleet=fleet), [r for r in all_rules() if r.id == "TD904"])
    assert [f.instance for f in result.findings] == ["b:8002"]


def test_queries_failing_with_no_replica_judged_is_an_error() -> None:
    """Nothing judged is no verdict of health: TD907 is an error (exit 1), not a warning."""
    fleet = FleetEvidence("http://prometheus:9090", errors={"the query of x": "timeout"})
    result = run(Evidence(fleet=fleet), [r for r in all_rules() if r.id == "TD907"])
    assert [str(f.severity) for f in result.findings] == ["error"]
    assert result.findings[0].message.endswith("; no replica could be judged")


def test_replicas_prometheus_holds_nothing_of_at_the_window_start_are_said(
        engine: Callable[..., Engine]) -> None:
    """A Prometheus younger than the window (or a replica new in it): TD615 and TD903 cannot
    judge without the start, and the report says so once (info), not by silence."""
    served = engine({COUNT: vector(({}, 2)),
                     TRITON: vector(({"instance": "a:8002"}, 1), ({"instance": "b:8002"}, 1)),
                     START: vector(({"instance": "a:8002", "td_family": "up"}, 1)),
                     "up{": vector((UP, 1), ({"instance": "b:8002", "job": "triton"}, 1))})
    fleet = fleet_of(served.url)
    assert [(r.instance, r.seen_at_start) for r in fleet.replicas] == [
        ("a:8002", True), ("b:8002", False)]
    result = run(Evidence(fleet=fleet), [r for r in all_rules() if r.id == "TD907"])
    assert [(str(f.severity), f.evidence) for f in result.findings] == [
        ("info", {"replicas_without_start": 1})]
    assert "of 1 of 2 replicas from the window's start (b:8002)" in result.findings[0].message
