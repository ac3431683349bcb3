"""The checks backends make of a configuration against the model file, at load.

ONNX Runtime, OpenVINO and PyTorch each compare the config's tensors with what the model
declares, in their own order and words (see docs/backend-validation.md). These functions list
every disagreement, not only the first the server would stop at, each with the backend's text.
"""

from __future__ import annotations

from typing import Any

from triton_doctor.evidence import ModelFile, TensorInfo, TorchScriptArg
from triton_doctor.records import record
from triton_doctor.rules._common import dims_text, names_text, type_name
from triton_doctor.triton.autocomplete.tensors import has_batch_axis

#: Config types each backend can hold (anything else: "unsupported datatype").
ONNX_TYPES = frozenset({
    "TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_INT8",
    "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64",
    "TYPE_STRING",
})
OPENVINO_TYPES = ONNX_TYPES - {"TYPE_FP64", "TYPE_STRING"}
TORCH_TYPES = frozenset({
    "TYPE_BOOL", "TYPE_UINT8", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64",
    "TYPE_FP16", "TYPE_FP32", "TYPE_FP64",
})


@record
class Problem:
    #: "count", "name", "dtype", "dims", "type" (a tensor the backend cannot hold).
    kind: str
    message: str
    triton_message: str
    #: Config field path, e.g. "input[1]".
    field: str | None = None


def _server_type(tensor: TensorInfo) -> str:
    """How the server names the model's type in "model provides TYPE_X" (STRING is BYTES)."""
    name = tensor.data_type or "TYPE_INVALID"
    return "TYPE_BYTES" if name == "TYPE_STRING" else name


def _config_dims(tensor: Any) -> list[int]:
    return list(tensor.reshape.shape) if tensor.HasField("reshape") else list(tensor.dims)


def compare_dims(model: str, name: str, model_dims: list[int], config_dims: list[int],
                 max_batch_size: int, exact: bool, batch_dim_required: bool = True) -> str | None:
    """The backend's CompareDimsSupported: its message, or None when the shapes agree."""
    if max_batch_size > 0:
        if batch_dim_required and not has_batch_axis(model_dims):
            return (
                f"model '{model}', tensor '{name}': for the model to support batching the shape "
                "should have at least 1 dimension and the first dimension must be -1; but shape "
                f"expected by the model is {dims_text(model_dims)}"
            )
        full = [-1, *config_dims]
        if not _dims_match(model_dims, full, exact, skip_first=not batch_dim_required):
            return (
                f"model '{model}', tensor '{name}': the model expects {len(model_dims)} "
                f"dimensions (shape {dims_text(model_dims)}) but the model configuration "
                f"specifies {len(full)} dimensions (an initial batch dimension because "
                "max_batch_size > 0 followed by the explicit tensor shape, making complete "
                f"shape {dims_text(full)})"
            )
        return None
    if not _dims_match(model_dims, config_dims, exact):
        return (
            f"model '{model}', tensor '{name}': the model expects {len(model_dims)} dimensions "
            f"(shape {dims_text(model_dims)}) but the model configuration specifies "
            f"{len(config_dims)} dimensions (shape {dims_text(config_dims)})"
        )
    return None


def _dims_match(model_dims: list[int], config_dims: list[int], exact: bool,
                skip_first: bool = False) -> bool:
    if model_dims == config_dims:
        return True  # the common case, and what the test below makes of it
    if len(model_dims) != len(config_dims):
        return False
    return all(
        m == c for i, (m, c) in enumerate(zip(model_dims, config_dims, strict=True))
        if not (skip_first and i == 0) and (exact or m != -1)
    )


