"""The watch's pure state: frames, the history of numbers and findings, and finding keys."""

from __future__ import annotations

import copy

import pytest
from triton_doctor import records
from triton_doctor.evidence import ContainerEvidence, Evidence, HostEvidence
from triton_doctor.findings import Finding, Location, Severity
from triton_doctor.tui.state import Frame, History, frame_time, watch_key

from tests.tui.support import detector_recovered, incident, judge

#: When the incident's server was last sampled, and when its tritonserver process started.
SAMPLED_AT = 1795989168.4269283
STARTED_AT = 1795989157.54


def frame(evidence: Evidence, at: float = SAMPLED_AT) -> Frame:
    return Frame(at, evidence, judge(evidence))


def finding(rule: str = "TD611", model: str | None = "m", message: str = "waits 12 ms",
            severity: Severity = Severity.WARNING, field: str | None = None) -> Finding:
    return Finding(rule=rule, name="name", severity=severity, title="title", model=model,
                   version=None, location=Location(None, None, field), message=message,
                   triton_message=None, fix=None, evidence={})


# --- Frame -------------------------------------------------------------------------------


def test_model_rows_of_the_recorded_incident() -> None:
    rows = {row.name: row for row in frame(incident()).models}
    assert list(rows) == ["detector", "image_classifier", "reranker", "safety_filter",
                          "text_encoder", "tokenizer"]
    assert {name: row.state for name, row in rows.items()} == {
        "detector": "UNAVAILABLE", "image_classifier": "READY", "reranker": "READY",
        "safety_filter": "READY", "text_encoder": "READY", "tokenizer": "READY"}
    detector = rows["detector"]
    assert "anchors.json" in detector.reason
    assert detector.requests_per_s is None and detector.failures is None
    assert detector.worst == Severity.ERROR
    image = rows["image_classifier"]
    assert image.requests_per_s == pytest.approx(19.68, abs=0.01)
    assert image.queue_ms == pytest.approx(354.5, abs=0.05)
    assert image.average_batch == pytest.approx(1.0)
    assert image.worst == Severity.WARNING
    assert rows["text_encoder"].average_batch == pytest.approx(3.30, abs=0.005)
    assert rows["text_encoder"].worst is None
    assert rows["tokenizer"].failures == 1157
    assert rows["tokenizer"].worst == Severity.ERROR
    assert rows["reranker"].requests_per_s == pytest.approx(193.6, abs=0.05)
    # No summary quantiles were recorded (the server ran without summary latencies).
    assert all(row.p99_ms is None for row in rows.values())


def test_no_server_no_model_rows() -> None:
    evidence = incident()
    evidence.server = None
    assert frame(evidence).models == []


def test_firing_is_errors_first_then_by_model_and_rule() -> None:
    firing = frame(incident()).firing
    assert [(f.severity, f.model, f.rule) for f in firing] == [
        (Severity.ERROR, None, "TD602"), (Severity.ERROR, "detector", "TD601"),
        (Severity.ERROR, "tokenizer", "TD613"), (Severity.ERROR, "tokenizer", "TD814"),
        (Severity.WARNING, None, "TD701"),
        (Severity.WARNING, "image_classifier", "TD611"),
        (Severity.WARNING, "reranker", "TD612")]


def test_sources_say_why_a_part_is_missing() -> None:
    sources = frame(incident()).sources()
    assert list(sources) == ["server", "metrics", "gpu", "container", "host", "log"]
    assert [part for part, why in sources.items() if why] == ["container"]
    assert sources["container"].startswith("cannot reach the Docker daemon")
    evidence = incident()
    evidence.log = None
    assert frame(evidence).sources()["log"] == "not collected"


def test_uptime_from_the_server_process() -> None:
    assert frame(incident()).uptime_s() == pytest.approx(SAMPLED_AT - STARTED_AT)


def test_uptime_from_the_container_when_the_process_start_is_unknown() -> None:
    evidence = incident()
    evidence.host = HostEvidence()
    evidence.container = ContainerEvidence(id="c", started_at="2026-11-29T21:50:00.123456789Z")
    assert frame(evidence).uptime_s() == pytest.approx(SAMPLED_AT - 1795989000.0)
    evidence.host = None
    assert frame(evidence).uptime_s() == pytest.approx(SAMPLED_AT - 1795989000.0)


@pytest.mark.parametrize("started_at", ["", "yesterday", "2026-13-45T99:00:00Z"])
def test_uptime_unknown_without_a_readable_start(started_at: str) -> None:
    evidence = incident()
    evidence.host = None
    evidence.container = ContainerEvidence(id="c", started_at=started_at)
    assert frame(evidence).uptime_s() is None
    evidence.container = None
    assert frame(evidence).uptime_s() is None


def test_uptime_is_never_negative() -> None:
    """A server that started after the sample (clocks of two machines) has run 0 s."""
    evidence = incident()
    assert evidence.host is not None
    evidence.host.server_started_at = SAMPLED_AT + 60
    assert frame(evidence).uptime_s() == 0.0


def test_frame_time_is_the_last_sample_then_scrape_then_the_fallback() -> None:
    evidence = incident()
    assert frame_time(evidence, 1.0) == SAMPLED_AT
    assert evidence.metrics is not None
    evidence.server = None
    assert frame_time(evidence, 1.0) == evidence.metrics.scrapes[-1].at
    evidence.metrics = None
    assert frame_time(evidence, 1.0) == 1.0


# --- History: numbers --------------------------------------------------------------------


def _with_gpu_used(share: float) -> Evidence:
    evidence = incident()
    assert evidence.gpu is not None
    device = evidence.gpu.devices[0]
    device.memory_used_bytes = int(device.memory_total_bytes * share)
    return evidence


