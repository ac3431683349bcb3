"""The rate rules on few completions: what waits and what failed is judged however little
completed (TD611, TD613, TD615), batching only with volume (TD612); and TD601's one-line
message. Evidence is built here in the shape the collectors record from tritonserver 2.51."""

from __future__ import annotations

from triton_doctor.catalogue import all_rules
from triton_doctor.engine import run
from triton_doctor.evidence import (
    Evidence,
    MetricSample,
    MetricsEvidence,
    MetricsScrape,
    ModelStats,
    ServerEvidence,
    ServerModel,
    ServerSample,
)
from triton_doctor.findings import Finding

RULES = all_rules()
MS = 1_000_000
T0 = 1_764_400_000.0


def _stats(requests: int = 0, queue_ms: float = 0.0, compute_ms: float = 250.0,
           fails: int = 0, executions: int | None = None) -> ModelStats:
    executions = requests + fails if executions is None else executions
    return ModelStats(
        "m", "1", inference_count=requests, execution_count=executions, success_count=requests,
        fail_count=fails, queue_ns=int(queue_ms * MS * requests),
        compute_infer_ns=int(compute_ms * MS * executions),
        success_ns=int((queue_ms + compute_ms) * MS * requests))


def _evidence(window: ModelStats, pending: tuple[float, float] | None = None,
              before: ModelStats | None = None, model: ServerModel | None = None,
              window_s: float = 3.0) -> Evidence:
    config = {"name": "m", "backend": "python", "max_batch_size": 0,
              "instance_group": [{"kind": "KIND_CPU", "count": 1}]}
    start = before or ModelStats("m", "1")
    end = ModelStats(**{name: value + getattr(start, name) if isinstance(value, int) else value
                        for name, value in vars(window).items()})
    evidence = Evidence(server=ServerEvidence(
        url="http://127.0.0.1:8000", live=True, ready=True, version="2.51.0",
        models=[model or ServerModel("m", "1", "READY", "", config)],
        samples=[ServerSample(T0, [start]), ServerSample(T0 + window_s, [end])]))
    if pending is not None:
        evidence.metrics = MetricsEvidence("http://127.0.0.1:8002/metrics", [
            MetricsScrape(T0 + i * window_s, [MetricSample(
                "nv_inference_pending_request_count", {"model": "m", "version": "1"}, value)])
            for i, value in enumerate(pending)])
    return evidence


def _found(evidence: Evidence, rule: str) -> list[Finding]:
    return [f for f in run(evidence, RULES).findings if f.rule == rule]


def test_backlog_with_few_completions_is_an_error_with_the_pending_count() -> None:
    """The issue's case: 11 completed in 3 s, 1.1 s queued each, 7 waiting."""
    (finding,) = _found(_evidence(_stats(11, queue_ms=1100.0), pending=(7, 7)), "TD611")
    assert str(finding.severity) == "error"
    assert finding.evidence["pending_requests"] == 7 and finding.evidence["completed"] == 11
    assert "7 pending now" in finding.message


def test_nothing_completed_while_requests_wait_is_the_worst_case() -> None:
    (finding,) = _found(_evidence(_stats(0), pending=(3, 5)), "TD611")
    assert str(finding.severity) == "error"
    assert "none completed" in finding.message and "5 pending now (3 when" in finding.message


def test_a_queue_that_fills_only_at_the_end_is_not_judged_on_that_instant() -> None:
    assert not _found(_evidence(_stats(0), pending=(0, 5)), "TD611")


def test_few_completions_with_a_short_queue_and_nothing_waiting_is_not_flagged() -> None:
    # Three requests of a burst, 50 ms queued each, and the queue empty at the end.
    assert not _found(_evidence(_stats(3, queue_ms=50.0, compute_ms=40.0), pending=(0, 0)),
                      "TD611")


def test_few_completions_that_waited_seconds_are_an_error_without_metrics() -> None:
    (finding,) = _found(_evidence(_stats(4, queue_ms=2000.0)), "TD611")
    assert str(finding.severity) == "error" and finding.evidence["pending_requests"] is None


def test_moderate_queue_with_volume_stays_a_warning() -> None:
    (finding,) = _found(_evidence(_stats(400, queue_ms=60.0, compute_ms=40.0), pending=(2, 3)),
                        "TD611")
    assert str(finding.severity) == "warning"


def test_a_lightly_loaded_slow_model_is_not_flagged() -> None:
    assert not _found(_evidence(_stats(12, queue_ms=0.1), pending=(0, 0)), "TD611")


def test_every_request_failing_is_judged_however_few() -> None:
    (finding,) = _found(_evidence(_stats(0, fails=5)), "TD613")
    assert str(finding.severity) == "error" and finding.evidence["failed"] == 5
    (single,) = _found(_evidence(_stats(0, fails=1)), "TD613")
    assert str(single.severity) == "warning"


def test_failures_among_few_requests_count_from_min_failures() -> None:
    assert _found(_evidence(_stats(6, fails=5)), "TD613")
    assert not _found(_evidence(_stats(11, fails=1)), "TD613")


def test_compute_growth_on_few_executions_that_fill_the_window() -> None:
    lifetime = _stats(500, compute_ms=50.0)
    assert _found(_evidence(_stats(11), before=lifetime), "TD615")
    # 11 executions of 120 ms keep the instance busy 44% of the window: too few to judge.
    assert not _found(_evidence(_stats(11, compute_ms=120.0), before=_stats(500, compute_ms=50.0)),
                      "TD615")


def test_not_ready_message_is_the_reasons_first_line_and_the_traceback_is_said_once() -> None:
    reason = ("Internal: RuntimeError: cannot open the tokenizer\n\nAt:\n"
              "  /models/m/1/model.py(4): initialize\n")
    broken = ServerModel("m", "1", "UNAVAILABLE", reason)
    (finding,) = _found(_evidence(_stats(0), model=broken), "TD601")
    assert "\n" not in finding.message and "model.py(4)" not in finding.message
    assert "cannot open the tokenizer" in finding.message
    assert finding.triton_message == reason


def _not_ready(ready: bool, *models: ServerModel) -> list[str | None]:
    evidence = Evidence(server=ServerEvidence(
        url="http://127.0.0.1:8000", live=True, ready=ready, version="2.51.0",
        models=[ServerModel("served", "1", "READY", ""), *models]))
    return [f.model for f in _found(evidence, "TD601")]


def test_a_model_that_failed_before_loading_is_reported_when_nothing_else_explains_it() -> None:
    # tritonserver 2.51, default model control: a config that does not parse leaves the model
    # with no state in the index and the server not ready.
    assert _not_ready(False, ServerModel("parser", "", "", "")) == ["parser"]


def test_models_left_unloaded_by_explicit_model_control_are_not_reported() -> None:
    never_asked = ServerModel("spare", "", "", "")
    assert _not_ready(True, never_asked) == []
    assert _not_ready(True, ServerModel("retired", "1", "UNAVAILABLE", "unloaded")) == []
    # Not ready while an unload or a failed load is what it waits on: the spare is no failure.
    assert _not_ready(False, never_asked, ServerModel("retired", "1", "UNLOADING", "")) == []
    failed = ServerModel("broken", "1", "UNAVAILABLE", "Invalid argument: dims 0")
    assert _not_ready(False, never_asked, failed) == ["broken"]