def onnx_problems(config: Any, model_file: ModelFile) -> list[Problem]:
    """ONNX Runtime's ValidateInputs / ValidateOutputs."""
    assert model_file.inputs is not None and model_file.outputs is not None
    model = config.name
    problems = [
        Problem("type", f"{kind} '{t.name}' is an {t.source_type}, not a tensor",
                f"Unsupported ONNX Type '{t.source_type}' for I/O '{t.name}', expected "
                "'ONNX_TYPE_TENSOR'.")
        for kind, group in (("input", model_file.inputs), ("output", model_file.outputs))
        for t in group if not t.is_tensor
    ]
    expected = len(config.input) - sum(t.optional for t in config.input) + len(config.batch_input)
    if config.HasField("sequence_batching"):
        controls = {c.kind for c in config.sequence_batching.control_input for c in c.control}
        kinds = type(config).DESCRIPTOR.fields_by_name["sequence_batching"].message_type
        counted = kinds.nested_types_by_name["Control"].enum_types_by_name["Kind"]
        names = ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY",
                 "CONTROL_SEQUENCE_CORRID")
        expected += sum(counted.values_by_name[n].number in controls for n in names)
        expected += len(config.sequence_batching.state)
    provided = len(model_file.inputs)
    if expected != provided:
        problems.append(Problem(
            "count", f"the config declares {expected} inputs, the model has {provided}",
            f"unable to load model '{model}', configuration expects {expected} inputs, model "
            f"provides {provided}", "input",
        ))
    overridable = model_file.onnx.initializer_inputs if model_file.onnx else []
    problems += _tensor_problems(config, "input", model_file.inputs, sorted(
        [t.name for t in model_file.inputs] + overridable), ONNX_TYPES, exact=False)
    problems += _tensor_problems(config, "output", model_file.outputs, sorted(
        t.name for t in model_file.outputs), ONNX_TYPES, exact=True)
    return problems


def _tensor_problems(config: Any, kind: str, found: list[TensorInfo], allowed: list[str],
                     supported: frozenset[str], exact: bool,
                     batch_dim_required: bool = True) -> list[Problem]:
    model = config.name
    by_name = {t.name: t for t in found}
    problems = []
    declared = config.input if kind == "input" else config.output
    batch_outputs = {n for b in config.batch_output for n in b.target_name}
    allowed_names = set(allowed)
    for index, tensor in enumerate(declared):
        where = f"{kind}[{index}]"
        if tensor.name not in allowed_names:
            listing = names_text(sorted(allowed))
            problems.append(Problem(
                "name", f"{kind} '{tensor.name}' is not in the model; it has {listing}",
                f"unexpected inference {kind} '{tensor.name}', allowed {kind}s are: "
                f"{listing if allowed else ''}", where,
            ))
            continue
        info = by_name.get(tensor.name)
        declared_type = type_name(tensor.data_type)
        if declared_type not in supported:
            problems.append(Problem(
                "type", f"{kind} '{tensor.name}' is {declared_type}, which this backend cannot "
                "hold", f"unsupported datatype {declared_type} for {kind} '{tensor.name}' for "
                f"model '{model}'", where,
            ))
            continue
        if info is None or not info.is_tensor:
            continue  # an overridable initializer: its type and shape are the initializer's
        if info.data_type and info.data_type != declared_type:
            problems.append(Problem(
                "dtype", f"{kind} '{tensor.name}' is {declared_type} in the config, "
                f"{info.data_type} in the model",
                f"unable to load model '{model}', configuration expects datatype "
                f"{declared_type} for {kind} '{tensor.name}', model provides "
                f"{_server_type(info)}", where,
            ))
        if info.dims is None or (kind == "output" and tensor.name in batch_outputs):
            continue
        dims = _config_dims(tensor)
        if info.dims:
            text = compare_dims(model, tensor.name, info.dims, dims, config.max_batch_size,
                                exact, batch_dim_required)
        elif any(d != 1 for d in dims):
            text = (
                f"unable to load model '{model}', scalar tensor '{tensor.name}', should only "
                "provide 1 in the model configuration when the model doesn't support batching. "
                f"Model configuration provided: {dims_text(dims)}."
            )
        else:
            text = None
        if text:
            problems.append(Problem(
                "dims", f"{kind} '{tensor.name}' has shape {dims_text(info.dims)} in the model, "
                f"dims {dims_text(dims)} with max_batch_size {config.max_batch_size} in the "
                "config", text, where,
            ))
    return problems


