"""TD303-TD308: the configuration against the model file's own inputs and outputs.

ONNX Runtime, OpenVINO and PyTorch compare the config with the model when an instance loads;
these rules make the same comparisons offline, on the configuration after auto-complete.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.text_encoding import CEscape
from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import MAX_LISTED_NAMES, dims_text
from triton_doctor.rules._model_io import (
    Problem,
    onnx_problems,
    openvino_problems,
    torchscript_problems,
)
from triton_doctor.rules.model_files import model_files
from triton_doctor.triton.autocomplete.tensors import has_batch_axis
from triton_doctor.triton.repository_model import ModelView, RepositoryView, per_model

_CHECKERS = {
    "onnxruntime": onnx_problems,
    "openvino": openvino_problems,
    "pytorch": torchscript_problems,
}
#: The models TD303-TD307 can find anything in: those of a backend that compares.
_IO_BACKENDS = tuple(f"backend:{backend}" for backend in _CHECKERS)


def suggested_block(kind: str, tensors: list[TensorInfo], max_batch_size: int) -> str:
    """The config block that matches the model's tensors, batch dimension taken off; the first
    MAX_LISTED_NAMES of them, and a comment counting the rest."""
    lines = []
    for tensor in tensors[:MAX_LISTED_NAMES]:
        if tensor.dims is None or not tensor.data_type or tensor.data_type == "TYPE_INVALID":
            lines.append(f'  {{ name: "{CEscape(tensor.name, as_utf8=True)}" }}')
            continue
        dims = tensor.dims[1:] if max_batch_size > 0 else tensor.dims
        shown = ", ".join(str(d) for d in dims) if dims else "1"
        lines.append(
            f'  {{ name: "{CEscape(tensor.name, as_utf8=True)}" data_type: {tensor.data_type} '
            f'dims: [ {shown} ] }}'
        )
    more = len(tensors) - len(lines)
    rest = f"\n  # ... and {more:,} more {kind}s" if more > 0 else ""
    return f"{kind} [\n" + ",\n".join(lines) + rest + "\n]"


@per_model
def _problems(model: ModelView) -> list[tuple[int, ModelFile, Problem]]:
    """Every disagreement of the config with its model files, which TD303-TD307 share out by
    kind."""
    completion = model.backend_completion
    if completion is not None and completion.error is not None:
        return []  # the backend refuses during auto-complete, before it compares anything
    checker = _CHECKERS.get(model.effective.backend)
    if checker is None:
        return []
    found_problems = []
    for number, found in model_files(model):
        readable = found.problem is None and found.inputs is not None and found.outputs is not None
        if readable or (found.torchscript is not None and checker is torchscript_problems):
            found_problems += [(number, found, problem)
                               for problem in checker(model.effective, found)]
    return found_problems


def _hits(model: ModelView, kinds: tuple[str, ...]) -> Iterator[Hit]:
    fixes: dict[tuple[str, str], str] = {}  # one per file and kind, however many problems
    for number, found, problem in _problems(model):
        if problem.kind not in kinds:
            continue
        key = (found.path, _kind(problem))
        if key not in fixes:
            fixes[key] = _fix(model, found, problem)
        yield Hit(
            message=f"{found.path}: {problem.message}",
            triton_message=problem.triton_message,
            fix=fixes[key],
            field=problem.field,
            version=str(number),
        )


def _kind(problem: Problem) -> str:
    return "output" if problem.field and problem.field.startswith("output") else "input"


def _fix(model: ModelView, found: ModelFile, problem: Problem) -> str:
    config = model.effective
    if found.inputs is None or found.outputs is None:
        names = ", ".join(a.name for a in (found.torchscript.forward_args or [])) if (
            found.torchscript) else ""
        return f"Declare one input per forward() argument ({names})." if names else (
            "Make the config match the model.")
    kind = _kind(problem)
    tensors = found.outputs if kind == "output" else found.inputs
    block = suggested_block(kind, tensors, config.max_batch_size)
    return f"Declare the model's {kind}s as it has them:\n{block}"


@rule("TD303", "io-count-mismatch", "error", "Config and model have different numbers of inputs",
      server_says=("inputs, model provides",), when=_IO_BACKENDS)
def io_count_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the number of inputs the config declares (ONNX: non-optional inputs,
    batch inputs, sequence controls and states; PyTorch: inputs and batch inputs) equals the
    number the model takes (ONNX graph inputs without initializers, OpenVINO Parameters,
    TorchScript forward() arguments).

    Why it matters: the backend refuses the model at load ("configuration expects 1 inputs,
    model provides 2").

    Example: a config listing only `input_ids` for a model that also takes `attention_mask`
    → declare both.

    Fix: declare exactly the model's inputs (the fix shows them with their types and dims).
    """
    yield from _hits(model, ("count",))


@rule("TD304", "io-name-unknown", "error", "Config names a tensor the model does not have",
      server_says=("unexpected inference input", "unexpected inference output"), when=_IO_BACKENDS)
