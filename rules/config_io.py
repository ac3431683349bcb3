"""TD21x: input and output declarations, as core's ValidateModelInput/Output judge them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import dims_product, dims_text, enum_name
from triton_doctor.triton.repository_model import ModelView, RepositoryView, per_model

WILDCARD = -1
#: The input formats that describe an image, and so need 3 dims.
IMAGE_FORMATS = ("FORMAT_NHWC", "FORMAT_NCHW")


#: Backends that hold the config's shapes against the model file; Python and custom backends
#: take what they are given (a leading -1 there may mean "several images per request").
SHAPE_CHECKING_BACKENDS = {"onnxruntime", "tensorrt", "pytorch", "openvino", "tensorflow"}
#: Backends known not to fill a declared tensor's missing data_type or dims: the Python
#: backend without auto_complete_config (seen on the real server), ONNX Runtime (it skips
#: auto-complete once inputs and outputs are declared), PyTorch (no auto-complete).
NON_COMPLETING_BACKENDS = {"python", "onnxruntime", "pytorch", "tensorflow", "openvino"}


def _completes_io(model: ModelView) -> bool:
    """Whether the backend's auto-complete may fill a declared tensor's missing type and dims:
    TensorRT does from the engine, DALI from its pipeline, Python only through model.py's
    auto_complete_config (when its code cannot be followed exactly); other custom backends are
    given the benefit of the doubt."""
    backend = model.effective.backend
    if backend == "python":
        # An auto_complete_config followed exactly is already applied to the effective config.
        return model.auto_complete_exact is False
    return backend not in NON_COMPLETING_BACKENDS


@per_model
def _tensors(model: ModelView) -> list[tuple[str, int, Any]]:
    """("input"|"output", index, tensor) for every tensor of the effective config."""
    config = model.effective
    return [*(("input", index, tensor) for index, tensor in enumerate(config.input)),
            *(("output", index, tensor) for index, tensor in enumerate(config.output))]


def _say(kind: str, tensor: Any, text: str, model: str) -> str:
    """Core's wording: ``model input 'x' <text> for <model>``."""
    return f"model {kind} '{tensor.name}' {text} for {model}"


def element_count(dims: list[int]) -> int | None:
    """Core's GetElementCount: -1 if any dim is variable, 0 for no dims, else the product;
    None when the product leaves int64 (core's own count overflows)."""
    if not dims:
        return 0
    return -1 if WILDCARD in dims else dims_product(dims)


def _segments(dims: list[int]) -> list[int | None]:
    """Element counts of the runs between variable-size dims: [2,4,-1,6] -> [8, 6]; None for a
    run whose count leaves int64."""
    counts: list[int | None] = []
    run: list[int] = []
    for dim in dims:
        if dim == WILDCARD:
            counts.append(dims_product(run))
            run = []
        else:
            run.append(dim)
    return [*counts, dims_product(run)]


@rule("TD211", "io-incomplete", "error", "Input or output lacks name, data_type or dims",
      server_says=("must specify 'dims'", "must specify 'data_type'", "must specify 'name' for"))
