"""The exporter's series from judged checks, without a server: what a scrape shows after each
check, that a cleared finding leaves no series, and that nothing grows with the checks."""

from __future__ import annotations

import tracemalloc

from prometheus_client import CollectorRegistry, generate_latest
from triton_doctor.catalogue import all_rules, find_rule
from triton_doctor.evidence import Evidence, HostEvidence
from triton_doctor.exporter.series import Ledger, judged, outcomes
from triton_doctor.findings import Finding, Location, Severity, Skipped
from triton_doctor.result import Result

from tests.monitoring_harness import series

RULES = all_rules()


def _finding(rule: str, model: str | None, message: str = "m",
             severity: Severity | None = None) -> Finding:
    found = find_rule(rule)
    assert found is not None
    return Finding(rule, found.name, severity or found.severity, found.title, model,
                   "1" if model else None, Location(None), message, None, "fix", {})


def _scrape(ledger: Ledger) -> str:
    registry = CollectorRegistry()
    registry.register(ledger)
    return generate_latest(registry).decode()


def _checked(ledger: Ledger, instance: str, *findings: Finding, at: float = 100.0) -> None:
    evidence = Evidence(host=HostEvidence())
    evidence.unavailable["server"] = "refused"
    result = Result(findings=list(findings), applied=["TD611", "TD613"])
    ledger.record(judged(instance, evidence, result, 0.25, ["server", "metrics"]), at,
                  *outcomes(result))


def test_a_finding_is_one_series_while_it_fires_and_none_once_cleared() -> None:
    ledger = Ledger(RULES, {})
    _checked(ledger, "a:8000", _finding("TD611", "slow", "wait 12 ms"),
             _finding("TD611", "slow", "another region, same labels"),
             _finding("TD613", "flaky", severity=Severity.WARNING))
    page = _scrape(ledger)
    firing = {(labels["rule"], labels["model"], labels["severity"], labels["version"])
              for labels, value in series(page, "triton_doctor_finding") if value == 1}
    assert firing == {("TD611", "slow", "warning", "1"), ("TD613", "flaky", "warning", "1")}
    assert len(series(page, "triton_doctor_finding")) == 2  # two TD611 findings, one series

    _checked(ledger, "a:8000", _finding("TD613", "flaky", "now 40 %"), at=130.0)
    page = _scrape(ledger)
    assert [(labels["rule"], labels["severity"]) for labels, _ in
            series(page, "triton_doctor_finding")] == [("TD613", "error")]


def test_servers_are_told_apart_by_instance_and_keep_their_own_findings() -> None:
    ledger = Ledger(RULES, {})
    _checked(ledger, "a:8000", _finding("TD611", "slow"))
    _checked(ledger, "b:8000")
    page = _scrape(ledger)
    assert [labels["instance"] for labels, _ in series(page, "triton_doctor_finding")] == [
        "a:8000"]
    assert {labels["instance"] for labels, _ in series(page, "triton_doctor_check_success")} == {
        "a:8000", "b:8000"}


def test_sources_up_and_required_follow_the_evidence() -> None:
    ledger = Ledger(RULES, {})
    _checked(ledger, "a:8000")
    up = {labels["source"]: (labels["required"], value)
          for labels, value in series(_scrape(ledger), "triton_doctor_source_up")}
    assert up == {"server": ("true", 0.0), "metrics": ("true", 0.0), "gpu": ("false", 0.0),
                  "container": ("false", 0.0), "host": ("false", 1.0), "log": ("false", 0.0)}


def test_a_failed_check_keeps_the_last_findings_but_not_its_success_time() -> None:
    ledger = Ledger(RULES, {})
    _checked(ledger, "a:8000", _finding("TD601", "broken"), at=100.0)
    ledger.failed("a:8000", 1.5, ["server", "metrics"])
    page = _scrape(ledger)
    assert [labels["rule"] for labels, _ in series(page, "triton_doctor_finding")] == ["TD601"]
    assert series(page, "triton_doctor_check_success")[0][1] == 0.0
    assert series(page, "triton_doctor_check_duration_seconds")[0][1] == 1.5
    assert series(page, "triton_doctor_last_success_timestamp_seconds")[0][1] == 100.0
    assert series(page, "triton_doctor_checks_total")[0][1] == 2.0


def test_rules_are_counted_as_run_or_skipped_per_check() -> None:
    result = Result(applied=["TD601", "TD611", "TD201"], models=2, skipped=[
        Skipped("TD611", None, "metrics: refused"), Skipped("TD201", "a", "no config")])
    assert outcomes(result) == (["TD601", "TD201"], ["TD611"])
    result.skipped.append(Skipped("TD201", "b", "no config"))  # skipped for every model
    assert outcomes(result) == (["TD601"], ["TD611", "TD201"])


def test_rule_info_carries_each_rules_fix_and_docs_link() -> None:
    ledger = Ledger(RULES, {"TD611": "https://docs.example/rules.md#td611-queue-backlog-warning"})
    info = {labels["rule"]: labels for labels, _ in
            series(_scrape(ledger), "triton_doctor_rule_info")}
    assert len(info) == len(RULES)
    assert info["TD611"]["docs"].endswith("#td611-queue-backlog-warning")
    assert info["TD611"]["fix"].startswith("Add instances (`count`)")
    assert info["TD611"]["severity"] == "warning"


def test_memory_stays_flat_over_many_checks_with_findings_coming_and_going() -> None:
    ledger = Ledger(RULES, {})

    def cycle(n: int) -> None:
        models = [f"m{i}" for i in range(n % 7)]
        _checked(ledger, "a:8000", *(_finding("TD611", m, f"wait {n} ms") for m in models))
        _scrape(ledger)

    for n in range(100):  # warm: every label set and counter exists once
        cycle(n)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for n in range(300):
        cycle(n)
    grown = sum(stat.size_diff for stat in
                tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes more after 300 more checks"


def test_a_log_rules_finding_is_served_as_a_count_of_lines_not_as_a_finding() -> None:
    crash = _finding("TD811", None, "signal 11")
    crash = Finding(**{**vars(crash), "evidence": {"count": 3}})
    ledger = Ledger(RULES, {})
    _checked(ledger, "a:8000", crash, _finding("TD611", "slow"))
    page = _scrape(ledger)
    assert [labels["rule"] for labels, _ in series(page, "triton_doctor_finding")] == ["TD611"]
    assert series(page, "triton_doctor_log_lines_total") == [(
        {"instance": "a:8000", "rule": "TD811", "name": "server-crashed", "severity": "error",
         "model": ""}, 3.0)]
