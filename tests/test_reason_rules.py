"""A server's words are explained by the rule that declares them (``server_says``, ``log_says``)."""

from __future__ import annotations

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.registry import Rule
from triton_doctor.server_words import explain_log_line, explain_reason

RULES = all_rules()



def _owners(fragment: str) -> set[str]:
    """The rules that declare ``fragment`` among the server's words."""
    return {r.id for r in RULES if fragment in r.server_says}


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
         "KIND_GPU but no GPUs are available", "TD236"),
        ("Internal: model 'm', tensor 'IN': the model expects dims [4] but the model "
         "configuration specifies dims [16]", "TD309"),
        ("Invalid argument: model 'm', tensor 'x': the model expects 2 dimensions (shape "
         "[-1,16]) but the model configuration specifies 3 dimensions", "TD306"),
        ("Internal: RuntimeError: boom in initialize", None),
        # The longest declared words win: TD505's library name over TD504's backend name,
        # TD502's plan over TD301's engine, TD415's data types over TD412's "in ensemble".
        ("Invalid argument: unable to find backend library '../lib/libtriton_python.so' for "
         "model 'm', searched: '/models/m/1' '/models/m'", "TD505"),
        ("unable to create TensorRT engine: The engine plan file is generated on an "
         "incompatible device, expecting compute 8.9 got compute 8.0, please rebuild.", "TD502"),
        ("Invalid argument: in ensemble e, ensemble tensor IN: inconsistent data type: "
         "TYPE_FP32 is inferred from model e while TYPE_INT32 is inferred from model s", "TD415"),
        ("Invalid argument: in ensemble e, ensemble tensor MID: inconsistent shape: [-1,4] is "
         "inferred from model a while [-1,7,1] is inferred from model b", "TD416"),
        ("Invalid argument: in ensemble e, step of model 'e' receives inputs originated from "
         "different decoupled models", "TD417"),
        ("Internal: failed to read text proto from /models/m/config.pbtxt", None),
        # Words the server says for several causes (a config, a label file, a warmup file)
        # do not hide the shorter words of one cause.
        ("Internal: failed to open text file for read /models/m/config.pbtxt: Permission "
         "denied", "TD204"),
    ],
)
def test_server_reasons_are_explained(reason: str, rule_id: str | None) -> None:
    assert explain_reason(reason) == rule_id


@pytest.mark.parametrize(
    ("line", "rule_id"),
    [
        ("E0101 12:00:00.000000 1 model_lifecycle.cc:654] failed to load 'm' version 1: "
         "Internal: RuntimeError: boom in initialize", "TD801"),
        ("E0101 12:00:00.000000 1 model_lifecycle.cc:654] failed to load 'm' version 1: "
         "Invalid argument: unable to find backend library for backend 'onnx'", "TD504"),
        ("E0101 12:00:00.000000 1 python_be.cc:1] Failed to process the request(s) for model "
         "'m', message: boom", "TD814"),
        ("E0101 12:00:00.000000 1 backend.cc:1] CUDA out of memory while allocating", "TD803"),
        # Words are matched as written: the server's messages are constant text.
        ("E0101 12:00:00.000000 1 backend.cc:1] CUDA OUT OF MEMORY while allocating", None),
        ("I0101 12:00:00.000000 1 server.cc:1] Started HTTPService at 0.0.0.0:8000", None),
    ],
)
def test_log_lines_are_explained(line: str, rule_id: str | None) -> None:
    assert explain_log_line(line) == rule_id


@pytest.mark.parametrize("candidate", RULES, ids=lambda r: r.id)
def test_each_rules_words_explain_it(candidate: Rule) -> None:
    """Self-consistency: each declared fragment, as a reason or a log line, names its own rule,
    unless another rule declares the same words (then, alone, they name none)."""
    for fragment in candidate.server_says:
        shared = _owners(fragment) != {candidate.id}
        assert explain_reason(fragment) == (None if shared else candidate.id), fragment
    for fragment in candidate.log_says:
        assert explain_log_line(fragment) == candidate.id, fragment


@pytest.mark.parametrize("candidate", RULES, ids=lambda r: r.id)
def test_declared_words_are_distinctive(candidate: Rule) -> None:
    """A short fragment ("invalid", "must") would explain messages about something else."""
    short = [f for f in (*candidate.server_says, *candidate.log_says)
             if len(f.strip()) < 10]
    assert not short


def test_a_relaying_rule_is_not_its_own_explanation() -> None:
    """A rule that passes on the server's load error (TD601) declares none of its words, and its
    log words never explain a load error."""
    relaying = [r for r in RULES if r.relays_server]
    assert relaying
    for candidate in relaying:
        assert not candidate.server_says
        assert all(explain_reason(f) is None for f in candidate.log_says)
