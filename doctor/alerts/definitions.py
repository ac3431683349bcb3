"""The alerts, as conditions in PromQL: thresholds and the Alerting choices in, definitions out.

The metrics group restates live rules over Triton's own series, so that Prometheus alerts on
the conditions `check` reports, with the same thresholds and every comparison kept as the
rule's Python has it (``>=`` where it fires from the threshold on, ``>`` where above it). The
exporter group alerts on what `triton-doctor exporter` serves: each finding, and the health of
the checks themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from triton_doctor.invocation import Alerting
from triton_doctor.records import record, replace
from triton_doctor.triton.server_model import GPU_MEMORY_ERROR_SHARE

#: The thresholds the metrics group encodes (the header of the file lists their values).
ENCODED_THRESHOLDS = ("min-requests", "queue-ms", "queue-share", "queue-error-ms",
                      "failure-rate", "min-failures", "compute-growth", "p99-ms", "gpu-memory")
#: The ``rule`` label of the alerts about the exporter itself, which no rule of `check` has.
EXPORTER_RULE = "exporter"
#: ``TritonGpuMemoryFillingUp``: how far ahead it looks, and over how many rate windows of
#: memory use it fits the trend (short ranges follow every allocation spike).
FILL_HORIZON_S = 3600
FILL_FIT_WINDOWS = 6
#: Executions before the window that make an average to compare with (TD615's count).
EARLIER_EXECUTIONS = 100
#: Intervals without a check that ran to its end after which a check counts as hung.
HUNG_CHECKS = 3
#: A finding of this rule means a source did not answer; TritonDoctorSourceDown says so.
SOURCE_RULE = "TD603"

_FINDING_FIX = ('{{ with printf "triton_doctor_rule_info{rule=%q}" $labels.rule | query }}'
                '{{ . | first | label "fix" }}{{ end }}')
_FINDING_TITLE = _FINDING_FIX.replace('"fix"', '"title"')
_FINDING_DOCS = _FINDING_FIX.replace('"fix"', '"docs"')


@record(frozen=True)
class Alert:
    """One alerting rule. ``rule`` and ``severity`` are None where the series carries them (a
    finding of the exporter); ``fix`` is None where it is the rule's documented Fix, and
    ``runbook`` None where it is the rule's anchor in the published docs."""

    name: str
    group: str
    expr: str
    hold: str
    summary: str
    description: str
    rule: str | None
    severity: str | None
    fix: str | None = None
    runbook: str | None = None


def alerts(thresholds: Mapping[str, float], alerting: Alerting) -> list[Alert]:
    """The alerts of the groups asked for; ``thresholds`` holds every encoded one."""
    limits = {name: thresholds[name] for name in ENCODED_THRESHOLDS}
    found = _metrics(limits, alerting.rate_window) if "metrics" in alerting.groups else []
    if "exporter" in alerting.groups:
        covered = {alert.rule for alert in found if alert.rule} | {SOURCE_RULE}
        found += _exporter(sorted(covered), alerting.exporter_job, alerting.rate_window)
    if alerting.hold is not None:
        return [replace(alert, hold=alerting.hold) for alert in found]
    return found


