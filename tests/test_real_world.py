"""Patterns from public, working deployments that the server accepts: no error for them.

Each was a false positive once (found by running triton-doctor over real-world configs and
loading them in tritonserver 2.51); the configs here are minimal re-creations.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import PYTHON_MODEL, check_json, write_model

PY = {"1/model.py": PYTHON_MODEL}


def _findings(tmp_path: Path, config: str, files: dict[str, str] | None = None) -> dict[str, str]:
    write_model(tmp_path, "m", config, files if files is not None else PY)
    return {f["rule"]: f["severity"] for f in check_json(tmp_path)["findings"]}


def test_placeholders_left_in_string_parameters_are_info(tmp_path: Path) -> None:
    """TensorRT-LLM's fill_template.py leaves keys it was not given; the backend defaults them."""
    config = (
        'backend: "python"\nmax_batch_size: 8\ndynamic_batching { }\n'
        'parameters { key: "add_special_tokens"\n'
        '             value: { string_value: "${add_special_tokens}" } }\n'
    )
    assert _findings(tmp_path, config) == {"TD202": "info"}


def test_input_and_output_may_share_a_name(tmp_path: Path) -> None:
    config = (
        'backend: "python"\nmax_batch_size: 0\n'
        'input [ { name: "REQUEST_OUTPUT_LEN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'output [ { name: "REQUEST_OUTPUT_LEN" data_type: TYPE_INT32 dims: [ -1 ] } ]\n'
    )
    assert "TD216" not in _findings(tmp_path, config)


def test_python_model_taking_several_images_per_request(tmp_path: Path) -> None:
    config = (
        'backend: "python"\nmax_batch_size: 64\ndynamic_batching { }\n'
        'input [ { name: "IMAGES" data_type: TYPE_UINT8 dims: [ -1, 3, -1, -1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
    )
    assert "TD217" not in _findings(tmp_path, config)


def test_dali_fills_partial_tensors_from_its_pipeline(tmp_path: Path) -> None:
    config = (
        'backend: "dali"\nmax_batch_size: 32\ndynamic_batching { }\n'
        'input [ { name: "DALI_INPUT_0" data_type: TYPE_FP16 allow_ragged_batch: true } ]\n'
        'output [ { name: "DALI_OUTPUT_0" } ]\n'
    )
    findings = _findings(tmp_path, config, {"1/model.dali": "serialized pipeline stand-in\n"})
    assert findings.get("TD211") == "warning"
    assert "error" not in findings.values()


def test_decoupled_orchestrator_without_batcher(tmp_path: Path) -> None:
    config = (
        'backend: "python"\nmax_batch_size: 64\n'
        "model_transaction_policy { decoupled: true }\n"
        'input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
        'output [ { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] } ]\n'
    )
    assert _findings(tmp_path, config) == {}
