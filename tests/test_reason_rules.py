"""A server's words are explained by the rule that declares them (``server_says``, ``log_says``)."""

from __future__ import annotations

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.explain import explain_log_line, explain_reason
from triton_doctor.registry import Rule

RULES = all_rules()

#: Words the server says for several causes, and the rules that quote them: a message holding
#: only these names no rule.
SHARED = {
    "failed to read text proto from": {"TD201", "TD202", "TD203", "TD204"},
    "Invalid model name: Could not determine backend for model": {"TD101", "TD102"},
    "at least one version must be available under the version policy of model": {
        "TD101", "TD104"},
    "failed to open text file for read": {"TD110", "TD243"},
}


@pytest.mark.parametrize(
    ("reason", "rule_id"),
    [
        # Texts tritonserver 2.51 gave (docs/tritonserver-2.51-messages.md).
        ("Invalid argument: unable to find backend library for backend 'onnxruntime', try "
         "specifying runtime on the model configuration.", "TD504"),
        ("Invalid argument: model input 'INPUT0' dimension must be integer >= 1, or -1 to "
         "indicate a variable-size dimension for bad_dims_neg", "TD212"),
        ("Internal: SyntaxError: expected ':' (model.py, line 2)", "TD301"),
        ("Invalid argument: instance group gpu_instance_0 of model gpu_instance has kind "
         "KIND_GPU but no GPUs are available", "TD231"),
        ("Internal: model 'm', tensor 'IN': the model expects dims [4] but the model "
         "configuration specifies dims [16]", "TD309"),
        ("Invalid argument: model 'm', tensor 'x': the model expects 2 dimensions (shape "
         "[-1,16]) but the model configuration specifies 3 dimensions", "TD306"),
        ("Internal: RuntimeError: boom in initialize", None),
        # The longest declared words win: TD113's library path over TD504's backend name,
        # TD502's plan over TD301's engine, TD415's data types over TD412's "in ensemble".
        ("Invalid argument: unable to find backend library '../lib/libtriton_python.so' for "
         "model 'm', searched: '/models/m/1' '/models/m'", "TD113"),
        ("unable to create TensorRT engine: The engine plan file is generated on an "
         "incompatible device, expecting compute 8.9 got compute 8.0, please rebuild.", "TD502"),
        ("Invalid argument: in ensemble e, ensemble tensor IN: inconsistent data type: "
         "TYPE_FP32 is inferred from model e while TYPE_INT32 is inferred from model s", "TD415"),
        ("Internal: failed to read text proto from /models/m/config.pbtxt", None),
    ],
)
def test_server_reasons_are_explained(reason: str, rule_id: str | None) -> None:
    assert explain_reason(reason) == rule_id


@pytest.mark.parametrize(
    ("line", "rule_id"),
    [
        ("E0101 12:00:00.000000 1 model_lifecycle.cc:654] failed to load 'm' version 1: "
         "Internal: RuntimeError: boom in initialize", "TD601"),
        ("E0101 12:00:00.000000 1 model_lifecycle.cc:654] failed to load 'm' version 1: "
         "Invalid argument: unable to find backend library for backend 'onnx'", "TD504"),
        ("E0101 12:00:00.000000 1 python_be.cc:1] Failed to process the request(s) for model "
         "'m', message: boom", "TD613"),
        ("E0101 12:00:00.000000 1 backend.cc:1] CUDA OUT OF MEMORY while allocating", "TD701"),
        ("I0101 12:00:00.000000 1 server.cc:1] Started HTTPService at 0.0.0.0:8000", None),
    ],
)
def test_log_lines_are_explained(line: str, rule_id: str | None) -> None:
    assert explain_log_line(line) == rule_id


@pytest.mark.parametrize("candidate", RULES, ids=lambda r: r.id)
def test_each_rules_words_explain_it(candidate: Rule) -> None:
    """Self-consistency: each declared fragment, as a reason or a log line, names its own rule;
    two rules declaring the same words fail here unless SHARED says the server shares them."""
    for fragment in candidate.server_says:
        owners = SHARED.get(fragment)
        if owners is not None:
            assert candidate.id in owners, f"{candidate.id} shares {fragment!r}"
            assert explain_reason(fragment) is None
        else:
            assert explain_reason(fragment) == candidate.id, fragment
    for fragment in candidate.log_says:
        assert explain_log_line(fragment) == candidate.id, fragment


def test_shared_words_are_declared_by_exactly_those_rules() -> None:
    declared = {fragment: {r.id for r in RULES if fragment in r.server_says} for fragment in SHARED}
    assert declared == SHARED


@pytest.mark.parametrize("candidate", RULES, ids=lambda r: r.id)
def test_declared_words_are_distinctive(candidate: Rule) -> None:
    """A short fragment ("invalid", "must") would explain messages about something else."""
    short = [f for f in (*candidate.server_says, *candidate.log_says)
             if len(f.strip()) < 10]
    assert not short


def test_a_relaying_rule_is_not_its_own_explanation() -> None:
    """TD601 passes on the server's load error; its log words never explain a load error."""
    relaying = [r for r in RULES if r.relays_server]
    assert [r.id for r in relaying] == ["TD601"]
    for candidate in relaying:
        assert not candidate.server_says
        assert all(explain_reason(f) is None for f in candidate.log_says)