def number(value: float) -> str:
    """A threshold as PromQL and the annotations write it: exact, without a needless ``.0``."""
    value = float(value)  # the defaults hold ints
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _metrics(limit: Mapping[str, float], w: str) -> list[Alert]:
    """TD611, TD613, TD614, TD615 and TD701 over Triton's series, per model version (labels
    ``model``, ``version``) or GPU (``gpu_uuid``), rates over ``w``.

    What PromQL over these series cannot say: TD611's requests waiting at both ends of the
    window become waiting through all of it; TD613's warning for a few requests that all
    failed, TD615's executions that keep the instances busy (the instance count is not a
    series) and TD701's "one more instance does not fit" (the server's statistics) are left
    out. A rule's warning and error are two alerts, which fire together past the error's
    threshold; the file's header gives the inhibit rule that keeps the error alone.
    """
    least, queue_ms, share = (number(limit[name])
                              for name in ("min-requests", "queue-ms", "queue-share"))
    severe_ms = number(max(limit["queue-ms"], limit["queue-error-ms"]))
    failure_rate, enough = number(limit["failure-rate"]), number(limit["min-failures"])
    growth, p99 = number(limit["compute-growth"]), number(limit["p99-ms"])
    pressure = number(limit["gpu-memory"])
    # Above the warning's threshold as well: TD701 judges nothing below `gpu-memory`.
    full = number(max(limit["gpu-memory"], GPU_MEMORY_ERROR_SHARE))
    succeeded = f"increase(nv_inference_request_success[{w}])"
    # 2.51 splits failures by a reason label; earlier releases have none.
    failed = f"sum without (reason) (increase(nv_inference_request_failure[{w}]))"
    completed = f"{succeeded}\n  + {failed}"
    queue_ms_expr = (f"increase(nv_inference_queue_duration_us[{w}])\n"
                     f"  / ({succeeded} > 0) / 1000")
    queue_share_expr = (f"increase(nv_inference_queue_duration_us[{w}])\n"
                        f"  / (increase(nv_inference_request_duration_us[{w}]) > 0)")
    compute = [f"nv_inference_compute_{stage}_duration_us" for stage in
               ("input", "infer", "output")]
    now = "\n+ ".join(f"increase({name}[{w}])" for name in compute)
    before = "\n+ ".join(f"{name} offset {w}" for name in compute)
    used_share = "nv_gpu_memory_used_bytes / (nv_gpu_memory_total_bytes > 0)"
    model = "{{ $labels.model }} version {{ $labels.version }}"
    value = '{{ $value | printf "%.1f" }}'
    gpu = "GPU {{ $labels.gpu_uuid }}"
    fit = _times(w, FILL_FIT_WINDOWS)
    return [
        Alert(
            "TritonQueueBacklog", "metrics",
            _all(f"{queue_ms_expr} >= {queue_ms}", f"{queue_share_expr} >= {share}",
                 _either(f"{completed} >= {least}", "nv_inference_pending_request_count > 0")),
            "10m", f"{model}: requests wait in the queue longer than they compute",
            f"Requests to {model} waited {value} ms in the queue per completed request over "
            f"the last {w} (threshold {queue_ms} ms), at least {share} of their time, with "
            f"{least} or more completed or some still waiting.",
            "TD611", "warning"),
        Alert(
            "TritonQueueBacklogSevere", "metrics",
            _all(f"{queue_ms_expr} >= {severe_ms}", f"{queue_share_expr} >= {share}"),
            "5m", f"{model}: requests wait seconds in the queue",
            f"Requests to {model} waited {value} ms in the queue per completed request over "
            f"the last {w} (error from {severe_ms} ms: past most client and load-balancer "
            "timeouts).",
            "TD611", "error"),
        Alert(
            "TritonRequestsPending", "metrics",
            f"(min_over_time(nv_inference_pending_request_count[{w}]) > 0)\n>=\n"
            f"(\n{_indented(completed)}\n)",
            "5m", f"{model}: requests wait longer than the queue drains",
            f'{{{{ $value | printf "%.0f" }}}} requests to {model} waited for an instance '
            f"through the whole of the last {w}, at least as many as completed in it (none "
            "completed is the worst case).",
            "TD611", "error"),
        Alert(
            "TritonFailureRate", "metrics",
            _all(f"{failed}\n  / (\n{_indented(completed)}\n  )\n  > {failure_rate}",
                 _either(f"{completed} >= {least}", f"{failed} >= {enough}")),
            "5m", f"{model}: requests are failing",
            f'{{{{ $value | printf "%.3f" }}}} of the requests to {model} failed over the '
            f"last {w} (threshold {failure_rate}, judged from {least} requests or {enough} "
            "failures).",
            "TD613", "error"),
        Alert(
            "TritonHighP99Latency", "metrics",
            'max without (quantile) (nv_inference_request_summary_us{quantile="0.99"}) / 1000'
            f" > {p99}",
            "10m", f"{model}: p99 request latency above {p99} ms",
            f"The 0.99 quantile of request latency of {model} is {value} ms "
            f"(threshold {p99} ms).",
            "TD614", "warning"),
        Alert(
            "TritonComputeTimeGrowing", "metrics",
            _all(f"(\n{_indented(now)}\n) / (increase(nv_inference_exec_count[{w}]) > 0) / 1000"
                 f"\n  >= {growth} * (\n    (\n{_indented(before, 6)}\n    )\n"
                 f"    / (nv_inference_exec_count offset {w} >= {EARLIER_EXECUTIONS}) / 1000 > 0"
                 "\n  )", f"{completed} >= {least}"),
            "15m", f"{model}: each execution takes longer than it used to",
            f"Executions of {model} computed for {value} ms each over the last {w}, at least "
            f"{growth} times their average from load until then.",
            "TD615", "warning"),
        Alert(
            "TritonGpuMemoryPressure", "metrics", f"{used_share} >= {pressure}",
            "10m", f"{gpu}: memory nearly full",
            f'{gpu} has {{{{ $value | printf "%.2f" }}}} of its memory in use (threshold '
            f"{pressure}).",
            "TD701", "warning"),
        Alert(
            "TritonGpuMemoryFull", "metrics", f"{used_share} >= {full}",
            "2m", f"{gpu}: memory full",
            f'{gpu} has {{{{ $value | printf "%.2f" }}}} of its memory in use (error from '
            f"{full}): the next allocation fails.",
            "TD701", "error"),
        Alert(
            "TritonGpuMemoryFillingUp", "metrics",
            f"predict_linear(nv_gpu_memory_used_bytes[{fit}], {FILL_HORIZON_S})\n"
            "  / (nv_gpu_memory_total_bytes > 0)\n  >= 1",
            "10m", f"{gpu}: memory fills up within the hour",
            f"At the trend of the last {fit}, {gpu} will have "
            f'{{{{ $value | printf "%.2f" }}}} of its memory in use in an hour.',
            "TD701", "warning"),
    ]


