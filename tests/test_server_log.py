"""Reading a server log: each line's shape (glog, docker, CRI, JSON), the model a message
names, time spans, and a scan whose evidence does not depend on how the bytes arrive."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.checks import log_ranges, log_scan
from triton_doctor.checks.log_scan import LogScan
from triton_doctor.checks.logs import read_log
from triton_doctor.evidence import LogEvidence, to_jsonable
from triton_doctor.triton.server_log import LogLine, model_named, read_line, seconds_between

all_rules()  # registers every rule: the log rules' words, and the others', come from there

GLOG = 'E1201 19:47:36.620393 13872 model_lifecycle.cc:642] '
LOAD_FAILED = "failed to load 'tokenizer' version 1: Internal: RuntimeError: no tokenizer"


# --- read_line: one line in each shape ------------------------------------------------------

def test_glog_line_with_quoted_message_is_unquoted() -> None:
    message = f"{LOAD_FAILED}\n\nAt:\n  /models/tokenizer/1/model.py(4): initialize\n"
    line = read_line(GLOG + json.dumps(message))
    assert line == LogLine("1201 19:47:36.620393", message, "E")

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def test_glog_line_of_older_releases_is_read_as_written() -> None:
    line = read_line(f"I0210 23:48:21.607208 1 model_lifecycle.cc:757] {LOAD_FAILED}")
    assert line == LogLine("0210 23:48:21.607208", LOAD_FAILED, "I")


def test_docker_timestamps_line_carries_docker_time() -> None:
    line = read_line(f"2026-12-01T19:47:36.620393000Z {GLOG}{json.dumps(LOAD_FAILED)}")
    assert line == LogLine("2026-12-01T19:47:36.620393000Z", LOAD_FAILED, "E")


@pytest.mark.parametrize("tag", ["F", "P"])
def test_cri_line_full_or_partial_carries_its_time(tag: str) -> None:
    line = read_line(f"2026-12-01T19:47:36.620393Z stderr {tag} {GLOG}{json.dumps(LOAD_FAILED)}")
    assert line == LogLine("2026-12-01T19:47:36.620393Z", LOAD_FAILED, "E")


def test_json_record_with_escaped_quotes_and_newlines() -> None:
    message = "failed to load 'm' version 1: said \"no\"\nAt:\n  model.py(4)"
    record = json.dumps({"log": GLOG + json.dumps(message) + "\n", "stream": "stderr",
                         "time": "2026-12-01T19:47:36.620393Z"})
    assert read_line(record) == LogLine("2026-12-01T19:47:36.620393Z", message, "E")


def test_json_record_of_a_log_shipper_keys() -> None:
    record = json.dumps({"@timestamp": "2026-12-01T19:47:36Z", "message": LOAD_FAILED})
    assert read_line(record) == LogLine("2026-12-01T19:47:36Z", LOAD_FAILED, "")


@pytest.mark.parametrize("text", [
    "just some words",
    '{"error":"inference request batch-size must be <= 8 for \'m\'"}',  # a client's answer
    "{not json at all",
    "Signal (11) received.",
])
def test_line_of_no_known_shape_is_its_whole_message(text: str) -> None:
    assert read_line(f"  {text} \n") == LogLine("", text, "")


# --- model_named ----------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "model"), [
    (LOAD_FAILED, "tokenizer"),
    ("Poll failed for model directory 'detector': unexpected platform type", "detector"),
    ("in ensemble 'pipeline', [request id: 1] expected 1 inputs for model 'add'", "pipeline"),
    ("Failed to process the request(s) for model instance 'damage_0', message: x", "damage"),
    ("Failed to process the request(s) for model instance 'damage_0_0', message: x", "damage"),
    ("Stub process 'embedder_0_0' is not healthy.", "embedder"),
    ("Stub process 'resnet_50_0_0' is not healthy.", "resnet_50"),
    ("| ranker      | 1       | UNAVAILABLE: Invalid argument: no backend |", "ranker"),
    ("inference request batch-size must be <= 8 for 'healthy_add'", "healthy_add"),
    ("Stub process is unhealthy and it will be restarted.", ""),
    ("|             |         | At:                    |", ""),
])
def test_model_named(message: str, model: str) -> None:
    assert model_named(message) == model


# --- seconds_between ------------------------------------------------------------------------

def test_seconds_between_glog_times() -> None:
    assert seconds_between("1201 19:47:36.500000", "1201 19:48:38.750000") == \
        pytest.approx(62.25)
    assert seconds_between("1201 19:47:36", "1201 19:47:40") == pytest.approx(4)


def test_seconds_between_rfc3339_with_nanoseconds_and_zones() -> None:
    assert seconds_between("2026-12-01T19:47:36.620393123Z",
                           "2026-12-01T19:47:38.622774000Z") == pytest.approx(2.002381)
    assert seconds_between("2026-12-01T19:47:36Z", "2026-12-01T20:47:37+01:00") == \
        pytest.approx(1)


@pytest.mark.parametrize(("first", "last"), [
    ("1201 19:47:36.620393", "2026-12-01T19:47:38Z"),  # glog's time has no zone
    ("", "1201 19:47:36.620393"),
    ("1231 23:59:59.000000", "0101 00:00:01.000000"),  # New Year: glog has no year
    ("not a time", "1201 19:47:36"),
])
def test_seconds_between_is_none_when_it_cannot_be_known(first: str, last: str) -> None:
    assert seconds_between(first, last) is None


# --- LogScan --------------------------------------------------------------------------------

def _glog(second: int, message: str, severity: str = "E") -> bytes:
    return f"{severity}1201 19:{second // 60:02d}:{second % 60:02d}.000001 7 x.cc:1] " \
        f"{json.dumps(message)}\n".encode()


def _sample_log() -> bytes:
    """Failures of several models among healthy lines, some repeated, one traceback."""
    rng = random.Random(14)
    parts: list[bytes] = []
    for second in range(600):
        pick = rng.random()
        if pick < 0.05:
            parts.append(_glog(second, f"failed to load 'm{second % 3}' version 1: Internal: x"))
        elif pick < 0.10:
            parts.append(_glog(second, "Stub process 'embedder_0_0' is not healthy."))
        elif pick < 0.11:
            parts.append(_glog(second, "error: creating server: Internal - failed to load "
                               "all models"))
        else:
            parts.append(_glog(second, f"HTTP request: 2 /v2/models/m/infer {second}", "I"))
    parts.append(b"Signal (11) received.")  # the last line, without its newline
    return b"".join(parts)


def _scan(data: bytes, sizes: list[int] | None = None, **kwargs: Any) -> dict[str, Any]:
    """The evidence of ``data`` fed in blocks of ``sizes`` (cycled), or whole."""
    scan = LogScan("test", **kwargs)
    at, turn = 0, 0
    while at < len(data):
        size = sizes[turn % len(sizes)] if sizes else len(data)
        scan.feed(data[at:at + size])
        at, turn = at + size, turn + 1
    return to_jsonable(scan.evidence())


def test_evidence_does_not_depend_on_how_the_bytes_are_cut() -> None:
    data = _sample_log()
    whole = _scan(data)
    rng = random.Random(7)
    assert {(o["rule"], o["model"]) for o in whole["occurrences"]} == {
        ("TD801", "m0"), ("TD801", "m1"), ("TD801", "m2"), ("TD804", "embedder"),
        ("TD802", ""), ("TD811", "")}
    assert sum(o["count"] for o in whole["occurrences"]) > 30
    for sizes in ([1], [7], [rng.randint(1, 5000) for _ in range(50)]):
        assert _scan(data, sizes) == whole, sizes


def test_line_numbers_are_right_across_blocks() -> None:
    lines = [f"I1201 19:00:00.000001 7 x.cc:1] \"healthy {n}\"" for n in range(1, 301)]
    for number, model in ((1, "first"), (150, "middle"), (300, "last")):
        lines[number - 1] = f"E1201 19:00:00.000001 7 x.cc:1] \"failed to load '{model}' " \
                            "version 1: x\""
    data = "\n".join(lines).encode() + b"\n"
    for sizes in (None, [1], [7], [4093]):
        occurrences = _scan(data, sizes)["occurrences"]
        assert [(o["model"], o["first_line"], o["last_line"]) for o in occurrences] == [
            ("first", 1, 1), ("middle", 150, 150), ("last", 300, 300)], sizes


def test_a_line_longer_than_the_limit_is_cut_and_still_counted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_scan, "MAX_LINE_BYTES", 64)
    scan = LogScan("test")
    long = b"failed to load 'huge' version 1: " + b"x" * 1000  # no newline yet
    for at in range(0, len(long), 10):
        scan.feed(long[at:at + 10])
    waiting = scan.evidence(final=False)  # the cut part was read without its newline
    assert [(o.model, o.count, o.first_line) for o in waiting.occurrences] == [("huge", 1, 1)]
    scan.feed(b"\nfailed to load 'after' version 1: x\n")
    evidence = scan.evidence()
    assert [(o.model, o.count) for o in evidence.occurrences] == [("huge", 1), ("after", 1)]
    assert evidence.occurrences[1].first_line == evidence.total_lines > 2


def test_nul_holes_of_a_truncated_log_are_dropped() -> None:
    data = b"\0" * 5000 + b"failed to load 'm' version 1: x\n" + b"\0" * 10 + b"tail\n"
    for sizes in (None, [1], [333]):
        evidence = _scan(data, sizes)
        assert [(o["model"], o["first_line"]) for o in evidence["occurrences"]] == [("m", 1)]
        assert evidence["lines"] == ["failed to load 'm' version 1: x", "tail"]
        assert evidence["occurrences"][0]["first_message"] == "failed to load 'm' version 1: x"


def test_tail_keeps_the_last_lines() -> None:
    data = b"".join(f"line {n}\n".encode() for n in range(1, 101))
    for sizes in (None, [1], [9]):
        evidence = _scan(data, sizes, tail_lines=5)
        assert evidence["lines"] == [f"line {n}" for n in range(96, 101)], sizes
        assert evidence["total_lines"] == 100


def test_models_beyond_the_limit_fold_into_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_scan, "MAX_OCCURRENCES", 2)
    data = b"".join(f"failed to load '{m}' version 1: x\n".encode() for m in "abcdab")
    occurrences = _scan(data)["occurrences"]
    assert [(o["rule"], o["model"], o["count"]) for o in occurrences] == [
        ("TD801", "a", 2), ("TD801", "b", 2), ("TD801", "", 2)]


def test_words_only_in_the_json_wrapper_are_not_counted() -> None:
    record = {"log": 'I1201 19:00:00.000001 7 x.cc:1] "all is well"\n',
              "stream": "error: creating server: Internal - failed to load all models",
              "time": "2026-12-01T19:00:00Z"}
    data = (json.dumps(record) + "\n").encode() * 3
    assert _scan(data)["occurrences"] == []


def test_a_model_failing_every_request_is_one_occurrence() -> None:
    line = "Stub process 'embedder_0_0' is not healthy."
    data = b"".join(_glog(second, line) for second in range(3000))
    for sizes in (None, [1000]):
        occurrences = _scan(data, sizes)["occurrences"]
        assert [(o["rule"], o["model"], o["count"], o["first_line"], o["last_line"])
                for o in occurrences] == [("TD804", "embedder", 3000, 1, 3000)], sizes
        assert occurrences[0]["first_time"] == "1201 19:00:00.000001"
        assert occurrences[0]["last_time"] == "1201 19:49:59.000001"


@pytest.mark.parametrize("template", [
    # The model table's rows: the name is before TensorRT-LLM's "] ".
    "| {} | 1       | UNAVAILABLE: Internal: [TensorRT-LLM][ERROR] Assertion failed: Failed "
    "to deserialize cuda engine |",
    # A line starting like glog's severity, the name unquoted before "] ".
    "Failed to initialize stub, stub process exited unexpectedly: {}_0_0 [pid 9] gone",
])
def test_same_text_after_the_prefix_for_another_model_is_not_merged(template: str) -> None:
    models = ("model_a", "model_b", "model_b", "model_c", "model_b")
    data = "".join(template.format(m) + "\n" for m in models)
    for sizes in (None, [1]):
        occurrences = _scan(data.encode(), sizes)["occurrences"]
        assert [(o["model"], o["count"], o["first_line"], o["last_line"])
                for o in occurrences] == [
            ("model_a", 1, 1, 1), ("model_b", 3, 2, 5), ("model_c", 1, 4, 4)], sizes


def _many_models_log() -> bytes:
    """A dense incident: 300 models, each failing requests, interleaved with healthy lines,
    some repeated texts, a traceback line without glog's prefix, a JSON-wrapped line."""
    rng = random.Random(3)
    lines = []
    for at in range(6000):
        model = f"m{rng.randrange(300)}"
        kind = rng.randrange(5)
        if kind == 0:
            lines.append(f'I1201 10:00:{at % 60:02d}.{at:06d} 7 http_server.cc:1] "HTTP request"')
        elif kind == 1:
            lines.append(f'E1201 10:00:{at % 60:02d}.{at:06d} 9 pb_stub.cc:714] "Failed to '
                         f"process the request(s) for model '{model}_0_0', message: ValueError: "
                         'bad input"')
        elif kind == 2:
            lines.append(f"Stub process '{model}_0_0' is not healthy.")
        elif kind == 3:
            lines.append("ModuleNotFoundError: No module named 'tokenizers'")
        else:
            lines.append(json.dumps({"log": f"E1201 10:00:00.{at:06d} 1 x.cc:1] out of memory "
                                            f"in model '{model}'\n", "time": f"t{at}"}))
    return "".join(line + "\n" for line in lines).encode()


