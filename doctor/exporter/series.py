"""What the exporter serves, as Prometheus series: each server's latest check, and counts.

Series are made afresh from the latest check at every scrape (a custom collector, not gauges
kept between checks), so a cleared finding's series is gone at the next scrape and nothing
accumulates: what is held is one check per server and a count per (server, rule).

A log rule's finding is about lines already written, which never clear while the log holds
them: it is served as a count of those lines (``triton_doctor_log_lines_total``), so that an
alert fires on new ones, not on an old crash for as long as the log keeps it.

A fleet (``--prometheus``) is one check of the engine: its series of the check itself are under
the engine's address, and each finding about a replica under that replica's ``instance`` label,
so that it lines up with the replica's own series in Prometheus; the rest (TD907, TD603, the
repository's findings) are under the engine's address.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from triton_doctor.evidence import Evidence
from triton_doctor.records import field, record, replace
from triton_doctor.registry import RULES, Rule
from triton_doctor.result import Result

#: The Evidence parts whose availability is served, in this order: ``source`` label -> part.
SOURCES = {part: part for part in ("server", "metrics", "gpu", "container", "host", "log")}
#: A fleet's one source: the engine its series are read from.
FLEET_SOURCES = {"prometheus": "fleet"}
#: The labels that name a finding; the same problem keeps the same series while it lasts (the
#: message, whose values change every check, is in /findings, not in a label).
FINDING_LABELS = ("instance", "rule", "name", "severity", "model", "version")
#: The labels of a log rule's count of lines.
LOG_LABELS = ("instance", "rule", "name", "severity", "model")


@record(frozen=True)
class Check:
    """One server's latest check, as served: finding label values (one series each, however
    many findings share them), the log rules' line counts, the sources read, how long it took
    and whether it ran to its end."""

    instance: str
    findings: frozenset[tuple[str, ...]]
    #: Log rules' lines in the log read, by LOG_LABELS values.
    log_lines: dict[tuple[str, ...], int]
    sources_up: dict[str, bool]
    required: frozenset[str]
    duration_s: float
    ran_whole: bool


def judged(instance: str, evidence: Evidence, result: Result, duration_s: float,
           required: Sequence[str], *, whole: bool = True, log_counted: bool = True,
           sources: Mapping[str, str] = SOURCES) -> Check:
    """The Check of a check that judged the Evidence; ``whole``: nothing failed on the way.
    A finding about one of a fleet's replicas is served under the replica's instance, the rest
    under ``instance``. A log rule's lines are counted only from a log followed as it grows
    (``log_counted``): a container's tail, read afresh, loses old lines, and its count would go
    down. ``sources``: the ``source`` labels served, by the Evidence part each reports on."""
    findings: set[tuple[str, ...]] = set()
    log_lines: Counter[tuple[str, ...]] = Counter()
    for f in result.findings:
        labels = (f.instance or instance, f.rule, f.name, str(f.severity), f.model or "")
        if RULES[f.rule].scope != "log":
            findings.add((*labels, f.version or ""))
        elif log_counted:
            log_lines[labels] += int(f.evidence.get("count", 1))
    sources_up = {source: getattr(evidence, part) is not None for source, part in sources.items()}
    return Check(instance, frozenset(findings), dict(log_lines), sources_up,
                 frozenset(required), duration_s, whole)


def outcomes(result: Result) -> tuple[list[str], list[str]]:
    """The rules of ``result`` that judged something, and those skipped wholly (their input
    missing for the server, or for every model)."""
    skips = Counter(s.rule for s in result.skipped)
    ran: list[str] = []
    skipped: list[str] = []
    for rule in result.applied:
        per_model = RULES[rule].scope == "model"
        whole = skips[rule] >= result.models if per_model else skips[rule] > 0
        (skipped if whole and skips[rule] else ran).append(rule)
    return ran, skipped


#: Checks in a row a fleet's replicas' last findings are kept while they go unjudged.
KEPT_UNJUDGED = 10


@record(eq=False)  # registered by identity
class Ledger:
    """The latest Check per server and the counts since start, read by every scrape while the
    checkers write: one lock, held only to swap or copy."""

    rules: Sequence[Rule]
    #: ``rule id -> the URL of its documentation``.
    docs: dict[str, str] = field(default_factory=dict)
    #: Seconds between checks: a check older than a few of these has hung.
    interval_s: float = 30.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _checks: dict[str, Check] = field(default_factory=dict)
    _last_success: dict[str, float] = field(default_factory=dict)
    _runs: Counter[tuple[str, ...]] = field(default_factory=Counter)
    _skips: Counter[tuple[str, ...]] = field(default_factory=Counter)
    _checks_total: Counter[str] = field(default_factory=Counter)
    #: Checks in a row that left a fleet's replicas unjudged, per instance.
    _unjudged: Counter[str] = field(default_factory=Counter)

    def record(self, check: Check, at: float, ran: Sequence[str] = (),
               skipped: Sequence[str] = (), *, replicas_unjudged: bool = False) -> None:
        """``replicas_unjudged``: a fleet's engine was out of reach or answered in part, so its
        replicas were not judged in full: their last findings stay served (their alerts do not
        resolve for want of an answer) beside the check's own (TD603, TD907), for at most
        KEPT_UNJUDGED checks in a row: past them, what was not found again is not served (a
        query that always fails must not hold resolved findings forever)."""
        with self._lock:
            before = self._checks.get(check.instance)
            self._unjudged[check.instance] = (
                self._unjudged[check.instance] + 1 if replicas_unjudged else 0)
            kept = 0 < self._unjudged[check.instance] <= KEPT_UNJUDGED
            if kept and before is not None:
                check = replace(check, findings=check.findings | {
                    labels for labels in before.findings if labels[0] != check.instance})
            self._checks[check.instance] = check
            self._checks_total[check.instance] += 1
            if check.ran_whole:
                self._last_success[check.instance] = at
            self._runs.update((check.instance, rule) for rule in ran)
            self._skips.update((check.instance, rule) for rule in skipped)

    def failed(self, instance: str, duration_s: float, required: Sequence[str],
               sources: Iterable[str] = SOURCES, *, answered: bool = False) -> None:
        """A check that did not run to its end: the last judgement stays served (its alerts do
        not resolve for want of an answer), marked as not renewed. ``sources`` are served as
        read when they ``answered`` (what they said could not be judged: a fleet's selector
        matching nothing), else as the last check read them, or as not read before any."""
        with self._lock:
            before = self._checks.get(instance)
            if answered or before is None:
                sources_up = dict.fromkeys(sources, answered)
            else:
                sources_up = before.sources_up
            self._checks[instance] = Check(
                instance, before.findings if before else frozenset(),
                before.log_lines if before else {}, sources_up,
                frozenset(required), duration_s, False)
            self._checks_total[instance] += 1

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        with self._lock:
            checks = list(self._checks.values())
            last_success = dict(self._last_success)
            runs, skips = Counter(self._runs), Counter(self._skips)
            totals = Counter(self._checks_total)
        finding = GaugeMetricFamily(
            "triton_doctor_finding", "1 while a rule's finding fires on the server or replica "
            "(instance); cleared findings have no series", labels=FINDING_LABELS)
        for check in checks:
            for labels in sorted(check.findings):
                finding.add_metric(labels, 1)
        yield finding
        yield _counter("triton_doctor_log_lines", "lines of the server's log a log rule "
                       "matched, per model (it starts again when the log is rotated)",
                       list(LOG_LABELS), {labels: count for check in checks
                                          for labels, count in check.log_lines.items()})
        yield self._rule_info()
        success = GaugeMetricFamily(
            "triton_doctor_check_success", "1 when the latest check ran to its end; 0 when it "
            "failed (a defect, or the repository could not be read)", labels=["instance"])
        duration = GaugeMetricFamily(
            "triton_doctor_check_duration_seconds", "how long the latest check took",
            labels=["instance"])
        interval = GaugeMetricFamily(
            "triton_doctor_check_interval_seconds", "the time between checks (--interval): "
            "no check that ran to its end for several of these is a hung check",
            labels=["instance"])
        source_up = GaugeMetricFamily(
            "triton_doctor_source_up", "1 when the latest check read the source; required: "
            "the server (or --prometheus) and what was named (--metrics-url, --log), which "
            "alerts watch", labels=["instance", "source", "required"])
        for check in checks:
            success.add_metric([check.instance], int(check.ran_whole))
            duration.add_metric([check.instance], check.duration_s)
            interval.add_metric([check.instance], self.interval_s)
            for source, up in check.sources_up.items():
                source_up.add_metric([check.instance, source, str(source in check.required)
                                      .lower()], int(up))
        yield from (success, duration, interval, source_up)
        last = GaugeMetricFamily(
            "triton_doctor_last_success_timestamp_seconds",
            "when the latest check that ran to its end finished (seconds since the epoch)",
            labels=["instance"])
        for instance, at in sorted(last_success.items()):
            last.add_metric([instance], at)
        yield last
        yield _counter("triton_doctor_checks", "checks run per server",
                       ["instance"], {(key,): value for key, value in totals.items()})
        yield _counter("triton_doctor_rule_runs", "checks in which the rule judged",
                       ["instance", "rule"], runs)
        yield _counter("triton_doctor_rule_skips", "checks in which the rule was skipped: what "
                       "it needs was not read", ["instance", "rule"], skips)

    def _rule_info(self) -> GaugeMetricFamily:
        info = GaugeMetricFamily(
            "triton_doctor_rule_info", "each rule's default severity, title, fix and "
            "documentation, for alert templates", labels=[
                "rule", "name", "severity", "title", "fix", "docs"])
        for row in self._info_rows:
            info.add_metric(row, 1)
        return info

    def __post_init__(self) -> None:
        self._info_rows = [[rule.id, rule.name, str(rule.severity), rule.title,
                            rule.section("Fix"), self.docs.get(rule.id, "")]
                           for rule in self.rules]


def _counter(name: str, documentation: str, labels: list[str],
             counts: Mapping[tuple[str, ...], int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(counts.items()):
        family.add_metric(list(key), value)
    return family
