"""``exporter --prometheus``: a fleet checked through its engine, one check per interval.

First the ledger with fleet findings, judged by the real engine from fleet Evidence: each
finding about a replica is served under the replica's ``instance``, fleet-wide ones and the
check's own series under the engine's address, with the label sets of one server's series; an
engine out of reach is TD603 and ``source_up{source="prometheus"} 0``, its replicas' last
findings kept. Then the exporter as a process against the real Prometheus scraping the fleet
simulator: a slowed replica's TD901 under its own instance (joined in Prometheus with that
replica's ``up``), and Prometheus stopped and started again.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from triton_doctor.cli import build_parser
from triton_doctor.evidence import Evidence, FleetEvidence, FleetTarget
from triton_doctor.exporter.checker import Checker, _replicas_unjudged
from triton_doctor.exporter.series import (
    FINDING_LABELS,
    FLEET_SOURCES,
    KEPT_UNJUDGED,
    Ledger,
    judged,
    outcomes,
)
from triton_doctor.invocation import Invocation

from fixtures.generate.fleet_sim import Anomaly, Fleet, FleetServer, prometheus_config
from tests.conftest import _missing
from tests.monitoring_harness import Exporter, Service, binary, get, series, wait_until
from tests.server_harness import _free_port

ENGINE_URL = "http://prom.example:9090"
ENGINE = "prom.example:9090"


def _invocation(*args: str) -> Invocation:
    return Invocation.from_args(build_parser().parse_args(["exporter", *args]))


def _page(ledger: Ledger) -> str:
    registry = CollectorRegistry()
    registry.register(ledger)
    return generate_latest(registry).decode()


def _check(ledger: Ledger, evidence: Evidence, *, unjudged: bool = False) -> None:
    """One check of the fleet at ENGINE, judged by every rule as the exporter judges it."""
    result = _invocation("--prometheus", ENGINE_URL).judge(evidence)
    ledger.record(judged(ENGINE, evidence, result, 0.5, ["prometheus"], sources=FLEET_SOURCES),
                  100.0, *outcomes(result), replicas_unjudged=unjudged)


def _fleet(*down: str, errors: dict[str, str] | None = None,
           replica_errors: dict[str, str] | None = None) -> Evidence:
    """Replicas a and b, those named ``down`` not scraped; ``errors``: queries that failed;
    ``replica_errors``: replicas whose own API did not answer (--ask-replicas)."""
    targets = [FleetTarget(instance, "triton", 0 if instance in down else 1,
                           last_error="connection refused" if instance in down else "")
               for instance in ("a:8002", "b:8002")]
    return Evidence(fleet=FleetEvidence(ENGINE_URL, targets=targets, errors=errors or {},
                                        replica_errors=replica_errors or {}))


def _unreachable() -> Evidence:
    evidence = Evidence()
    evidence.unavailable["fleet"] = evidence.unreachable["fleet"] = (
        f"cannot reach Prometheus at {ENGINE_URL}: connection refused")
    return evidence


def _findings(page: str) -> set[tuple[str, ...]]:
    return {tuple(labels[key] for key in FINDING_LABELS)
            for labels, value in series(page, "triton_doctor_finding") if value == 1}


# --- the ledger -------------------------------------------------------------------------------


def test_a_replicas_finding_is_under_its_instance_and_the_fleets_under_the_engines() -> None:
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    _check(ledger, _fleet("b:8002", errors={"increase": "timeout"}))
    page = _page(ledger)
    # instance, rule, name, severity, model, version: a replica down has no model (TD904), a
    # query that failed is about no replica (TD907: an error, as no replica's traffic came).
    assert _findings(page) == {
        ("b:8002", "TD904", "replica-down", "error", "", ""),
        (ENGINE, "TD907", "prometheus-partial-answer", "error", "", "")}
    assert all(set(labels) == set(FINDING_LABELS)
               for labels, _ in series(page, "triton_doctor_finding"))
    for name in ("triton_doctor_check_success", "triton_doctor_check_duration_seconds",
                 "triton_doctor_checks_total", "triton_doctor_rule_runs_total",
                 "triton_doctor_last_success_timestamp_seconds"):
        assert {labels["instance"] for labels, _ in series(page, name)} == {ENGINE}, name
    assert series(page, "triton_doctor_source_up") == [
        ({"instance": ENGINE, "source": "prometheus", "required": "true"}, 1.0)]
    runs = {labels["rule"] for labels, _ in series(page, "triton_doctor_rule_runs_total")}
    assert {"TD901", "TD904", "TD907", "TD603"} <= runs


def test_a_replica_back_up_loses_its_series_at_the_next_check() -> None:
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    _check(ledger, _fleet("a:8002", "b:8002"))
    assert {labels[0] for labels in _findings(_page(ledger))} == {"a:8002", "b:8002"}
    _check(ledger, _fleet("a:8002"))
    assert {labels[0] for labels in _findings(_page(ledger))} == {"a:8002"}
    _check(ledger, _fleet())
    assert _findings(_page(ledger)) == set()


def test_an_engine_out_of_reach_is_td603_and_its_replicas_findings_stay() -> None:
    """The replicas were not judged: their alerts do not resolve for want of an answer; the
    engine's own finding (TD907) was about the last answer and goes."""
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    _check(ledger, _fleet("b:8002", errors={"increase": "timeout"}))
    _check(ledger, _unreachable(), unjudged=True)
    page = _page(ledger)
    assert {(labels[0], labels[1]) for labels in _findings(page)} == {
        ("b:8002", "TD904"), (ENGINE, "TD603")}
    assert series(page, "triton_doctor_source_up")[0][1] == 0
    assert series(page, "triton_doctor_check_success")[0][1] == 1  # the check said so

    _check(ledger, _fleet())  # back, and the fleet healthy
    page = _page(ledger)
    assert _findings(page) == set()
    assert series(page, "triton_doctor_source_up")[0][1] == 1


