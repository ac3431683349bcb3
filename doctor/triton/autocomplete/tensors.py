"""Filling max_batch_size and tensors from a model file, as the ONNX and OpenVINO backends do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from triton_doctor.evidence import TensorInfo
from triton_doctor.triton import model_config

if TYPE_CHECKING:
    from triton_doctor.triton.autocomplete import Completion

#: The server's --backend-config default-max-batch-size.
DEFAULT_MAX_BATCH_SIZE = 4


def has_batch_axis(dims: list[int] | None) -> bool:
    """Whether a model tensor's shape can carry Triton's batch dimension: a dynamic first
    dimension. A scalar, a fixed first dimension or an unknown shape (None) cannot."""
    return dims is not None and len(dims) >= 1 and dims[0] == -1


def supports_batching(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> bool:
    """Every tensor's first dimension is dynamic (a single fixed one disables batching)."""
    return all(has_batch_axis(t.dims) for t in [*inputs, *outputs])


def fill_batching(result: Completion, default: int) -> None:
    """An unset max_batch_size becomes ``default``; batching models get a dynamic batcher."""
    config = result.config
    if config.max_batch_size == 0:
        config.max_batch_size = default
        result.filled.append(f"max_batch_size: {default} (the server's default-max-batch-size)")
    if config.max_batch_size > 1 and not (
        config.HasField("dynamic_batching") or config.HasField("sequence_batching")
    ):
        config.dynamic_batching.SetInParent()
        result.filled.append("dynamic_batching { }")


def add(declared: Any, tensor: TensorInfo, max_batch_size: int, filled: list[str], kind: str,
        scalar_reshape: bool = True) -> None:
    """Append ``tensor`` to ``declared`` without its batch dimension, as the backend does."""
    value = model_config.data_type_value(tensor.data_type or "")
    entry = declared.add()
    entry.name = tensor.name
    entry.data_type = value or 0
    model_dims = tensor.dims or []
    dims = model_dims[1:] if max_batch_size > 0 else model_dims
    if dims:
        entry.dims.extend(dims)
    elif scalar_reshape:
        # A scalar: Triton needs at least one dimension, and reshapes it away again.
        entry.dims.append(1)
        if max_batch_size > 0:
            entry.reshape.SetInParent()
    filled.append(f"{kind} {tensor.name}: {tensor.data_type} {list(entry.dims)}")
