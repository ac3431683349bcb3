"""TD243, TD247: model_warmup samples, prepared and checked as the server does at load.

When it creates each model instance, the server turns every sample whose batch_size is at
least 1 into batch_size requests of batch 1: first every input of the sample must have fixed
dims, then each input's data is made (zeros, random bytes) or read from ``warmup/``. Then each
request is checked like a client's (TD247): the number of model inputs it feeds, then per
input its data type, its shape and, for strings, its bytes. Only once every sample is
prepared are they run, and the backend checks the batch size. The server stops at the first
failure, so a sample is judged one stage at a time: a later stage's words are only what the
server says once the earlier ones are fixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import (
    dims_product,
    dims_text,
    enum_name,
    is_ensemble,
    names_text,
    tensor_bytes,
)
from triton_doctor.rules._model_io import sequence_inputs
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: How core names a request without an id in the errors of its checks.
NO_ID = "[request id: <id_unknown>] "
#: Backends whose inputs this tool knows once the config declares them: their auto-complete
#: is followed (ONNX Runtime, OpenVINO), fills nothing (PyTorch), or fills only what TD247
#: passes over (TensorFlow: a TYPE_INVALID data type, empty dims, and a max_batch_size of 0,
#: after which the batch size is not judged).
SETTLED_BACKENDS = frozenset({"onnxruntime", "openvino", "pytorch", "tensorflow"})
#: Bytes of the length that precedes each element of a TYPE_STRING tensor.
STRING_LENGTH_BYTES = 4


@rule("TD243", "invalid-warmup", "error", "model_warmup cannot be prepared",
      server_says=("model_warmup can not be specified for ensemble '",
                   "warmup setting expects", "failed to open text file for read",
                   "Skipping batch 0 warmup sample '"), when=("warmup",))
def invalid_warmup(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `model_warmup` samples as the server prepares them when it creates an
    instance: not on an ensemble; every input with fixed dims (no -1), then a data source
    (zero_data, random_data or input_data_file) and a data file that exists under `warmup/`
    and holds the tensor's bytes. A sample without batch_size (0) is skipped by the server:
    a warning, since the model is then not warmed up.

    Why it matters: a sample that cannot be prepared fails the model's load.

    Example: `dims: [ -1, 3 ]` → `dims: [ 16, 3 ]`; a JPEG as input_data_file → the raw
    little-endian tensor bytes.

    Fix: give concrete dims and a data source; data files hold raw tensor bytes.
    """
    config = model.effective
    if not config.model_warmup:
        return
    if is_ensemble(config):
        yield Hit(
            message="model_warmup on an ensemble",
            triton_message=f"model_warmup can not be specified for ensemble '{config.name}'",
            fix="Warm up the composing models instead.",
            field="model_warmup",
        )
        return
    for index, sample in enumerate(config.model_warmup):
        where = f"model_warmup[{index}]"
        if sample.batch_size == 0:
            yield Hit(
                message=f"warmup '{sample.name}' has batch_size 0 (the default): the server "
                "skips it, so it warms nothing up",
                triton_message=f"Skipping batch 0 warmup sample '{sample.name}'",
                fix="Set batch_size: 1 (or the batch size to warm up).",
                field=where,
                severity=Severity.WARNING,
            )
        else:
            yield from _preparation_hits(model, sample, where)


def _preparation_hits(model: ModelView, sample: Any, where: str) -> Iterator[Hit]:
    """What stops the server preparing ``sample``: first any input with a variable dim, then
    (only when there is none) each input's data source."""
    variable = [name for name in sorted(sample.inputs) if -1 in sample.inputs[name].dims]
    for name in variable:
        yield Hit(
            message=f"warmup '{sample.name}' input '{name}' has variable dims",
            triton_message="warmup setting expects all variable-size dimensions "
            f"are specified for input '{name}'",
            fix="Give every dimension a concrete size.",
            field=f"{where}.inputs",
        )
    if variable:
        return
    for name in sorted(sample.inputs):
        tensor = sample.inputs[name]
        source = tensor.WhichOneof("input_data_type")
        if source is None:
            yield Hit(
                message=f"warmup '{sample.name}' input '{name}' has no data source",
                triton_message=f"{NO_ID}warmup setting expects input '{name}' to have "
                "input_data_type set",
                fix="Add zero_data: true, random_data: true or input_data_file.",
                field=f"{where}.inputs",
            )
        elif source == "input_data_file":
            yield from _file_hits(model, name, tensor, where)


