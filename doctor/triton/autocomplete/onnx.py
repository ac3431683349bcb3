"""The ONNX Runtime backend's auto-complete, from the tensors read out of model.onnx.

It runs unless config.pbtxt already lists inputs (or batch inputs) and outputs. Batching is
possible only when every model input and output has a leading dynamic dimension; then an
unset max_batch_size becomes the server's default-max-batch-size (4) with an empty
``dynamic_batching {}``, and the filled-in tensors lose that leading dimension. A list the
config already has is kept as written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.records import replace
from triton_doctor.triton.autocomplete import tensors

if TYPE_CHECKING:
    from triton_doctor.triton.autocomplete import Completion


def complete(result: Completion, model_file: ModelFile) -> None:
    config = result.config
    has_inputs = bool(config.input or config.batch_input)
    if has_inputs and config.output:
        return
    if model_file.inputs is None or model_file.outputs is None:
        return
    if not all(t.is_tensor for t in [*model_file.inputs, *model_file.outputs]):
        return  # the backend refuses non-tensor I/O, and a rule says so
    if tensors.supports_batching(model_file.inputs, model_file.outputs):
        tensors.fill_batching(result, tensors.DEFAULT_MAX_BATCH_SIZE)
    elif config.max_batch_size != 0:
        result.error = (
            f"autofill failed for model '{config.name}': model does not support batching "
            "while non-zero max_batch_size is specified"
        )
        result.field = "max_batch_size"
        return
    if not has_inputs:
        for tensor in model_file.inputs:
            tensors.add(config.input, _as_backend_sees(tensor), config.max_batch_size,
                        result.filled, "input")
    if not config.output:
        for tensor in model_file.outputs:
            tensors.add(config.output, _as_backend_sees(tensor), config.max_batch_size,
                        result.filled, "output")


def _as_backend_sees(tensor: TensorInfo) -> TensorInfo:
    """The backend's type table has no bfloat16: it fills such a tensor in as TYPE_INVALID."""
    if tensor.data_type == "TYPE_BF16":
        return replace(tensor, data_type="TYPE_INVALID")
    return tensor
