"""A server's load error is explained by the static rule that finds it offline."""

from __future__ import annotations

import pytest
from triton_doctor.catalogue import find_rule
from triton_doctor.rules.serving import REASON_RULES, explain_reason


def test_every_explaining_rule_exists() -> None:
    assert all(find_rule(rule_id) is not None for _, rule_id in REASON_RULES)


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
    ],
)
def test_server_reasons_are_explained(reason: str, rule_id: str | None) -> None:
    assert explain_reason(reason) == rule_id