def _file_hits(model: ModelView, name: str, tensor: Any, where: str) -> Iterator[Hit]:
    """An input_data_file under warmup/ that exists and, but for strings (whose length the
    request check judges), holds at least the tensor's bytes (the rest is ignored)."""
    path = f"warmup/{tensor.input_data_file}"
    size = model.dir.data_files.get(path)
    needed = tensor_bytes(tensor)
    if size is not None and needed is not None and size < needed:
        yield Hit(
            message=f"warmup file {path} holds {size} bytes; input '{name}' "
            f"needs {needed}",
            triton_message=f"{NO_ID}warmup setting expects {needed} bytes, but the "
            f"data provided from {tensor.input_data_file}only has {size} bytes",
            fix="Write the raw little-endian tensor bytes (not an image file).",
            field=f"{where}.inputs",
            evidence={"file_bytes": size, "needed_bytes": needed},
        )
    if model.tree_shows_absent(path):
        yield Hit(
            message=f"warmup data file {path} does not exist",
            triton_message=f"failed to open text file for read "
            f"{model.dir.path}/{path}: No such file or directory",
            fix=f"Write the raw tensor bytes to {model.dir.path}/{path}.",
            field=f"{where}.inputs",
        )


@rule("TD247", "warmup-input-mismatch", "error", "Warmup sample does not fit the model's inputs",
      server_says=("' data-type is '", "unexpected shape for input '",
                   "but missing required input(s) [", "string elements for inference input '",
                   "incomplete string length indicator for inference input '",
                   "failed to run warmup sample '"), when=("warmup",))