def test_gpu_series_per_device_keeps_the_last_points() -> None:
    history = History(points=3)
    for share in (0.1, 0.2, 0.5, 0.75, 0.9):
        history.add(frame(_with_gpu_used(share)))
    gpu = incident().gpu
    assert gpu is not None
    device = gpu.devices[0]
    assert list(history.gpu_memory) == [device.uuid]
    assert list(history.gpu_memory[device.uuid]) == pytest.approx([0.5, 0.75, 0.9], abs=1e-9)


def test_gpu_key_is_the_uuid_or_else_the_index() -> None:
    gpu = incident().gpu
    assert gpu is not None
    device = copy.deepcopy(gpu.devices[0])
    assert device.key == device.uuid
    device.uuid = ""
    assert device.key == "0"


def test_a_gpu_without_a_total_adds_no_point() -> None:
    evidence = incident()
    assert evidence.gpu is not None
    evidence.gpu.devices[0].memory_total_bytes = 0
    history = History()
    history.add(frame(evidence))
    assert history.gpu_memory == {}


def test_model_series_hold_the_numbers_a_window_had() -> None:
    history = History()
    history.add(frame(incident()))
    history.add(frame(incident()))
    tokenizer = history.model_series["tokenizer"]
    assert set(tokenizer) == {"requests/s", "average batch", "queue ms"}  # no p99 recorded
    assert list(tokenizer["requests/s"]) == pytest.approx([689.9, 689.9], abs=0.05)
    # The detector served nothing: it has no numbers, not zeros.
    assert history.model_series["detector"] == {}


# --- History: findings -------------------------------------------------------------------


def test_a_finding_that_stops_firing_is_kept_as_cleared_and_can_fire_again() -> None:
    history = History()
    history.add(frame(incident(), at=100.0))
    history.add(frame(detector_recovered(), at=101.0))
    assert len(history.seen) == 7
    cleared = {s.finding.rule: s for s in history.seen.values() if not s.firing}
    assert set(cleared) == {"TD601", "TD602"}
    assert (cleared["TD601"].first_at, cleared["TD601"].last_at) == (100.0, 100.0)
    firing = [s for s in history.seen.values() if s.firing]
    assert {(s.first_at, s.last_at) for s in firing} == {(100.0, 101.0)}
    history.add(frame(incident(), at=102.0))
    again = next(s for s in history.seen.values() if s.finding.rule == "TD601")
    assert again.firing and (again.first_at, again.last_at) == (100.0, 102.0)


def test_findings_firing_only_and_ordering() -> None:
    history = History()
    history.add(frame(incident(), at=100.0))
    history.add(frame(detector_recovered(), at=101.0))
    firing = [(s.finding.rule, s.firing) for s in history.findings(firing_only=True)]
    assert firing == [("TD613", True), ("TD814", True), ("TD701", True), ("TD611", True),
                      ("TD612", True)]
    everything = [(s.finding.rule, s.firing) for s in history.findings(firing_only=False)]
    assert everything == [*firing, ("TD602", False), ("TD601", False)]


def test_a_finding_whose_numbers_change_is_the_same_finding() -> None:
    history = History()
    evidence = incident()
    history.add(frame(evidence, at=100.0))
    result = judge(evidence)
    moved = [records.replace(f, message=f.message.replace("354.5", "412.25")
                                 .replace("87%", "91%")) for f in result.findings]
    history.add(Frame(101.0, evidence, records.replace(result, findings=moved)))
    assert len(history.seen) == 7
    backlog = next(s for s in history.seen.values() if s.finding.rule == "TD611")
    assert backlog.firing and backlog.first_at == 100.0
    assert "412.25 ms" in backlog.finding.message, "the latest numbers are shown"


def test_watch_key_ignores_numbers_only() -> None:
    base = finding(message="requests wait 354.5 ms in the queue, 87% of their time")
    assert watch_key(base) == watch_key(records.replace(
        base, message="requests wait 1,024.75 ms in the queue, 9% of their time"))
    assert watch_key(base) == watch_key(records.replace(
        base, message="requests wait -3 ms in the queue, 100% of their time"))
    for other in (records.replace(base, message="requests wait 354.5 ms in the batcher"),
                  records.replace(base, rule="TD612"),
                  records.replace(base, model="other"),
                  records.replace(base, model=None),
                  records.replace(base, version="2"),
                  records.replace(base, location=Location(None, None, "input[0]"))):
        assert watch_key(other) != watch_key(base)


def test_two_gpus_under_pressure_are_two_findings() -> None:
    evidence = incident()
    assert evidence.gpu is not None
    second = copy.deepcopy(evidence.gpu.devices[0])
    second.index, second.uuid = 1, second.uuid[:-4] + "beef"
    evidence.gpu.devices.append(second)
    result = judge(evidence)
    pressure = [f for f in result.findings if f.rule == "TD701"]
    assert [f.evidence.get("gpu") for f in pressure] == [0, 1]
    history = History()
    history.add(Frame(SAMPLED_AT, evidence, result))
    assert len(history.seen) == len(result.findings)


def test_window_of_the_rates() -> None:
    evidence = incident()
    assert frame(evidence).window_s() == pytest.approx(5.0, abs=0.5)
    assert evidence.server is not None
    evidence.server.samples = evidence.server.samples[-1:]
    assert frame(evidence).window_s() is None


def test_the_gauges_turn_red_where_td701_fires() -> None:
    evidence = incident()
    assert frame(evidence).gpu_memory_limit() == 0.9  # TD701's default
    evidence.options.thresholds = {"gpu-memory": 0.8}
    assert frame(evidence).gpu_memory_limit() == 0.8