def _exporter(covered: list[str], job: str, w: str) -> list[Alert]:
    """Each finding the exporter serves but the metrics group does not encode (``covered``),
    new lines of the log a log rule matched (over ``w``; a count that appears is new too, while
    one that was there ``w`` ago is an old line's), and the exporter's own health."""
    instance = "{{ $labels.instance }}"
    lines = "triton_doctor_log_lines_total"
    return [
        Alert(
            "TritonDoctorFinding", "exporter",
            f'triton_doctor_finding{{rule!~"{"|".join(covered)}",severity!="info"}} == 1',
            "5m", f"{{{{ $labels.rule }}}} {{{{ $labels.name }}}} on {instance}",
            f"{_FINDING_TITLE}: {{{{ $labels.rule }}}} fires on {instance} for model "
            '"{{ $labels.model }}" version "{{ $labels.version }}" (empty: the server as a '
            "whole). The exporter's /findings has the message.",
            None, None, fix=_FINDING_FIX, runbook=_FINDING_DOCS),
        Alert(
            "TritonDoctorLogEvent", "exporter",
            f"increase({lines}[{w}]) > 0\nor\n({lines} unless {lines} offset {w})",
            "0m", f"{{{{ $labels.rule }}}} {{{{ $labels.name }}}} in the log of {instance}",
            f"{_FINDING_TITLE}: the log of {instance} has new lines of {{{{ $labels.rule }}}} "
            'for model "{{ $labels.model }}" (empty: the server as a whole) in the last '
            f'{w}, {{{{ $value | printf "%.0f" }}}} of them. The exporter\'s /findings has '
            "the first and last.",
            None, None, fix=_FINDING_FIX, runbook=_FINDING_DOCS),
        Alert(
            "TritonDoctorExporterDown", "exporter", f"up{{job={json.dumps(job)}}} == 0",
            "5m", f"triton-doctor exporter {instance} is down",
            f"Prometheus cannot scrape the triton-doctor exporter at {instance} (job "
            f'"{job}"): no finding of the servers it checks can fire.',
            EXPORTER_RULE, "warning",
            fix="Check the exporter's process and its log, and that the scrape target is its "
            "--listen address."),
        Alert(
            "TritonDoctorCheckFailing", "exporter",
            "triton_doctor_check_success == 0\nor\n"
            "time() - triton_doctor_last_success_timestamp_seconds\n"
            f"  > {HUNG_CHECKS} * triton_doctor_check_interval_seconds",
            "10m", f"triton-doctor cannot check {instance}",
            f"The checks of {instance} do not run to their end (or hang): its findings are "
            "those of the last check that did (triton_doctor_last_success_timestamp_seconds).",
            EXPORTER_RULE, "warning",
            fix="Read the exporter's log for the check's error."),
        Alert(
            "TritonDoctorSourceDown", "exporter",
            'triton_doctor_source_up{required="true"} == 0',
            "5m", f"{{{{ $labels.source }}}} of {instance} cannot be read",
            f"triton-doctor cannot read the {{{{ $labels.source }}}} of {instance}, which it "
            "was asked to check: the rules that need it judge nothing.",
            SOURCE_RULE, "error"),
    ]


def _all(*conditions: str) -> str:
    return "\nand\n".join(conditions)


def _either(*conditions: str) -> str:
    return "(\n" + "\n  or\n".join(_indented(condition) for condition in conditions) + "\n)"


def _indented(text: str, by: int = 4) -> str:
    return "\n".join(" " * by + line for line in text.split("\n"))


#: Prometheus duration units in milliseconds, largest first.
_UNIT_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000,
            "m": 60_000, "s": 1000, "ms": 1}


def _times(duration: str, factor: int) -> str:
    """``duration`` times ``factor``, as a Prometheus duration."""
    left = factor * sum(int(count) * _UNIT_MS[unit]
                        for count, unit in re.findall(r"(\d+)(ms|[ywdhs]|m)", duration))
    parts = []
    for unit, size in _UNIT_MS.items():
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