def io_incomplete(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: every `input` and `output` has a `name`, a `data_type` and non-empty `dims`.

    Why it matters: core rejects the configuration ("must specify 'dims'") and the model
    never loads.

    Example: `input [ { name: "x" data_type: TYPE_FP32 } ]` →
    `input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]`.

    With auto-complete on, TensorRT fills a declared tensor's missing data_type and dims
    from the engine, DALI from its pipeline, a Python model may in its auto_complete_config,
    and other custom backends may too; then this is a warning. ONNX Runtime, PyTorch and a
    Python model without auto_complete_config do not.

    Fix: declare all three; for a scalar in a batching model use `dims: [ 1 ]` with
    `reshape: { shape: [ ] }`.
    """
    config = model.effective
    # With auto-complete on, these backends may complete tensors from the model file (or
    # model.py's auto_complete_config) before the server validates them at load.
    may_complete = not model.options.disable_auto_complete_config and _completes_io(model)
    later = Severity.WARNING if may_complete else None
    for kind, index, tensor in _tensors(model):
        where = f"{kind}[{index}]"
        if not tensor.name:
            yield Hit(
                message=f"{kind} #{index + 1} has no name",
                triton_message=f"model {kind} must specify 'name' for {config.name}",
                fix=f"Give the {kind} the tensor name the model uses.",
                field=where,
            )
            continue
        if not tensor.data_type:  # TYPE_INVALID, the unset value
            yield Hit(
                message=f"{kind} '{tensor.name}' has no data_type",
                triton_message=_say(kind, tensor, "must specify 'data_type'", config.name),
                fix="Add data_type (e.g. data_type: TYPE_FP32) matching the model's tensor.",
                field=where,
                severity=later,
            )
            continue
        if not tensor.dims:
            yield Hit(
                message=f"{kind} '{tensor.name}' has no dims",
                triton_message=_say(kind, tensor, "must specify 'dims'", config.name),
                fix="Add dims without the batch dimension, e.g. dims: [ 3, 224, 224 ]; use "
                "-1 for a variable-size dimension.",
                field=where,
                severity=later,
            )


@rule("TD212", "invalid-dims", "error", "A dimension is 0 or below -1",
      server_says=("dimension must be integer >= 1",))
def invalid_dims(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: every value in `dims` is >= 1, or -1 for a variable-size dimension.

    Why it matters: core rejects 0 and values below -1; the model never loads.

    Example: `dims: [ 0, 224 ]` → `dims: [ -1, 224 ]`.

    Fix: use -1 where the size varies, the real size elsewhere.
    """
    config = model.effective
    for kind, index, tensor in _tensors(model):
        if not tensor.name or not tensor.data_type:
            continue
        bad = [d for d in tensor.dims if d < 1 and d != WILDCARD]
        if bad:
            yield Hit(
                message=f"{kind} '{tensor.name}' has dims {dims_text(tensor.dims)}: "
                f"{bad[0]} is not a valid size",
                triton_message=_say(
                    kind,
                    tensor,
                    "dimension must be integer >= 1, or -1 to indicate a variable-size dimension",
                    config.name,
                ),
                fix="Use -1 for a variable-size dimension, a positive size otherwise.",
                field=f"{kind}[{index}].dims",
            )


@rule("TD213", "invalid-reshape", "error", "reshape does not fit dims",
      server_says=("has different size for dims and reshape",
                   "has different number of variable-size dimensions for dims and reshape",
                   "cannot have empty reshape for non-batching model",
                   "reshape dimensions must be integer >= 1"))
def invalid_reshape(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `reshape.shape` as core validates it: no 0 or < -1 values; not empty on a
    non-batching model; the same element count as `dims`; with -1s, the same number of
    variable-size dimensions and equal element counts between them.

    Why it matters: the server refuses the configuration.

    Example: `dims: [ 2, 4 ] reshape: { shape: [ 6 ] }` → `reshape: { shape: [ 8 ] }`;
    `dims: [ 2, -1 ] reshape: { shape: [ -1, 2, -1 ] }` → `reshape: { shape: [ 2, -1 ] }`.

    Fix: make reshape a regrouping of the same elements; [2,4,-1,6] → [8,-1,1,6] is valid.
    """
    config = model.effective
    for kind, index, tensor in _tensors(model):
        if not tensor.name or not tensor.data_type or not tensor.dims:
            continue
        if not tensor.HasField("reshape"):
            continue
        dims, shape = list(tensor.dims), list(tensor.reshape.shape)
        where = f"{kind}[{index}].reshape"
        text = None
        if not shape and config.max_batch_size == 0:
            text = (
                "cannot have empty reshape for non-batching model as scalar tensors are "
                "not supported"
            )
        elif any(d < 1 and d != WILDCARD for d in dims):
            continue  # TD212 reports it; core stops there
        elif any(d < 1 and d != WILDCARD for d in shape):
            text = (
                "reshape dimensions must be integer >= 1, or -1 to indicate a "
                "variable-size dimension"
            )
        else:
            dims_size, reshape_size = element_count(dims), element_count(shape)
            if dims_size is None or reshape_size is None:
                continue  # core compares overflowed int64 counts: no telling what it decides
            if dims_size != reshape_size and (reshape_size != 0 or dims_size != 1):
                text = "has different size for dims and reshape"
            elif dims_size == WILDCARD:
                left, right = _segments(dims), _segments(shape)
                if len(left) != len(right):
                    text = "has different number of variable-size dimensions for dims and reshape"
                elif left != right and None not in left + right:
                    text = "has different size for dims and reshape"
        if text:
            yield Hit(
                message=f"{kind} '{tensor.name}': dims {dims_text(dims)} and reshape "
                f"{dims_text(shape)} do not fit: {text}",
                triton_message=_say(kind, tensor, text, config.name),
                fix="Make reshape.shape hold the same elements as dims, with the -1s at "
                "matching boundaries; remove reshape if the model takes dims as they are.",
                field=where,
            )


@rule("TD214", "io-format-rank", "error", "FORMAT_NHWC/NCHW input without 3 dims",
      server_says=("NHWC/NCHW require 3 dims",))
def io_format_rank(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: an input with `format: FORMAT_NHWC` or `FORMAT_NCHW` has exactly 3 dims.

    Why it matters: the server refuses the configuration.

    Example: `format: FORMAT_NCHW dims: [ 224, 224 ]` → `dims: [ 3, 224, 224 ]`.

    Fix: give the 3 image dims (without batch), or drop `format`.
    """
    config = model.effective
    for index, tensor in enumerate(config.input):
        image = enum_name(tensor, "format", tensor.format) in IMAGE_FORMATS
        if image and tensor.dims and len(tensor.dims) != 3:
            yield Hit(
                message=f"input '{tensor.name}' has an image format but dims "
                f"{dims_text(tensor.dims)}",
                triton_message=f"model input NHWC/NCHW require 3 dims for {config.name}",
                fix="Use 3 dims (C,H,W or H,W,C without the batch dim), or remove format.",
                field=f"input[{index}].format",
            )


@rule("TD215", "tensorrt-only-io", "error", "Shape tensor or non-linear IO outside TensorRT",
      server_says=("shape tensors are only supported for TensorRT platform",
                   "Non-linear IO format "))
def tensorrt_only_io(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `is_shape_tensor` and `is_non_linear_format_io` are used only on
    TensorRT models, and non-linear format tensors have 3 dims.

    Why it matters: the server refuses the configuration for other platforms.

    Example: `is_shape_tensor: true` on an ONNX model → remove it.

    Fix: remove the flag; only TensorRT engines have shape tensors and non-linear formats.
    """
    config = model.effective
    trt = config.platform == "tensorrt_plan"
    for kind, index, tensor in _tensors(model):
        if tensor.is_shape_tensor and not trt:
            yield Hit(
                message=f"{kind} '{tensor.name}' is marked is_shape_tensor on platform "
                f"'{config.platform or config.backend}'",
                triton_message=f"shape tensors are only supported for TensorRT platform for "
                f"{config.name}",
                fix="Remove is_shape_tensor.",
                field=f"{kind}[{index}].is_shape_tensor",
            )
        if tensor.is_non_linear_format_io:
            if not trt:
                text = "Non-linear IO format is only supported for the TensorRT platform"
            elif len(tensor.dims) != 3:
                text = f"Non-linear IO format {kind} requires 3 dims"
            else:
                continue
            yield Hit(
                message=f"{kind} '{tensor.name}': is_non_linear_format_io is not usable here",
                triton_message=f"{text} for {config.name}",
                fix="Remove is_non_linear_format_io, or give 3 dims on a TensorRT model.",
                field=f"{kind}[{index}].is_non_linear_format_io",
            )


@rule("TD216", "duplicate-io-name", "warning", "Two inputs or outputs share a name")
def duplicate_io_name(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: input names are unique among the inputs, and output names among the
    outputs (an input and an output may share a name: the server keeps them apart).

    Why it matters: the server does not reject duplicates; it keeps only the first of them,
    so the config silently describes a different model than it says.

    Example: two inputs named `INPUT0` → `INPUT0` and `INPUT1`.

    Fix: give every tensor the distinct name the model uses.
    """
    seen: set[tuple[str, str]] = set()
    for kind, index, tensor in _tensors(model):
        if not tensor.name:
            continue
        if (kind, tensor.name) in seen:
            yield Hit(
                message=f"{kind} '{tensor.name}' is declared twice; the server keeps only the "
                "first declaration",
                fix="Remove the repeated declaration, or rename it to the tensor the model has.",
                field=f"{kind}[{index}].name",
            )
        seen.add((kind, tensor.name))


@rule("TD217", "batch-dim-in-dims", "warning", "Batch dimension written inside dims",
      when=("batching",))
def batch_dim_in_dims(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: with `max_batch_size > 0`, image-like `dims` of 4 or more entries that
    start with -1, such as `[ -1, 3, 224, 224 ]`: the batch dimension written twice (the
    server prepends it already), on backends that hold shapes against the model file (ONNX,
    TensorRT, PyTorch, OpenVINO, TensorFlow). Shorter dims starting with -1 (`[ -1, 768 ]`,
    a sequence length) are common and correct, and Python or custom backends take any shape,
    so those are left alone.

    Why it matters: the full shape becomes [-1, -1, ...]; the backend then refuses the model
    ("the model expects 4 dimensions ... but the model configuration specifies 5
    dimensions") or clients must send an extra dimension.

    Example: `max_batch_size: 8` with `dims: [ -1, 3, 224, 224 ]` → `dims: [ 3, 224, 224 ]`.

    Fix: drop the leading -1 from dims, or set `max_batch_size: 0` if dims are meant to be the
    full shape.
    """
    config = model.effective
    if config.max_batch_size <= 0 or config.backend not in SHAPE_CHECKING_BACKENDS:
        return
    for kind, index, tensor in _tensors(model):
        if len(tensor.dims) >= 4 and tensor.dims[0] == WILDCARD:
            yield Hit(
                message=f"{kind} '{tensor.name}' dims {dims_text(tensor.dims)} start with -1 "
                f"while max_batch_size is {config.max_batch_size}: the full shape is "
                f"{dims_text([-1, *tensor.dims])}",
                fix=f"dims: {dims_text(tensor.dims[1:]).replace(',', ', ')} (the server "
                "adds the batch dimension), or max_batch_size: 0.",
                field=f"{kind}[{index}].dims",
            )
