"""How the differential fuzzer counts, on synthetic judgements: no server needed, so the
figures the acceptance rests on are tested on every machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.differential.fuzz_generate import GeneratedRepository
from tests.differential.fuzz_run import Judgement, _judge_one, _local_paths, _refused_for, figures
from tests.differential.oracle import DoctorRun, ExplicitModeResult, LoadResult, Refusal

REFUSED = "failed to load 'x': bad config"


def _judgement(server: dict[str, str], erring: dict[str, str], **extra: Any) -> Judgement:
    """A repository whose models the server answered as ``server``; check errs on the models
    of ``erring``, quoting the text given."""
    errors = [
        {"rule": "TD100", "model": model, "message": "m", "triton_message": quoted}
        for model, quoted in erring.items()
    ]
    refused = any(said != "READY" for said in server.values())
    return Judgement(0, "p", [], server, errors, refused, bool(errors), **extra)


def test_every_repository_counts_in_the_verdict_and_each_failure_has_its_kind() -> None:
    judgements = [
        _judgement({"a": "READY"}, {}),
        _judgement({"a": REFUSED}, {"a": REFUSED}, exact=True),
        _judgement({"a": "READY"}, {"a": "made up"}),
        _judgement({"a": REFUSED}, {}),
        _judgement({}, {}, unjudged="no answer loading a"),
        _judgement({"a": "READY"}, {}, check_failed="check exited 1"),
        _judgement({"a": "READY"}, {}, rule_crashes=["TD100 a: internal error in the rule"]),
    ]
    f = figures(judgements)
    assert [j.kind for j in judgements] == [
        "agree", "agree", "false-error", "miss", "unjudged", "check-failed", "rule-crashed",
    ]  # fmt: skip
    assert (f.repositories, f.judged, f.verdict_agree) == (7, 5, 2)
    assert f.verdict_rate == 2 / 7
    assert (f.false_errors, f.misses, f.unjudged, f.check_failed, f.rule_crashed) == (1, 1, 1, 1, 1)
    assert (f.both_refused, f.exact_agree) == (1, 1)
    assert not f.met


def test_an_error_on_a_ready_model_counts_where_the_repository_is_refused() -> None:
    server = {"s0": REFUSED, "s1": "READY", "e": "ensemble 'e' depends on 's0'"}
    judgement = _judgement(server, {"s0": REFUSED, "s1": "made up"}, exact=True)
    assert judgement.verdict_agrees and judgement.false_error_models == ["s1"]
    assert judgement.kind == "model-false-error"
    f = figures([judgement] * 100)
    assert (f.verdict_rate, f.exact_rate, f.false_errors, f.model_false_errors) == (1, 1, 0, 100)
    assert not f.met


def test_met_needs_every_figure() -> None:
    clean = [_judgement({"a": "READY"}, {})] * 50
    clean += [_judgement({"a": REFUSED}, {"a": REFUSED}, exact=True)] * 49
    assert figures(clean).met
    assert figures([*clean, _judgement({"a": REFUSED}, {})]).met  # 99 % and no false error
    assert not figures([*clean, _judgement({"a": "READY"}, {"a": "made up"})]).met
    assert not figures([*clean, _judgement({}, {}, unjudged="the server crashed")]).met
    assert not figures([*clean, _judgement({"a": "READY"}, {}, check_failed="timeout")]).met
    assert not figures([*clean, _judgement({"a": "READY"}, {}, rule_crashes=["TD1 a: x"])]).met
    assert not figures([*clean, *[_judgement({"a": REFUSED}, {})] * 2]).met  # 98 %


def _doctor(stdout: str, returncode: int = 0) -> DoctorRun:
    return DoctorRun(["triton-doctor"], returncode, stdout, "stderr")


def _judge_ready(doctor: DoctorRun) -> Judgement:
    repository = GeneratedRepository(3, "f1n0003", {}, ("f1n0003_m",), ())
    load = LoadResult("f1n0003_m", 200, None, 0.1)
    outcome = ExplicitModeResult(Path("/b"), {"f1n0003_m": load}, {}, [], "")
    return _judge_one(repository, outcome, doctor, Path("/b"), Path("/r"), "")


def test_check_without_a_report_or_with_a_crashed_rule_is_a_disagreement() -> None:
    failed = _judge_ready(_doctor("Traceback ...", returncode=1))
    assert failed.kind == "check-failed" and "did not print a JSON report" in failed.check_failed
    report = {
        "findings": [],
        "skipped": [
            {"rule": "TD1", "model": "f1n0003_m", "reason": "needs x", "internal": False},
            {"rule": "TD2", "model": "f1n0003_m", "reason": "internal error", "internal": True},
        ],
    }
    crashed = _judge_ready(_doctor(json.dumps(report)))
    assert crashed.rule_crashes == ["TD2 f1n0003_m: internal error"]
    assert crashed.kind == "rule-crashed" and not crashed.verdict_agrees
    assert crashed.doctor_stderr == "stderr"
    clean = _judge_ready(_doctor(json.dumps({"findings": [], "skipped": []})))
    assert clean.kind == "agree" and not clean.doctor_stderr


def test_paths_are_localised_for_every_prefix_the_generator_makes() -> None:
    batch, own = Path("/w/batch000"), Path("/w/repositories")
    for prefix in ("f1n0003", "f-7n0003", "f1n1000"):
        text = f"{batch}/{prefix}_m/config.pbtxt; {batch}/{prefix}0_m/1/model.py"
        assert _local_paths(text, batch, own, prefix) == (
            f"{own}/{prefix}/{prefix}_m/config.pbtxt; {batch}/{prefix}0_m/1/model.py"
        )


def test_an_ensemble_refused_for_its_steps_counts_when_their_reasons_are_quoted() -> None:
    steps = "f-1n10000_s0, f-1n10000_s1"
    listed = f"ensemble f-1n10000_e contains models that are not available or ambiguous: {steps}\n"
    said = Refusal("f-1n10000_e", listed, "load response")
    assert _refused_for(said, {"f-1n10000_s0", "f-1n10000_s1"})
    assert not _refused_for(said, {"f-1n10000_s0"})
    one = (
        "ensemble 'f-2n0001_e' depends on 'f-2n0001_s1' which has no loaded version. "
        "Model 'f-2n0001_s1' loading failed with error: bad"
    )
    assert _refused_for(Refusal("f-2n0001_e", one, "load response"), {"f-2n0001_s1"})
    assert not _refused_for(Refusal("f-2n0001_e", one, "load response"), set())
    assert not _refused_for(Refusal("m", "some other reason", "load response"), {"m"})
    assert not _refused_for(None, {"m"})