def test_an_answer_whose_queries_failed_keeps_the_replicas_findings_too() -> None:
    """A check in flight while the engine goes away: the queries after the first failed, so
    what they would have judged is unknown; a replica's own API failing is not that."""
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    _check(ledger, _fleet("b:8002"))
    partial = _fleet(errors={"the query of request counts over the window (increase)":
                             "cannot reach Prometheus: connection refused"})
    assert _replicas_unjudged(partial)
    _check(ledger, partial, unjudged=True)
    assert {(labels[0], labels[1]) for labels in _findings(_page(ledger))} == {
        ("b:8002", "TD904"), (ENGINE, "TD907")}
    assert not _replicas_unjudged(_fleet(replica_errors={"a:8002": "connection refused"}))
    assert not _replicas_unjudged(_fleet())
    assert _replicas_unjudged(_unreachable())


def test_replicas_findings_kept_unjudged_go_after_a_bounded_number_of_checks() -> None:
    """A query that fails at every check: the replicas' last findings are kept for
    KEPT_UNJUDGED checks, not for ever (a replica fixed meanwhile would page on)."""
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    _check(ledger, _fleet("b:8002"))
    partial = _fleet(errors={"the query of request counts over the window (increase)":
                             "timeout"})
    for _ in range(KEPT_UNJUDGED):
        _check(ledger, partial, unjudged=True)
    assert ("b:8002", "TD904") in {(lb[0], lb[1]) for lb in _findings(_page(ledger))}
    _check(ledger, partial, unjudged=True)
    assert {(lb[0], lb[1]) for lb in _findings(_page(ledger))} == {(ENGINE, "TD907")}


def test_a_failed_first_fleet_check_serves_prometheus_as_not_read() -> None:
    ledger = Ledger(_invocation("--prometheus", ENGINE_URL).rules)
    ledger.failed(ENGINE, 1.0, ["prometheus"], FLEET_SOURCES)
    page = _page(ledger)
    assert series(page, "triton_doctor_source_up") == [
        ({"instance": ENGINE, "source": "prometheus", "required": "true"}, 0.0)]
    assert series(page, "triton_doctor_check_success")[0][1] == 0


def test_the_checker_of_a_fleet_whose_engine_is_down_serves_td603_under_its_address() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:  # nothing listens there after
        engine = f"127.0.0.1:{closed.getsockname()[1]}"
    invocation = _invocation("--prometheus", f"http://{engine}", "--timeout", "0.5")
    ledger = Ledger(invocation.rules)
    checker = Checker(invocation, Evidence(), ledger)
    assert checker.instance == engine
    checker.check()
    page = _page(ledger)
    assert {(labels[0], labels[1]) for labels in _findings(page)} == {(engine, "TD603")}
    assert series(page, "triton_doctor_source_up") == [
        ({"instance": engine, "source": "prometheus", "required": "true"}, 0.0)]
    assert "fleet" in checker.report["unreachable"]
    assert [f["rule"] for f in checker.report["findings"]] == ["TD603"]