def openvino_problems(config: Any, model_file: ModelFile) -> list[Problem]:
    """The OpenVINO backend's ValidateInputs / ValidateOutputs (types are converted, not
    compared)."""
    assert model_file.inputs is not None and model_file.outputs is not None
    problems = []
    if len(config.input) != len(model_file.inputs):
        problems.append(Problem(
            "count", f"the config declares {len(config.input)} inputs, the model has "
            f"{len(model_file.inputs)}",
            f"unable to load model '{config.name}', configuration expects {len(config.input)} "
            f"inputs, model provides {len(model_file.inputs)}", "input",
        ))
    for kind, found, exact in (("input", model_file.inputs, False),
                               ("output", model_file.outputs, True)):
        allowed = sorted(t.name for t in found)
        problems += [
            p for p in _tensor_problems(config, kind, found, allowed, OPENVINO_TYPES, exact,
                                        batch_dim_required=False)
            if p.kind != "dtype"
        ]
    return problems


def sequence_inputs(config: Any) -> set[str]:
    """The inputs the sequence batcher adds to a request though the config's ``input`` lacks
    them: its control inputs (START, READY, END, CORRID, ...) and implicit state inputs."""
    sequence = config.sequence_batching
    return ({control.name for control in sequence.control_input}
            | {state.input_name for state in sequence.state})


def takes_dict_input(args: list[TorchScriptArg]) -> bool:
    """Whether forward() takes a single ``Dict[str, Tensor]``: the PyTorch backend then feeds
    it one dict keyed by the config's input names, and no argument count, type or order
    applies. The backend's load check switches on dict mode for any single Dict argument,
    but it always passes a ``Dict[str, Tensor]``, so another dict cannot be served."""
    return len(args) == 1 and args[0].annotation.replace(" ", "") == "Dict[str,Tensor]"


def torchscript_problems(config: Any, model_file: ModelFile) -> list[Problem]:
    """The PyTorch backend's ValidateInputs: forward()'s arguments against the config."""
    facts = model_file.torchscript
    if facts is None or facts.forward_args is None:
        return []
    args = facts.forward_args
    model = config.name
    problems: list[Problem] = []
    if not takes_dict_input(args):
        for arg in args:
            base = arg.annotation.split("[")[0].strip()
            if arg.annotation and base not in ("Tensor", "List", "Optional[Tensor]"):
                problems.append(Problem(
                    "type", f"forward() argument '{arg.name}' is {arg.annotation}",
                    f"An input of type '{arg.annotation}' was detected in the model. Only a single "
                    "input of type Dict(str, Tensor) or input(s) of type Tensor are supported.",
                    "input",
                ))
        expected = len(config.input) + len(config.batch_input)
        if args and len(args) != expected:
            problems.append(Problem(
                "count", f"forward() takes {len(args)} inputs "
                f"({', '.join(a.name for a in args)}), the config declares {expected}",
                f"unable to load model '{model}', configuration expects {expected} inputs, "
                f"model provides {len(args)}", "input",
            ))
    for kind, declared in (("input", config.input), ("output", config.output)):
        for index, tensor in enumerate(declared):
            declared_type = type_name(tensor.data_type)
            if declared_type not in TORCH_TYPES and declared_type != "TYPE_STRING":
                problems.append(Problem(
                    "type", f"{kind} '{tensor.name}' is {declared_type}, which the PyTorch "
                    "backend cannot hold", f"unsupported datatype {declared_type} for {kind} "
                    f"'{tensor.name}' for model '{model}'", f"{kind}[{index}]",
                ))
    return problems


def torch_input_binding(config: Any, arg_names: list[str]) -> str:
    """How the PyTorch backend binds config inputs to forward() arguments: "names",
    "index" (``<name>__<n>``) or "order" (config order, with a warning)."""
    names = [t.name for t in config.input]
    if all(name in arg_names for name in names):
        return "names"
    return "index" if all(follows_named_index(name) for name in names) else "order"


def follows_named_index(name: str) -> bool:
    """The backend's test for ``<name>__<index>``: everything after the *first* ``__`` is
    ASCII digits (``a__b__0`` does not follow it; an empty index does)."""
    _, delimiter, index = name.partition("__")
    return bool(delimiter) and all("0" <= char <= "9" for char in index)