def warmup_input_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each prepared `model_warmup` sample's requests as the server checks them
    before any is sent: every required model input fed (optional inputs may be left out),
    each input's data_type and dims those of the model input (dims exclude the batch
    dimension, which the server adds when max_batch_size > 0; a -1 in the config matches any
    size; `reshape` plays no part), a string data file with a length for every element; then
    batch_size within max_batch_size (1 when it is 0), which the backend checks when the
    sample runs; not where the backend fills an unset max_batch_size at load (TensorFlow,
    TensorRT). A key that names no model input, sequence control input or state is a
    warning: the server passes it on as an extra tensor.

    Why it matters: a sample that does not fit fails the model's load, in the words a client
    request would get. A too large batch fails it only when the sample runs, and tearing the
    instance down then has crashed tritonserver 2.51.

    Example: `dims: [ 1, 128 ]` for an input of `dims: [ 128 ]` with max_batch_size 8 →
    `dims: [ 128 ]` (the server asks for [-1,128] and gets [1,1,128]).

    Fix: copy each input's data_type and dims from the model's `input` entries, leave the
    batch dimension to batch_size, and feed every required input.
    """
    config = model.effective
    if not config.model_warmup or is_ensemble(config) or not _inputs_settled(model):
        return
    inputs = {tensor.name: tensor for tensor in config.input}
    control = sequence_inputs(config)
    for index, sample in enumerate(config.model_warmup):
        where = f"model_warmup[{index}]"
        if sample.batch_size == 0:
            continue  # skipped by the server (TD243 says so)
        for name in sorted(set(sample.inputs) - set(inputs) - control):
            yield Hit(
                message=f"warmup '{sample.name}' feeds '{name}', which is not a model input "
                f"(inputs: {names_text(sorted(inputs))}); the server passes it to the "
                "backend as an extra tensor",
                fix="Key warmup inputs by the model's input names.",
                field=f"{where}.inputs",
                severity=Severity.WARNING,
            )
        if any(_preparation_hits(model, sample, where)):
            continue
        found = list(_request_hits(model, sample, inputs, where))
        yield from found
        if not found and model.max_batch_size_known:
            yield from _batch_too_large(config, sample, where)


def _inputs_settled(model: ModelView) -> bool:
    """Whether the effective config's inputs are those the server checks samples against:
    declared, and not open to an auto-complete this tool does not follow (model.py's
    auto_complete_config when its code cannot be followed; TensorRT, DALI and custom
    backends, which may fill inputs from files they read)."""
    config = model.effective
    if not config.input:
        return False
    if config.backend == "python":
        return model.auto_complete_exact is not False
    return config.backend in SETTLED_BACKENDS


def _request_hits(model: ModelView, sample: Any, inputs: dict[str, Any],
                  where: str) -> Iterator[Hit]:
    """The request check: how many model inputs are fed, then (only when enough are) each
    fed input's data type, then its shape, then a string file's length."""
    config = model.effective
    fed = [name for name in inputs if name in sample.inputs]
    required = [tensor for tensor in config.input if not tensor.optional]
    if len(fed) < len(required):
        yield _missing_inputs(config, fed, required, sample, where)
        return
    for name in sorted(fed):
        declared, given = inputs[name], sample.inputs[name]
        problem = (_type_problem(config, declared, given)
                   or _shape_problem(config, declared, given, model.batches))
        if problem is not None:
            yield Hit(message=f"warmup '{sample.name}': {problem[0]}",
                      triton_message=problem[1],
                      fix=f"Give '{name}' the model input's data_type and dims "
                      "(without the batch dimension).",
                      field=f"{where}.inputs")
        elif given.WhichOneof("input_data_type") == "input_data_file":
            yield from _string_file_hits(model, name, given, where)


def _missing_inputs(config: Any, fed: list[str], required: list[Any], sample: Any,
                    where: str) -> Hit:
    """Core's count check. It lists the fed inputs in no set order, so with more than one
    fed the quote stops before that list."""
    total = len(config.input)
    missing = [tensor.name for tensor in required if tensor.name not in fed]
    counted = (f"expected {total} inputs" if len(required) == total
               else f"expected number of inputs between {len(required)} and {total}")
    said = f"{NO_ID}{counted} but got {len(fed)} inputs for model '{config.name}'."
    if len(fed) <= 1:
        said += (f" Got input(s) [{''.join(repr(name) for name in fed)}], but missing required"
                 f" input(s) [{','.join(repr(name) for name in missing)}]. Please provide all"
                 " required input(s).")
    return Hit(
        message=f"warmup '{sample.name}' does not feed required input(s) "
        f"{names_text(missing)}",
        triton_message=said,
        fix="Give every required model input a warmup value (zero_data: true is enough).",
        field=f"{where}.inputs",
    )


def _type_problem(config: Any, declared: Any, given: Any) -> tuple[str, str] | None:
    """(our words, the server's) when the sample's data type is not the input's."""
    if declared.data_type in (0, given.data_type):  # 0: TYPE_INVALID, left to the config rules
        return None
    theirs, ours = _wire_type(given), _wire_type(declared)
    return (f"input '{declared.name}' is {theirs}, the model input {ours}",
            f"{NO_ID}inference input '{declared.name}' data-type is '{theirs}', but model "
            f"'{config.name}' expects '{ours}'")


def _wire_type(tensor: Any) -> str:
    """The data type as core prints it in request errors: ``FP32``, ``BYTES``, ``<invalid>``."""
    name = enum_name(tensor, "data_type", tensor.data_type)
    if name in ("", "TYPE_INVALID"):
        return "<invalid>"
    return "BYTES" if name == "TYPE_STRING" else name.removeprefix("TYPE_")


def _shape_problem(config: Any, declared: Any, given: Any,
                   batches: bool | None) -> tuple[str, str | None] | None:
    """(our words, the server's) when the sample's dims do not fit the input's: the same
    count, each equal or -1 in the config. The server prepends the batch dimension to both
    when max_batch_size > 0, so its words (not the verdict) are unknown when ``batches`` is
    (an auto-complete fills max_batch_size). A shape tensor keeps that dimension and is left
    alone, as is an input without dims (the config rules judge it)."""
    wanted, dims = list(declared.dims), list(given.dims)
    if declared.is_shape_tensor or not wanted:
        return None
    if len(wanted) == len(dims) and all(w in (-1, d) for w, d in zip(wanted, dims, strict=True)):
        return None
    expected = dims_text(([-1] if batches else []) + wanted)
    got = dims_text(([1] if batches else []) + dims)
    hint = " (dims exclude the batch dimension)" if batches and dims[1:] == wanted else ""
    return (f"input '{declared.name}' has dims {dims_text(dims)}, the model input "
            f"{dims_text(wanted)}{hint}",
            None if batches is None else f"{NO_ID}unexpected shape for input "
            f"'{declared.name}' for model '{config.name}'. Expected {expected}, got {got}")


def _string_file_hits(model: ModelView, name: str, tensor: Any, where: str) -> Iterator[Hit]:
    """A TYPE_STRING data file too short to hold a 4-byte length for each element. The
    server's words depend on the bytes, known here only for files under 4 bytes."""
    size = model.dir.data_files.get(f"warmup/{tensor.input_data_file}")
    count = dims_product(tensor.dims)
    if enum_name(tensor, "data_type", tensor.data_type) != "TYPE_STRING" or size is None or \
            not count or size >= STRING_LENGTH_BYTES * count:
        return
    config = model.effective
    about = f"for inference input '{name}' for model '{config.name}'"
    said: str | None = None
    if size == 0:
        said = f"{NO_ID}expected {count} string elements {about}, got 0"
    elif size < STRING_LENGTH_BYTES:
        said = (f"{NO_ID}incomplete string length indicator {about}, expecting "
                f"{STRING_LENGTH_BYTES} bytes but only {size} bytes available. Please make "
                "sure the string length indicator is in one buffer.")
    yield Hit(
        message=f"warmup file warmup/{tensor.input_data_file} holds {size} bytes, too few for "
        f"{count} strings of input '{name}' (each is a 4-byte length, then its bytes)",
        triton_message=said,
        fix="Write each string as its length (4 bytes, little-endian), then its bytes.",
        field=f"{where}.inputs",
        evidence={"file_bytes": size, "strings": count},
    )


def _batch_too_large(config: Any, sample: Any, where: str) -> Iterator[Hit]:
    """The backend's batch check when the sample runs: its batch_size requests of batch 1
    (of no batch dimension when max_batch_size is 0) add up to more than it allows."""
    if sample.batch_size == 1 or sample.batch_size <= config.max_batch_size:
        return
    yield Hit(
        message=f"warmup '{sample.name}' batch_size {sample.batch_size} exceeds "
        f"max_batch_size {config.max_batch_size}; tritonserver 2.51 was seen to crash "
        "(SIGSEGV) on this",
        triton_message=f"failed to run warmup sample '{sample.name}': batch size "
        f"{sample.batch_size} for '{_first_instance(config)}', max allowed is "
        f"{config.max_batch_size}",
        fix=f"Use batch_size <= {max(config.max_batch_size, 1)}.",
        field=f"{where}.batch_size",
    )


def _first_instance(config: Any) -> str:
    """The name of the first model instance, as the server names it in warmup errors."""
    if not config.instance_group:
        return f"{config.name}_0"  # the server adds one group named after the model
    group = config.instance_group[0]
    return f"{group.name or config.name + '_0'}_0"
