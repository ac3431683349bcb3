"""Differential tests: triton-doctor must refuse what the real Triton server refuses.

One explicit-mode server (2.51.0, from the nvidia-pytriton wheel) loads every case of one
shared repository; triton-doctor checks the same repository once, in parallel. Then each case
is its own test:

* broken case: (a) the server refused it and we captured its reason, which still contains
  the text seen when the case was written (asserted first, so a change of server shows up
  here and not as a linter failure); (b) triton-doctor has an error finding for the model
  whose ``triton_message`` quotes that reason (or is quoted by it);
* good case: the server made it READY and triton-doctor reports no error for it;
* accepted-silently case: a fact about the server only (it loads READY), so that a linter
  warning about it never claims the server refuses it;
* inference probe (TD310): the server loads the model READY, one inference request shows
  what the wrong tensor name does, and triton-doctor warns exactly for the wrong names.

A case in ``DISAGREEMENTS`` is a strict xfail: the server's words are still checked, and the
entry must go once triton-doctor agrees.

The server keeps its default auto-complete (as users run it), so triton-doctor runs without
``--disable-auto-complete-config``. With auto-complete off the server reports the same texts,
but the input/output checks move from load time to poll time (see the notes in the report).
triton-doctor judges for the server it is compared with (``SERVER_TARGET``): release 24.10,
no GPUs.

The hidden-directory case needs the default model-control mode, where the whole server exits;
it gets its own short server run, started alongside the main one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cases import (
    ACCEPTED_SILENTLY,
    AUTO_COMPLETE_GOOD,
    AUTO_COMPLETE_REFUSED,
    AUTO_COMPLETED_ENSEMBLES,
    BROKEN_CASES,
    CRASHES_SERVER,
    DIFFERENT_WORDS,
    DISAGREEMENTS,
    ENSEMBLE_TENSORS_GOOD,
    ENSEMBLE_TENSORS_REFUSED,
    GOOD_CASES,
    HIDDEN_DIRECTORY,
    MODEL_PY_GOOD,
    TENSOR_NAME_PROBES,
    WARMUP_GOOD,
    Case,
    InferenceProbe,
)
from .oracle import (
    EXPLICIT_MODE,
    SERVER_TARGET,
    DoctorRun,
    ExplicitModeResult,
    InferAnswer,
    PendingDoctor,
    Refusal,
    TritonServer,
    agreeing,
    infer,
    load_all,
    parse_log,
    strict_xfails,
    version_dirs,
    write_repository,
)

REFUSED = [
    *BROKEN_CASES,
    *AUTO_COMPLETE_REFUSED,
    *AUTO_COMPLETED_ENSEMBLES,
    *ENSEMBLE_TENSORS_REFUSED,
]
ACCEPTED = [
    *GOOD_CASES,
    *AUTO_COMPLETE_GOOD,
    *MODEL_PY_GOOD,
    *ENSEMBLE_TENSORS_GOOD,
    *WARMUP_GOOD,
]
SINGLE_MODEL_CASES = [
    *ACCEPTED,
    *REFUSED,
    *DIFFERENT_WORDS,
    *ACCEPTED_SILENTLY,
    *(probe.case for probe in TENSOR_NAME_PROBES),
]


def _known_disagreements(cases: list[Case]) -> list[object]:
    return strict_xfails(cases, lambda case: case.name, DISAGREEMENTS)


@dataclass
class WholeRepositoryRun:
    """A default-mode start over a whole repository: exit code and what the log said."""

    repository: Path
    returncode: int | None
    log: str


@dataclass
class Oracle:
    explicit: ExplicitModeResult
    doctor: DoctorRun
    hidden: WholeRepositoryRun
    hidden_doctor: DoctorRun
    inferences: dict[str, InferAnswer]


@pytest.fixture(scope="module")
def oracle(
    triton_server: Callable[..., TritonServer], tmp_path_factory: pytest.TempPathFactory
) -> Oracle:
    """Run both servers and both triton-doctor checks at once; the servers are stopped here."""
    repository = write_repository(
        tmp_path_factory.mktemp("differential") / "repository", SINGLE_MODEL_CASES
    )
    hidden_repository = write_repository(
        tmp_path_factory.mktemp("hidden") / "repository", [HIDDEN_DIRECTORY]
    )
    doctor = PendingDoctor(repository, *SERVER_TARGET)
    hidden_doctor = PendingDoctor(hidden_repository, *SERVER_TARGET)
    hidden = triton_server(hidden_repository, wait_for=None)
    try:
        server = triton_server(repository, *EXPLICIT_MODE, wait_for="/v2/health/live")
        try:
            explicit = load_all(server, [case.name for case in SINGLE_MODEL_CASES])
            inferences = {p.case.name: infer(server, p.case.name) for p in TENSOR_NAME_PROBES}
        finally:
            server.stop()
        returncode = hidden.wait_exit(timeout=60)
    finally:
        hidden.stop()
        doctor_run, hidden_doctor_run = doctor.result(), hidden_doctor.result()
    hidden_run = WholeRepositoryRun(
        hidden_repository, returncode, hidden.to_source_paths(hidden.log())
    )
    return Oracle(explicit, doctor_run, hidden_run, hidden_doctor_run, inferences)


def _server_refusal(oracle: Oracle, case: Case) -> Refusal:
    load = oracle.explicit.loads[case.name]
    assert not load.ok, f"the server ACCEPTED {case.name} ({case.broken})"
    assert load.status in (400, 500), f"no answer for {case.name}: {load}"
    said = oracle.explicit.refusals.get(case.name)
    assert said is not None, (
        f"the server refused {case.name} but its reason was not found\n"
        f"load answer: {load.error!r}\nlog tail:\n{oracle.explicit.log[-3000:]}"
    )
    assert case.expect in said.text, (
        f"the server's reason for {case.name} changed\nexpected to contain: {case.expect!r}\n"
        f"got: {said.text!r}"
    )
    return said


def _assert_doctor_agrees(run: DoctorRun, said: Refusal, *models: str | None) -> None:
    findings = run.for_model(*models)
    assert agreeing(findings, said), (
        f"triton-doctor has no error finding for {said.model} quoting the server\n"
        f"server said ({said.source}): {said.text!r}\ntriton-doctor said: {findings!r}"
    )


@pytest.mark.parametrize("case", _known_disagreements(REFUSED))
def test_broken_model_is_refused_by_both(oracle: Oracle, case: Case) -> None:
    said = _server_refusal(oracle, case)
    _assert_doctor_agrees(oracle.doctor, said, case.name)


@pytest.mark.parametrize("case", DIFFERENT_WORDS, ids=lambda case: case.name)
def test_refused_by_both_in_other_words(oracle: Oracle, case: Case) -> None:
    _server_refusal(oracle, case)
    errors = [f for f in oracle.doctor.for_model(case.name) if f.get("severity") == "error"]
    assert errors, f"triton-doctor reports no error for {case.name}, which the server refuses"


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda case: case.name)
def test_good_model_is_accepted_by_both(oracle: Oracle, case: Case) -> None:
    load = oracle.explicit.loads[case.name]
    assert load.ok, f"the server refused good case {case.name}: {load.error}"
    for model in (case.name, *case.extra_models):
        for version in version_dirs(case, model):
            state = oracle.explicit.states.get((model, version))
            assert state == "READY", f"{model} version {version} is {state}, not READY"
    errors = [
        f
        for f in oracle.doctor.for_model(case.name, *case.extra_models)
        if f.get("severity") == "error"
    ]
    assert not errors, f"triton-doctor reports errors for good case {case.name}: {errors!r}"


@pytest.mark.parametrize("case", ACCEPTED_SILENTLY, ids=lambda case: case.name)
def test_server_accepts_silently(oracle: Oracle, case: Case) -> None:
    """Facts, not linter checks: these look wrong but the server loads them READY."""
    load = oracle.explicit.loads[case.name]
    assert load.ok, f"the server now refuses {case.name} ({case.broken}): {load.error}"
    assert oracle.explicit.states.get((case.name, "1")) == "READY"


@pytest.mark.parametrize("probe", TENSOR_NAME_PROBES, ids=lambda probe: probe.case.name)
def test_tensor_names_show_at_inference_not_at_load(oracle: Oracle, probe: InferenceProbe) -> None:
    """TD310: the server loads the model READY; the request shows the wrong name, and
    triton-doctor warns exactly when it does (never with an error: the model loads)."""
    case = probe.case
    load = oracle.explicit.loads[case.name]
    assert load.ok, f"the server refused {case.name} ({case.broken}): {load.error}"
    assert oracle.explicit.states.get((case.name, "1")) == "READY"
    answer = oracle.inferences[case.name]
    if probe.error:
        assert answer.status != 200, f"inference on {case.name} succeeded: {answer}"
        assert answer.error is not None and probe.error in answer.error, (
            f"the server's inference error for {case.name} changed\n"
            f"expected to contain: {probe.error!r}\ngot: {answer.error!r}"
        )
    else:
        assert answer.status == 200, f"inference on {case.name} failed: {answer}"
        assert answer.outputs == probe.outputs, f"{case.name} answered {answer.outputs}"
    findings = oracle.doctor.for_model(case.name)
    warned = [f for f in findings if f.get("rule") == "TD310"]
    assert bool(warned) == probe.warns, f"TD310 for {case.name}: {warned!r}"
    assert all(f.get("severity") == "warning" for f in warned)
    errors = [f for f in findings if f.get("severity") == "error"]
    assert not errors, f"triton-doctor reports errors for {case.name}, which loads: {errors!r}"


def test_hidden_directory_fails_the_whole_repository(oracle: Oracle) -> None:
    run, case = oracle.hidden, HIDDEN_DIRECTORY
    assert run.returncode == 1, f"default-mode server exit code {run.returncode}\n{run.log[-3000:]}"
    log = parse_log(run.log)
    fatal = [line.message for line in log if line.level == "fatal"]
    prefix = f"failed to load model '{case.name}': "
    why = [line.message for line in log if line.level == "E" and line.message.startswith(prefix)]
    assert why, f"no reason logged for {case.name}\n{run.log[-3000:]}"
    said = Refusal(case.name, why[0], "log: failed to load model", tuple(fatal))
    assert case.expect in said.text, f"the server's reason changed: {said.text!r}"
    # A finding about a stray directory may be reported for the repository as a whole.
    _assert_doctor_agrees(oracle.hidden_doctor, said, case.name, None)


@pytest.fixture(scope="module")
def crash_doctor(tmp_path_factory: pytest.TempPathFactory) -> DoctorRun:
    """triton-doctor alone over the cases that can crash 2.51 (the server is not started)."""
    repository = write_repository(tmp_path_factory.mktemp("crashes") / "repository", CRASHES_SERVER)
    return PendingDoctor(repository, *SERVER_TARGET).result()


@pytest.mark.parametrize("case", CRASHES_SERVER, ids=lambda case: case.name)
def test_cases_that_crash_the_server_are_refused_offline(
    crash_doctor: DoctorRun, case: Case
) -> None:
    """The server's words were recorded from single loads that did not crash; triton-doctor
    must quote them, so users learn of the problem without risking the crash."""
    said = Refusal(case.name, case.expect, "recorded from a single 2.51 load", ())
    _assert_doctor_agrees(crash_doctor, said, case.name)
