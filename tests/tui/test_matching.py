"""The findings filter's query syntax, and the log lines matched to the rules that explain them."""

from __future__ import annotations

import pytest
from triton_doctor import records
from triton_doctor.catalogue import all_rules
from triton_doctor.evidence import LogEvidence
from triton_doctor.findings import Finding, Location, Severity
from triton_doctor.tui.findings import matches
from triton_doctor.tui.log import MAX_LINES, entries, error_lines
from triton_doctor.tui.state import Seen, watch_key

from tests.tui.support import incident, judge


@pytest.fixture(autouse=True)
def _registered_rules() -> None:
    """Lines are matched to the words the registered rules declare: register them even when
    this file runs alone."""
    all_rules()


def seen(rule: str, name: str, severity: Severity, model: str | None, message: str,
         fix: str | None = None, triton: str | None = None) -> Seen:
    found = Finding(rule=rule, name=name, severity=severity, title="", model=model,
                    version=None, location=Location(None), message=message,
                    triton_message=triton, fix=fix, evidence={})
    return Seen(found, watch_key(found), 0.0, 0.0)


BACKLOG = seen("TD611", "queue-backlog", Severity.WARNING, "image_classifier",
               "requests wait 354.5 ms in the queue", fix="Raise the instance count")
FAILING = seen("TD613", "failure-rate", Severity.ERROR, "tokenizer",
               "1157 of 4628 requests failed", triton="token id out of the vocabulary")
GPU = seen("TD701", "gpu-memory-pressure", Severity.WARNING, None, "GPU 0 is 95% full")
INFO = seen("TD109", "config-missing", Severity.INFO, "resnet50", "no config.pbtxt")
ALL = [BACKLOG, FAILING, GPU, INFO]


@pytest.mark.parametrize(("query", "expected"), [
    ("", ALL),
    ("   ", ALL),
    ("queue", [BACKLOG]),
    ("QUEUE", [BACKLOG]),
    ("instance", [BACKLOG]),  # the fix is searched
    ("vocabulary", [FAILING]),  # and the server's own words
    ("queue-backlog", [BACKLOG]),  # and the rule's name
    ("td6", [BACKLOG, FAILING]),  # a bare word matches inside the rule id too
    ("requests wait", [BACKLOG]),  # every word must match
    ("requests failed", [FAILING]),
    ("rule:TD6", [BACKLOG, FAILING]),
    ("rule:td61", [BACKLOG, FAILING]),
    ("rule:TD7", [GPU]),
    ("rule:gpu-memory", [GPU]),
    ("rule:memory", []),  # a prefix, not a word inside
    ("model:tok", [FAILING]),
    ("model:tokenizer", [FAILING]),
    ("model:kenizer", []),
    ("model:(server)", [GPU]),
    ("model:(", [GPU]),
    ("severity:error", [FAILING]),
    ("severity:warning", [BACKLOG, FAILING, GPU]),  # at least that severe
    ("sev:info", ALL),
    ("sev:WARNING", [BACKLOG, FAILING, GPU]),
    ("severity:fatal", []),  # not a severity: nothing, rather than everything
    ("sev:warning model:image", [BACKLOG]),
    ("sev:error model:image", []),
    ("model:", []),  # a field without a value is a word to search for
    ("severity:", []),
    ("other:thing", []),
])
def test_filter_query(query: str, expected: list[Seen]) -> None:
    assert [s for s in ALL if matches(s, query)] == expected


def test_the_recorded_incident_s_error_lines_are_all_in_its_diagnosis() -> None:
    """Every line of the incident's log is the tokenizer's one error, once per failed request:
    TD814 claims them all, so they show once as its finding and not again as other lines."""
    evidence = incident()
    log = evidence.log
    assert log is not None
    undiagnosed = error_lines(records.replace(log, occurrences=[]))
    assert [(e.number, e.count, e.rule) for e in undiagnosed] == [(60, 60, "TD814")]
    assert error_lines(log) == []
    rows = entries(log, judge(evidence).findings)
    assert [(e.line, e.count, e.rule, e.model) for e in rows] == [(1, 60, "TD814", "tokenizer")]
    assert "token id out of the vocabulary" in rows[0].text


def test_error_lines_pick_problems_and_match_them_to_rules() -> None:
    log = LogEvidence("server.log", [
        "I1129 21:52:40.000001 6646 server.cc:674] +----------+---------+--------+",
        "I1129 21:52:40.000002 6646 model_lifecycle.cc:849] successfully loaded 'reranker'",
        "E1129 21:52:41.000003 6646 model_lifecycle.cc:654] failed to load 'detector' "
        "version 1: Internal: FileNotFoundError: anchors.json",
        "W1129 21:52:42.000004 6646 pinned_memory_manager.cc:273] Unable to allocate pinned "
        "system memory, pinned memory pool will not be available",
        "E1129 21:52:43.000005 6646 backend_model.cc:692] ERROR: Failed to create instance: "
        "unable to find backend library for backend 'onnx'",
        "F1129 21:52:44.000006 6646 cuda_memory_manager.cc:102] CUDA out of memory",
        "some library printed: Exception in thread",
        "W1129 21:52:45.000007 6647 pinned_memory_manager.cc:273] Unable to allocate pinned "
        "system memory, pinned memory pool will not be available",
    ])
    found = [(e.number, e.rule, e.count) for e in error_lines(log)]
    assert found == [
        (3, "TD801", 1),  # "failed to load"
        (5, "TD504", 1),  # a load error's reason
        (6, "TD803", 1),  # out of memory
        (7, None, 1),  # a problem word without a glog prefix, no rule
        (8, None, 2),  # the same warning twice (other time, other thread): once, counted
    ]


def test_error_lines_without_a_log() -> None:
    assert error_lines(None) == []
    assert error_lines(LogEvidence("server.log", [])) == []


def test_error_lines_keep_the_most_recent_distinct_lines() -> None:
    log = LogEvidence("server.log", [f"E1129 21:52:41.000003 6646 x.cc:1] error number {n}"
                                     for n in range(MAX_LINES + 50)])
    lines = error_lines(log)
    assert len(lines) == MAX_LINES
    assert lines[0].number == 51 and lines[-1].number == MAX_LINES + 50


def test_a_full_dev_shm_in_the_log_is_explained_by_the_shm_size_rule() -> None:
    log = LogEvidence("server.log", [
        "E1129 21:52:41.000003 6646 pb_stub.cc:402] Failed to increase the shared memory pool "
        "size for key 'triton_python_backend_shm_region_7' to 134217728 bytes. If you are "
        "running Triton inside docker, use '--shm-size' flag to control the shared memory "
        "region size.",
    ])
    assert [e.rule for e in error_lines(log)] == ["TD805"]