def io_name_unknown(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: every input and output name in the config is a tensor of the model file
    (ONNX graph inputs and overridable initializers, ONNX outputs, OpenVINO tensor names).

    Why it matters: the backend refuses the model ("unexpected inference input 'input__0',
    allowed inputs are: images").

    Example: `name: "input__0"` (a PyTorch-style name) for an ONNX model whose input is
    `images` → `name: "images"`.

    Fix: use the model's tensor names; the fix lists them with types and dims.
    """
    yield from _hits(model, ("name",))


@rule("TD305", "io-dtype-mismatch", "error", "Config data_type differs from the model's",
      server_says=("configuration expects datatype",), when=_IO_BACKENDS)
def io_dtype_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each tensor's `data_type` equals the element type the ONNX model
    declares for it.

    Why it matters: ONNX Runtime refuses the model ("configuration expects datatype
    TYPE_FP32 for input 'x', model provides TYPE_FP16").

    Example: `data_type: TYPE_FP32` for a model exported in half precision →
    `data_type: TYPE_FP16`.

    Fix: use the model's type, or export the model with the type the clients send.
    """
    yield from _hits(model, ("dtype",))


@rule("TD306", "io-shape-mismatch", "error", "Config dims do not fit the model's shape",
      server_says=("the model expects",
                   "for the model to support batching the shape should have at least 1 "
                   "dimension and the first dimension must be -1",
                   "should only provide 1 in the model configuration when the model "
                   "doesn't support batching"), when=_IO_BACKENDS)
def io_shape_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each tensor's `dims` (or `reshape`), with the batch dimension in front
    when max_batch_size > 0, fits the model's shape: same rank, and equal wherever the model
    has a fixed size. Outputs must match exactly, -1 for -1 (ONNX Runtime and OpenVINO). A
    batching model needs a dynamic first dimension on every tensor.

    Why it matters: the backend refuses the model ("the model expects 2 dimensions (shape
    [-1,16]) but the model configuration specifies 3 dimensions ...").

    Example: `max_batch_size: 8` with `dims: [ 8, 3, 224, 224 ]` for a model of shape
    `[-1,3,224,224]` → `dims: [ 3, 224, 224 ]`.

    Fix: write dims without the batch dimension when max_batch_size > 0, use -1 where the
    model's output is dynamic, and set max_batch_size: 0 for a model without a batch axis.
    """
    yield from _hits(model, ("dims",))


@rule("TD307", "io-type-unsupported", "error", "Tensor type the backend cannot serve",
      server_says=("Unsupported ONNX Type '", "unsupported datatype ",
                   "Only a single input of type Dict(str, Tensor) or input(s) of type "
                   "Tensor are supported"), when=_IO_BACKENDS)
def io_type_unsupported(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the backend can hold each tensor: ONNX inputs and outputs are tensors
    (not sequences or maps, as sklearn converters emit), config types are ones the backend
    supports (PyTorch: no UINT16/32/64 or BF16; OpenVINO: no FP64 or STRING), and TorchScript
    forward() takes Tensors, Lists of them, or one Dict[str, Tensor].

    Why it matters: the backend refuses the model ("Unsupported ONNX Type
    'ONNX_TYPE_SEQUENCE' for I/O 'output_probability'").

    Example: an sklearn classifier exported with ZipMap → export with
    `options={"zipmap": False}` so the probabilities are a tensor.

    Fix: change the export so every model input and output is a plain tensor of a supported
    type.
    """
    yield from _hits(model, ("type",))


@rule("TD308", "autofill-batching-refused", "error", "max_batch_size for a model that cannot batch",
      server_says=("autofill failed",), when=("auto_complete_refused",))
def autofill_batching_refused(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: with auto-complete on and the inputs or outputs left to it, a
    `max_batch_size > 0` needs every ONNX input and output to have a dynamic first dimension.

    Why it matters: ONNX Runtime's auto-complete refuses the model ("autofill failed for
    model 'm': model does not support batching while non-zero max_batch_size is specified").

    Example: `max_batch_size: 8` for a model of shape `[1,3,224,224]` → `max_batch_size: 0`,
    or re-export with a dynamic batch axis.

    Fix: set `max_batch_size: 0`, or export the model with a dynamic first dimension on every
    input and output (`dynamic_axes={"x": {0: "batch"}}` in torch.onnx.export).
    """
    completion = model.backend_completion
    if completion is None or completion.error is None or model.effective.backend == "python":
        return
    found = model.model_file()
    fixed = [
        f"{t.name} {dims_text(t.dims) if t.dims is not None else '(shape unknown)'}"
        for t in ([*found.inputs, *found.outputs] if found and found.inputs and found.outputs
                  else [])
        if not has_batch_axis(t.dims)
    ]
    yield Hit(
        message="max_batch_size is "
        f"{model.core.max_batch_size} but the model has no batch axis on "
        f"{', '.join(fixed[:4]) or 'some tensors'}",
        triton_message=completion.error,
        fix="Set max_batch_size: 0, or re-export the model with a dynamic first dimension on "
        "every input and output.",
        field=completion.field,
    )