@pytest.mark.parametrize(("args", "said"), [
    (["--url", "a:8000"], "give --url URL of each server, or --prometheus URL of a fleet's "
     "Prometheus (one or the other)"),
    (["--log", "x.log"], "--prometheus judges a fleet from its series; --log name(s) one "
     "server"),
])
def test_one_servers_flags_beside_prometheus_are_refused(args: list[str], said: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "triton_doctor", "exporter", "--prometheus",
                           "http://127.0.0.1:9090", *args, "--listen", "127.0.0.1:0"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr


# --- the exporter against the real Prometheus -------------------------------------------------

SLOW = 2  # the replica slowed six times


@pytest.fixture
def prometheus_binary() -> str:
    found = binary("prometheus")
    if found is None:
        _missing("prometheus not found: apt-get install prometheus (scripts/test.sh does)")
    return found


@pytest.fixture
def simulated() -> Iterator[FleetServer]:
    """Four replicas of two models, replica SLOW six times slower on both."""
    fleet = Fleet(4, 2, anomalies={SLOW: Anomaly("slow", factor=6)}, seed=16)
    with FleetServer(fleet) as server:
        yield server


def _firing(exporter: Exporter) -> set[tuple[str, str]]:
    return {(labels["instance"], labels["rule"]) for labels, value in
            series(exporter.metrics(), "triton_doctor_finding") if value == 1}


def _prometheus_up(exporter: Exporter) -> float | None:
    found = series(exporter.metrics(), "triton_doctor_source_up")
    return found[0][1] if found else None


def _query(url: str, promql: str) -> list[dict[str, str]]:
    answer = json.loads(get(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"))
    return [row["metric"] for row in answer["data"]["result"]]


def _a_selector_matching_nothing_fails_the_check_with_prometheus_read(url: str) -> None:
    """Nothing to judge (a fleet not deployed yet): the check fails, said, and the engine is
    served as read, so that the alert is CheckFailing, not SourceDown."""
    invocation = _invocation("--prometheus", url, "--selector", '{job="not-deployed"}')
    ledger = Ledger(invocation.rules)
    checker = Checker(invocation, Evidence(), ledger)
    checker.check()
    page = _page(ledger)
    assert "holds no series" in checker.report["failed"]
    assert series(page, "triton_doctor_check_success")[0][1] == 0
    assert series(page, "triton_doctor_source_up")[0][1] == 1


def test_the_exporter_serves_a_slow_replicas_td901_under_its_instance_through_an_outage(
        prometheus_binary: str, simulated: FleetServer, tmp_path: Path) -> None:
    """The exporter starts before Prometheus (TD603), serves TD901 under the slow replica's
    instance once Prometheus holds a window, which Prometheus itself joins with that
    replica's ``up``; Prometheus stopped is TD603 and source_up 0 with TD901 kept, and started
    again (same port, same storage) is read again."""
    port = _free_port()
    engine = f"127.0.0.1:{port}"
    slow = f"triton-{SLOW}:8002"
    exporter = Exporter("--prometheus", f"http://{engine}", "--window", "15s", "--interval",
                        "1", "--timeout", "2", workdir=tmp_path)
    service: Service | None = None
    try:
        wait_until(lambda: (engine, "TD603") in _firing(exporter), 30, "TD603 before Prometheus")
        assert _prometheus_up(exporter) == 0
        workdir = tmp_path / "prometheus"
        workdir.mkdir()
        (workdir / "prometheus.yml").write_text(
            prometheus_config(simulated.port, "triton", 4, 1.0)
            + "  - job_name: doctor\n    honor_labels: true\n    static_configs:\n"
            f"      - targets: ['{exporter.url.removeprefix('http://')}']\n")
        command = [prometheus_binary, "--config.file=prometheus.yml",
                   f"--storage.tsdb.path={workdir / 'tsdb'}", f"--web.listen-address={engine}",
                   "--log.level=warn"]
        service = Service("prometheus", command, workdir, "/-/ready", port)
        firing = wait_until(lambda: (slow, "TD901") in (found := _firing(exporter)) and found,
                            90, "TD901 on the slow replica")
        assert {rule for instance, rule in firing if instance != engine} == {"TD901"}
        assert {instance for instance, rule in firing if rule == "TD901"} == {slow}
        assert _prometheus_up(exporter) == 1
        url = service.url
        joined = wait_until(lambda: _query(url, 'triton_doctor_finding{rule="TD901"} * '
                                                'on(instance) group_left up{job="triton"}'),
                            30, "the finding joined with the replica's up in Prometheus")
        assert {row["instance"] for row in joined} == {slow}
        assert {row["rule"] for row in joined} == {"TD901"}
        _a_selector_matching_nothing_fails_the_check_with_prometheus_read(url)

        service.stop()
        wait_until(lambda: (engine, "TD603") in _firing(exporter), 30, "TD603 once it is gone")
        assert _prometheus_up(exporter) == 0
        assert (slow, "TD901") in _firing(exporter)  # not judged, so not cleared
        report = json.loads(get(exporter.url + "/findings"))["servers"][0]
        assert report["instance"] == engine and "fleet" in report["unreachable"]
        assert {f.get("instance") for f in report["findings"] if f["rule"] == "TD901"} == {slow}

        service = Service("prometheus", command, workdir, "/-/ready", port)
        wait_until(lambda: _prometheus_up(exporter) == 1, 60, "Prometheus read again")
        wait_until(lambda: (engine, "TD603") not in (found := _firing(exporter))
                   and (slow, "TD901") in found, 60, "TD603 gone, TD901 judged again")
        assert exporter.process.poll() is None
    finally:
        if service is not None:
            service.stop()
        exporter.stop()
