"""The OpenVINO backend's auto-complete, from the Parameter and Result layers of model.xml.

Unlike ONNX Runtime it always runs: batching comes from the layout annotations (every tensor
needs an ``N`` axis), a model that cannot batch keeps its max_batch_size with only a warning,
and each list of tensors is filled only when config.pbtxt leaves it empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.triton.autocomplete import tensors

if TYPE_CHECKING:
    from triton_doctor.triton.autocomplete import Completion


def complete(result: Completion, model_file: ModelFile) -> None:
    config = result.config
    if model_file.inputs is None or model_file.outputs is None:
        return
    every = [*model_file.inputs, *model_file.outputs]
    if all(_has_batch_axis(tensor) for tensor in every):
        tensors.fill_batching(result, max(tensors.DEFAULT_MAX_BATCH_SIZE, 1))
    for kind, found in (("input", model_file.inputs), ("output", model_file.outputs)):
        declared = config.input if kind == "input" else config.output
        if declared:
            continue
        for tensor in found:
            dims = tensor.dims or []
            if any(dim == -1 for dim in dims):
                # The backend writes every dimension as -1 once one of them is dynamic.
                dims = [-1] * len(dims)
            shaped = TensorInfo(tensor.name, tensor.data_type, dims)
            tensors.add(declared, shaped, config.max_batch_size, result.filled, kind,
                        scalar_reshape=False)


def _has_batch_axis(tensor: TensorInfo) -> bool:
    axes = tensor.layout.strip("[]").split(",") if tensor.layout else []
    return "N" in (axis.strip() for axis in axes)