def _interleaved_texts_log() -> bytes:
    """One model failing with two messages: A first and last, B in between (a dense block
    reads text B after text A, though A's last line comes after B's)."""
    def line(at: int, text: str) -> str:
        return (f'E1201 20:{at // 60:02d}:{at % 60:02d}.000001 9 pb_stub.cc:714] "Failed to '
                f"process the request(s) for model 'm_0_0', message: ValueError: {text}\"\n")
    return "".join(line(at, "bad A" if at in (1, 302) else "bad B")
                   for at in range(1, 303)).encode()


@pytest.mark.parametrize("data", [_sample_log(), _many_models_log(), _interleaved_texts_log()],
                         ids=["sample", "dense", "interleaved"])
def test_reading_a_block_whole_or_line_by_line_gives_the_same_evidence(
        monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """A dense block is read a text at a time, a sparse one a line at a time: the same answer."""
    monkeypatch.setattr(log_scan, "DENSE_LINES", 0)
    monkeypatch.setattr(log_scan, "DENSE_SHARE", 10**9)
    dense = _scan(data, [4096])
    monkeypatch.setattr(log_scan, "DENSE_LINES", 10**9)
    monkeypatch.setattr(log_scan, "SAMPLE_BYTES", 0)
    sparse = _scan(data, [4096])
    assert dense == sparse


def test_a_dense_incident_counts_every_problem_line() -> None:
    data = _many_models_log()
    evidence = _scan(data, [4096])
    healthy = sum(b'HTTP request"' in line for line in data.split(b"\n"))
    assert sum(o["count"] for o in evidence["occurrences"]) == data.count(b"\n") - healthy
    rules = {o["rule"] for o in evidence["occurrences"]}
    assert rules == {"TD803", "TD804", "TD807", "TD814"}


def test_the_last_line_is_the_last_whatever_order_texts_are_read_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_scan, "DENSE_LINES", 0)
    monkeypatch.setattr(log_scan, "DENSE_SHARE", 10**9)
    (only,) = _scan(_interleaved_texts_log())["occurrences"]
    assert (only["count"], only["first_line"], only["last_line"]) == (302, 1, 302)
    assert only["last_time"] == "1201 20:05:02.000001" and "bad A" in only["last_message"]


def _read_log_in_ranges(monkeypatch: pytest.MonkeyPatch, path: Path) -> LogEvidence:
    monkeypatch.setattr(log_ranges, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    return read_log(str(path))


@pytest.mark.parametrize("name", ["python_module_missing.log", "repository_load_failed.log",
                                  "python_execute_raises.log", "healthy.log"])
def test_a_log_read_in_ranges_by_several_processes_gives_the_serial_evidence(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = LOGS / name
    serial = read_log(str(path))
    assert _read_log_in_ranges(monkeypatch, path) == serial


def test_ranges_join_counts_lines_and_tail_across_their_bounds(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(_many_models_log() + _interleaved_texts_log())
    serial = read_log(str(path))
    joined = _read_log_in_ranges(monkeypatch, path)
    assert joined == serial
    assert joined.total_lines == 6302 and len(joined.lines) == log_scan.TAIL_LINES


def test_a_child_that_fails_leaves_its_range_to_the_parent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(_many_models_log())
    serial = read_log(str(path))

    def broken(*_: object, **__: object) -> None:
        raise OSError("the pipe broke")

    monkeypatch.setattr(log_ranges.json, "dump", broken)  # only the children write JSON
    assert _read_log_in_ranges(monkeypatch, path) == serial
