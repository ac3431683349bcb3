"""Synthetic series for each alert, made from the thresholds: series that fire, and series just
the other side of each condition that must not.

Series are one sample a minute for an hour, as Triton (and the exporter) would be scraped; the
rate window is the default 5m. Counters start at 0 and step by whole numbers where a case sits
exactly on a threshold, so that Prometheus's increase() is exact there and an inclusive
comparison (>=) can be told from a strict one (>).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from triton_doctor.catalogue import find_rule

MINUTES = 60
#: The rate window the cases are made for (``--rate-window``'s default), in minutes.
WINDOW = 5
#: Labels Prometheus gives the series of a Triton target, and of the exporter's target.
TRITON = {"instance": "triton:8002", "job": "triton"}
EXPORTER = {"instance": "triton:8000", "job": "triton-doctor"}
#: A GPU's memory: a power of two, so that share times total is exact.
TOTAL = float(2**40)
#: Where the compute time per execution changes, in TritonComputeTimeGrowing's cases.
SLOWDOWN = 30

#: A per-minute amount: constant, or by minute (1 to MINUTES; 0 for a gauge's first sample).
Amount = float | Callable[[int], float]


@dataclass(frozen=True)
class Series:
    name: str
    labels: dict[str, str]
    #: None: no sample that minute (the series does not exist yet).
    values: list[float | None]

    def promtool(self) -> dict[str, str]:
        labels = ",".join(f'{key}="{value}"' for key, value in self.labels.items())
        return {"series": f"{self.name}{{{labels}}}",
                "values": " ".join("_" if value is None else repr(value)
                                   for value in self.values)}


@dataclass(frozen=True)
class Firing:
    """An alert promtool must find: the labels it keeps of its series, and its value (by the
    minute it is checked at, where that moves)."""

    labels: dict[str, str]
    value: float | Callable[[int], float]

    def value_at(self, minute: int) -> float:
        return _at(self.value, minute)


@dataclass(frozen=True)
class Case:
    series: list[Series]
    firing: list[Firing]
    #: The minute from which the condition can first hold, and the one by which it surely holds
    #: for every firing series.
    onset: tuple[int, int] = (1, WINDOW)
    #: The labels of ``triton_doctor_rule_info`` by rule, for the finding alert's templates.
    rule_info: dict[str, dict[str, str]] = field(default_factory=dict)


def _at(amount: Amount, minute: int) -> float:
    return amount(minute) if callable(amount) else amount


def counter(step: Amount, scale: Amount = 1.0) -> list[float]:
    values, total = [0.0], 0.0
    for minute in range(1, MINUTES + 1):
        total += _at(step, minute) * _at(scale, minute)
        values.append(total)
    return values


def gauge(amount: Amount) -> list[float]:
    return [_at(amount, minute) for minute in range(MINUTES + 1)]


def model(name: str, *, success: Amount, failure: Amount = 0.0, queue_ms: Amount = 0.0,
          request_ms: Amount | None = None, executions: Amount | None = None,
          compute_ms: Amount = 4.0, pending: Amount = 0.0) -> list[Series]:
    """Triton's series of one model version with these per-minute amounts (request_ms: the
    queue and 4 ms; executions: one a request)."""
    labels = {"model": name, "version": "1", **TRITON}
    request = request_ms if request_ms is not None else (
        lambda minute: _at(queue_ms, minute) + 4.0)
    ran = executions if executions is not None else success

    def us(amount: Amount, part: float = 1.0) -> Amount:
        return lambda minute: _at(amount, minute) * 1000 * part

    # The compute counters in the shares Triton splits an execution into (exact halves).
    stages = {"input": 0.25, "infer": 0.5, "output": 0.25}
    return [
        Series("nv_inference_request_success", labels, counter(success)),
        Series("nv_inference_request_failure", {**labels, "reason": "BACKEND"}, counter(failure)),
        Series("nv_inference_request_failure", {**labels, "reason": "REJECTED"}, counter(0.0)),
        Series("nv_inference_count", labels, counter(success)),
        Series("nv_inference_exec_count", labels, counter(ran)),
        Series("nv_inference_queue_duration_us", labels, counter(success, us(queue_ms))),
        Series("nv_inference_request_duration_us", labels, counter(success, us(request))),
        *(Series(f"nv_inference_compute_{stage}_duration_us", labels,
                 counter(ran, us(compute_ms, part))) for stage, part in stages.items()),
        Series("nv_inference_pending_request_count", labels, gauge(pending)),
    ]


def p99(name: str, p99_us: float, median_us: float = 1000.0) -> list[Series]:
    labels = {"model": name, "version": "1", **TRITON}
    return [Series("nv_inference_request_summary_us", {**labels, "quantile": "0.99"},
                   gauge(p99_us)),
            Series("nv_inference_request_summary_us", {**labels, "quantile": "0.5"},
                   gauge(median_us))]


def gpu(uuid: str, used: Amount, total: float = TOTAL) -> list[Series]:
    labels = {"gpu_uuid": uuid, **TRITON}
    return [Series("nv_gpu_memory_used_bytes", labels, gauge(used)),
            Series("nv_gpu_memory_total_bytes", labels, gauge(total))]


def _model_labels(name: str) -> dict[str, str]:
    return {"model": name, "version": "1", **TRITON}


def cases(t: Mapping[str, float]) -> dict[str, Case]:
    """A case for every alert, for thresholds ``t`` (every live threshold)."""
    return {**_queue(t), **_failures(t), **_latency(t), **_gpu(t), **_exporter()}


def _busy(least: float) -> int:
    """Requests a minute that complete twice ``least`` in the window (whole, at least 4)."""
    return max(4, math.ceil(2 * least / WINDOW))


def _queue(t: Mapping[str, float]) -> dict[str, Case]:
    least, queue, share = t["min-requests"], t["queue-ms"], t["queue-share"]
    severe = max(queue, t["queue-error-ms"])
    busy, few = _busy(least), (least - 1) / WINDOW
    return {
        "TritonQueueBacklog": Case(
            [*model("backlog", success=busy, queue_ms=queue, request_ms=queue),
             *model("waiting", success=1, queue_ms=queue, request_ms=queue, pending=2),
             *model("short_wait", success=busy, queue_ms=queue * 0.9, request_ms=queue),
             *model("small_share", success=busy, queue_ms=queue,
                    request_ms=queue / (share * 0.9)),
             *model("few", success=few, queue_ms=queue, request_ms=queue)],
            [Firing(_model_labels("backlog"), queue), Firing(_model_labels("waiting"), queue)]),
        "TritonQueueBacklogSevere": Case(
            [*model("stuck", success=1, queue_ms=severe, request_ms=severe),
             *model("slow", success=1, queue_ms=severe * 0.9, request_ms=severe),
             *model("small_share", success=1, queue_ms=severe,
                    request_ms=severe / (share * 0.9))],
            [Firing(_model_labels("stuck"), severe)]),
        "TritonRequestsPending": Case(
            [*model("hung", success=0, pending=3),
             *model("as_many", success=1, pending=WINDOW),
             *model("draining", success=3, pending=WINDOW),
             *model("dips", success=0, pending=lambda minute: 3 * (minute % 2))],
            [Firing(_model_labels("hung"), 3), Firing(_model_labels("as_many"), WINDOW)],
            onset=(1, 1)),
    }


def _failures(t: Mapping[str, float]) -> dict[str, Case]:
    least, rate, enough = t["min-requests"], t["failure-rate"], t["min-failures"]
    requests = 100  # a minute: 500 in the window, above any min-requests the tests give
    failed = math.floor(requests * rate) + 1
    few_failed = min(enough, least) / WINDOW / 2
    series = [*model("failing", success=requests - failed, failure=failed),
              *model("few_all_failed", success=0, failure=math.ceil(enough / WINDOW)),
              *model("few", success=few_failed / 2, failure=few_failed)]
    if (requests * rate).is_integer():  # exactly the threshold: not above it
        at = int(requests * rate)
        series += model("at_threshold", success=requests - at, failure=at)
    return {
        "TritonFailureRate": Case(
            series, [Firing(_model_labels("failing"), failed / requests),
                     Firing(_model_labels("few_all_failed"), 1.0)]),
        "TritonComputeTimeGrowing": _growth(t),
    }


def _growth(t: Mapping[str, float]) -> Case:
    """Compute per execution steps up at SLOWDOWN; before it, 100 executions a minute (3000),
    after it 5, so that the average before the window barely moves."""
    growth, least = t["compute-growth"], t["min-requests"]
    busy, before = _busy(least), 8.0

    def slowed(factor: float) -> Amount:
        return lambda minute: before if minute <= SLOWDOWN else before * factor

    def executions(early: float, late: float) -> Amount:
        return lambda minute: early if minute <= SLOWDOWN else late

    return Case(
        [*model("slowed", success=busy, executions=executions(100, 5),
                compute_ms=slowed(4 * growth)),
         *model("steady", success=busy, executions=executions(100, 5),
                compute_ms=slowed(0.9 * growth)),
         *model("new", success=busy, executions=executions(2, 0.5),
                compute_ms=slowed(4 * growth)),
         *model("few", success=(least - 1) / WINDOW, executions=executions(100, 5),
                compute_ms=slowed(4 * growth))],
        [Firing(_model_labels("slowed"), before * 4 * growth)],
        onset=(SLOWDOWN + 1, SLOWDOWN + WINDOW))


def _latency(t: Mapping[str, float]) -> dict[str, Case]:
    limit_us = t["p99-ms"] * 1000
    return {
        "TritonHighP99Latency": Case(
            [*p99("slow", 2 * limit_us), *p99("at_threshold", limit_us),
             *p99("slow_median", limit_us / 2, median_us=10 * limit_us),
             *p99("no_requests", math.nan, median_us=math.nan)],
            [Firing(_model_labels("slow"), 2 * t["p99-ms"])], onset=(0, 0)),
    }


def _gpu(t: Mapping[str, float]) -> dict[str, Case]:
    def memory(share: float) -> Case:
        return Case([*gpu("GPU-at", share * TOTAL), *gpu("GPU-below", share * TOTAL - 2**20),
                     *gpu("GPU-unified", 5e9, total=0.0)],
                    [Firing({"gpu_uuid": "GPU-at", **TRITON}, share)], onset=(0, 0))

    return {
        "TritonGpuMemoryPressure": memory(t["gpu-memory"]),
        "TritonGpuMemoryFull": memory(max(t["gpu-memory"], 0.97)),
        # A hundredth of the memory more every minute, from half: full within the hour.
        "TritonGpuMemoryFillingUp": Case(
            [*gpu("GPU-filling", lambda minute: TOTAL * (0.5 + 0.01 * minute)),
             *gpu("GPU-high", 0.8 * TOTAL),
             *gpu("GPU-slowly", lambda minute: TOTAL * (0.5 + 0.001 * minute))],
            [Firing({"gpu_uuid": "GPU-filling", **TRITON},
                    lambda minute: 0.5 + 0.01 * (minute + 60))], onset=(1, 1)),
    }


def _exporter() -> dict[str, Case]:
    info = {}
    for rule_id in ("TD612", "TD611", "TD603", "TD811"):
        rule = find_rule(rule_id)
        assert rule is not None
        info[rule_id] = {"rule": rule.id, "name": rule.name, "severity": str(rule.severity),
                         "title": rule.title, "fix": rule.section("Fix"),
                         "docs": f"http://exporter:9780/rules/{rule.id}"}

    def finding(rule_id: str, model_name: str) -> dict[str, str]:
        rule = info[rule_id]
        return {**EXPORTER, "rule": rule_id, "name": rule["name"], "severity": rule["severity"],
                "model": model_name, "version": "1"}

    def ones(metric: str, value: float, labels: dict[str, str]) -> Series:
        return Series(metric, labels, list(gauge(value)))

    fresh = {**EXPORTER, "instance": "triton-2:8000"}
    hung = {**EXPORTER, "instance": "triton-3:8000"}
    crash = {**EXPORTER, "rule": "TD811", "name": info["TD811"]["name"],
             "severity": info["TD811"]["severity"], "model": ""}

    return {
        "TritonDoctorFinding": Case(
            [ones("triton_doctor_finding", 1, finding("TD612", "ranker")),
             ones("triton_doctor_finding", 1, finding("TD611", "ranker")),
             ones("triton_doctor_finding", 1, finding("TD603", "")),
             ones("triton_doctor_finding", 1, {**finding("TD612", "scorer"), "severity": "info"}),
             *(ones("triton_doctor_rule_info", 1,
                    {"instance": "exporter:9780", "job": "triton-doctor", **labels})
               for labels in info.values())],
            [Firing(finding("TD612", "ranker"), 1.0)], onset=(0, 0), rule_info=info),
        # A crash logged at minute 10 (a count that appears), next to one the log held from
        # the start, which is old news.
        "TritonDoctorLogEvent": Case(
            [Series("triton_doctor_log_lines_total", crash, [None] * 10 + [2.0] * (MINUTES - 9)),
             ones("triton_doctor_log_lines_total", 3, {**crash, "model": "old"}),
             *(ones("triton_doctor_rule_info", 1,
                    {"instance": "exporter:9780", "job": "triton-doctor", **labels})
               for labels in info.values())],
            [Firing({key: value for key, value in crash.items() if value}, 2.0)],
            onset=(10, 10), rule_info=info),
        "TritonDoctorExporterDown": Case(
            [ones("up", 0, {"instance": "exporter:9780", "job": "triton-doctor"}),
             ones("up", 1, {"instance": "exporter-2:9780", "job": "triton-doctor"}),
             ones("up", 0, TRITON)],
            [Firing({"instance": "exporter:9780", "job": "triton-doctor"}, 0.0)],
            onset=(0, 0)),
        # One failing, one whose checks end every 30 s, one whose check hung at the start (its
        # last success stays at 0 while time() runs past three intervals).
        "TritonDoctorCheckFailing": Case(
            [ones("triton_doctor_check_success", 0, EXPORTER),
             *(ones("triton_doctor_check_success", 1, labels) for labels in (fresh, hung)),
             *(ones("triton_doctor_check_interval_seconds", 30, labels)
               for labels in (fresh, hung)),
             Series("triton_doctor_last_success_timestamp_seconds", fresh,
                    gauge(lambda minute: minute * 60.0)),
             ones("triton_doctor_last_success_timestamp_seconds", 0, hung)],
            [Firing(EXPORTER, 0.0), Firing(hung, lambda minute: minute * 60.0)],
            onset=(0, 2)),
        "TritonDoctorSourceDown": Case(
            [ones("triton_doctor_source_up", 0, {**EXPORTER, "source": "metrics",
                                                 "required": "true"}),
             ones("triton_doctor_source_up", 0, {**EXPORTER, "source": "gpu",
                                                 "required": "false"}),
             ones("triton_doctor_source_up", 1, {**EXPORTER, "source": "server",
                                                 "required": "true"})],
            [Firing({**EXPORTER, "source": "metrics", "required": "true"}, 0.0)],
            onset=(0, 0)),
    }
