"""ONNX Runtime's and OpenVINO's auto-complete, replayed from the tensors a model file declares."""

from __future__ import annotations

from typing import Any

from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.triton import model_config
from triton_doctor.triton.autocomplete import Completion, complete_backend


def _complete(config_text: str, inputs: list[TensorInfo], outputs: list[TensorInfo],
              backend: str = "onnxruntime") -> Completion:
    config = model_config.parse(f'name: "m" backend: "{backend}"\n' + config_text)
    return complete_backend(config, ModelFile("1/model", inputs=inputs, outputs=outputs), None)


def _io(config: Any) -> list[tuple[str, str, list[int]]]:
    return [(t.name, model_config.data_type_name(t.data_type), list(t.dims))
            for t in [*config.input, *config.output]]


def test_batching_model_gets_the_default_batch_size_and_a_batcher() -> None:
    result = _complete("", [TensorInfo("x", "TYPE_FP32", [-1, 3])],
                       [TensorInfo("y", "TYPE_FP32", [-1, 2])])
    assert result.error is None and result.config.max_batch_size == 4
    assert result.config.HasField("dynamic_batching")
    assert _io(result.config) == [("x", "TYPE_FP32", [3]), ("y", "TYPE_FP32", [2])]


def test_one_fixed_first_dimension_disables_batching() -> None:
    result = _complete("", [TensorInfo("x", "TYPE_FP32", [-1, 3])],
                       [TensorInfo("y", "TYPE_FP32", [1, 2])])
    assert result.config.max_batch_size == 0
    assert _io(result.config) == [("x", "TYPE_FP32", [-1, 3]), ("y", "TYPE_FP32", [1, 2])]


def test_max_batch_size_on_a_model_that_cannot_batch_is_refused() -> None:
    result = _complete("max_batch_size: 8", [TensorInfo("x", "TYPE_FP32", [1, 3])],
                       [TensorInfo("y", "TYPE_FP32", [1, 2])])
    assert result.error == ("autofill failed for model 'm': model does not support batching "
                            "while non-zero max_batch_size is specified")


def test_a_scalar_becomes_dims_one_reshaped_away() -> None:
    result = _complete("", [TensorInfo("x", "TYPE_INT64", [-1])],
                       [TensorInfo("y", "TYPE_FP32", [-1])])
    tensor = result.config.input[0]
    assert list(tensor.dims) == [1] and tensor.HasField("reshape") and not tensor.reshape.shape


def test_declared_inputs_are_kept_as_written_and_outputs_filled() -> None:
    result = _complete('input [{ name: "x" data_type: TYPE_FP32 dims: [7] }]',
                       [TensorInfo("x", "TYPE_FP32", [3]), TensorInfo("z", "TYPE_FP32", [3])],
                       [TensorInfo("y", "TYPE_FP32", [2])])
    assert _io(result.config) == [("x", "TYPE_FP32", [7]), ("y", "TYPE_FP32", [2])]


def test_bfloat16_is_filled_in_as_invalid_like_the_backend() -> None:
    result = _complete("", [TensorInfo("x", "TYPE_BF16", [4])],
                       [TensorInfo("y", "TYPE_FP32", [4])])
    assert result.config.input[0].data_type == 0


def test_complete_configs_are_left_alone() -> None:
    text = ('input [{ name: "x" data_type: TYPE_FP32 dims: [3] }] '
            'output [{ name: "y" data_type: TYPE_FP32 dims: [2] }]')
    result = _complete(text, [TensorInfo("x", "TYPE_FP32", [1, 3])],
                       [TensorInfo("y", "TYPE_FP32", [1, 2])])
    assert result.config.max_batch_size == 0 and not result.filled


def test_openvino_batches_only_along_an_n_axis() -> None:
    tensors = ([TensorInfo("x", "TYPE_INT32", [1, 4], layout="[N,H]")],
               [TensorInfo("y", "TYPE_INT32", [1, 4], layout="[N,H]")])
    batched = _complete("", *tensors, backend="openvino")
    assert batched.config.max_batch_size == 4
    assert _io(batched.config) == [("x", "TYPE_INT32", [4]), ("y", "TYPE_INT32", [4])]
    plain = _complete("", [TensorInfo("x", "TYPE_INT32", [1, 4])],
                      [TensorInfo("y", "TYPE_INT32", [1, 4])], backend="openvino")
    assert plain.config.max_batch_size == 0
    assert _io(plain.config) == [("x", "TYPE_INT32", [1, 4]), ("y", "TYPE_INT32", [1, 4])]


def test_openvino_writes_every_dimension_dynamic_once_one_is() -> None:
    result = _complete("", [TensorInfo("x", "TYPE_FP32", [1, -1, 8])],
                       [TensorInfo("y", "TYPE_FP32", [1, 8])], backend="openvino")
    assert list(result.config.input[0].dims) == [-1, -1, -1]
