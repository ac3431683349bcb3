"""TD24x: response cache, custom metrics, sequence state, Python environments (warmup is in
config_warmup)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import tensor_bytes
from triton_doctor.triton.repository_model import ModelView, RepositoryView


@rule(
    "TD241",
    "response-cache-conflict",
    "error",
    "Response cache with sequence batching or decoupled mode",
    server_says=("Response Cache does not currently support model",),
    when=("response_cache",),
)
def response_cache_conflict(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `response_cache { enable: true }` together with `sequence_batching` or
    a decoupled `model_transaction_policy`.

    Why it matters: the server refuses the model.

    Example: a decoupled streaming model with `response_cache { enable: true }` → remove the
    cache block.

    Fix: disable the response cache for this model.
    """
    config = model.effective
    if not config.response_cache.enable:
        return
    if config.HasField("sequence_batching"):
        yield Hit(
            message="response cache enabled on a sequence-batched model",
            triton_message=f"Response Cache does not currently support model {config.name} with "
            "sequence batching scheduler. Please disable the response cache.",
            fix="Remove response_cache (or set enable: false).",
            field="response_cache",
        )
    if config.model_transaction_policy.decoupled:
        yield Hit(
            message="response cache enabled on a decoupled model",
            triton_message=f"Response Cache does not currently support model {config.name} with "
            "'decoupled' transaction policy. Please disable the response cache.",
            fix="Remove response_cache (or set enable: false).",
            field="response_cache",
        )


@rule("TD242", "invalid-model-metrics", "error", "model_metrics control is incomplete",
      server_says=("metric control must specify 'metric_identifier'",
                   "metric identifier must specify non-empty 'family'",
                   "metric control must specify 'histogram_options'",
                   "histogram options must specify non-empty 'buckets'"), when=("model_metrics",))
def invalid_model_metrics(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each `model_metrics.metric_control` has a `metric_identifier` with a
    non-empty `family` and `histogram_options` with at least one bucket.

    Why it matters: the server refuses the model.

    Example: `metric_identifier: { family: "" }` →
    `metric_identifier: { family: "nv_inference_first_response_histogram_ms" }`.

    Fix: complete the metric control, or remove it.
    """
    config = model.effective
    if not config.HasField("model_metrics"):
        return
    for index, control in enumerate(config.model_metrics.metric_control):
        where = f"model_metrics.metric_control[{index}]"
        if not control.HasField("metric_identifier"):
            text = "metric control must specify 'metric_identifier'"
        elif not control.metric_identifier.family:
            text = "metric identifier must specify non-empty 'family'"
        elif not control.HasField("histogram_options"):
            text = "metric control must specify 'histogram_options'"
        elif not control.histogram_options.buckets:
            text = "histogram options must specify non-empty 'buckets'"
        else:
            continue
        yield Hit(
            message=f"metric_control #{index + 1}: {text}",
            triton_message=text,
            fix="Give metric_identifier.family and histogram_options.buckets.",
            field=where,
        )


@rule("TD244", "invalid-initial-state", "error", "Sequence state initial_state is invalid",
      server_says=("contains variable dimensions.", "initial_state setting expects",
                   "must be set when using initial_state for state input",
                   "doesn't match the size of 'state' dimensions",
                   "doesn't match 'state' dim description", "does not match the state data type",
                   "must contain exactly one or zero element", "/initial_state/"),
                   when=("sequence_batching",))
def invalid_initial_state(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `sequence_batching.state` entries as the server reads them when it
    creates the sequence batcher: state input names unique; at most one `initial_state`,
    named, with the state's data type, as many dims as the state, no -1, equal dims where
    the state's are fixed, a data source (`zero_data` or `data_file`), and a data file under
    `initial_state/` holding enough bytes.

    Why it matters: the model fails to load; tritonserver 2.51 was seen to crash (SIGSEGV)
    while tearing down a model whose state was refused.

    Example: `initial_state { data_type: TYPE_FP32 dims: [ -1 ] zero_data: true }` for a
    state of dims `[ 16 ]` → `dims: [ 16 ]`, with `name: "zeros"`.

    Fix: describe the initial value exactly as the state is declared, and name it.
    """
    config = model.effective
    if not config.HasField("sequence_batching"):
        return
    seen: set[str] = set()
    for index, state in enumerate(config.sequence_batching.state):
        where = f"sequence_batching.state[{index}]"
        name = state.input_name
        for text in _initial_state_problems(model, state, name, seen):
            yield Hit(
                message=f"state '{name}': {text}",
                triton_message=text,
                fix="Give one named initial_state with the state's data_type and dims, and "
                "zero_data: true or a data_file in initial_state/.",
                field=f"{where}.initial_state",
            )
        seen.add(name)


def _initial_state_problems(
    model: ModelView, state: Any, name: str, seen: set[str]
) -> Iterator[str]:
    if name in seen:
        yield f"State input name '{name}' specified more than once."
    if len(state.initial_state) > 1:
        yield (
            f"initial_state field for state input '{name}' must contain exactly one or zero "
            f"element. Found '{len(state.initial_state)}' elements."
        )
        return
    if not state.initial_state:
        return
    initial = state.initial_state[0]
    if initial.data_type != state.data_type:
        yield (
            f"The data type used for 'initial_state' field of state '{name}' does not match "
            "the state data type."
        )
    if not initial.name:
        yield f"Field 'name' must be set when using initial_state for state input '{name}'."
    if len(initial.dims) != len(state.dims):
        yield (
            f"Number of dimensions in 'initial_state' doesn't match the size of 'state' "
            f"dimensions for state input '{name}'. {len(initial.dims)} != {len(state.dims)}"
        )
    elif any(d == -1 for d in initial.dims):
        yield f"'initial_state' field for state input name '{name}' contains variable dimensions."
    else:
        for given, declared in zip(initial.dims, state.dims, strict=True):
            if declared != -1 and given != declared:
                yield (
                    f"'initial_state' dim for input name '{name}' doesn't match 'state' dim "
                    f"description. {given} != {declared}"
                )
                break
    source = initial.WhichOneof("state_data")
    if source is None:
        yield f"initial_state setting expects state'{name}' to have state_data set"
    elif source == "data_file":
        size = model.dir.data_files.get(f"initial_state/{initial.data_file}")
        needed = tensor_bytes(initial)
        path = f"{model.dir.path}/initial_state/{initial.data_file}"
        if size is None:
            if model.tree_shows_absent(f"initial_state/{initial.data_file}"):
                yield f"failed to open text file for read {path}: No such file or directory"
        elif needed is not None and size < needed:
            yield (
                f"initial_state setting expects {needed} bytes, but the data provided from "
                f"{initial.data_file}only has {size} bytes."
            )


@rule(
    "TD245",
    "batch-strategy-with-sequence",
    "error",
    "Custom batching strategy on a sequence-batched model",
    server_says=("TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence batcher",),
    when=("sequence_batching",),
)
def batch_strategy_with_sequence(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the `TRITON_BATCH_STRATEGY_PATH` parameter (a custom batching library)
    on a model that uses `sequence_batching`.

    Why it matters: the custom strategy only plugs into the dynamic batcher; the server
    refuses the model.

    Example: `parameters { key: "TRITON_BATCH_STRATEGY_PATH" ... }` with
    `sequence_batching { }` → remove the parameter, or use dynamic_batching.

    Fix: use the custom batching strategy with `dynamic_batching` only.
    """
    config = model.effective
    if config.HasField("sequence_batching") and "TRITON_BATCH_STRATEGY_PATH" in config.parameters:
        yield Hit(
            message="TRITON_BATCH_STRATEGY_PATH is set on a sequence-batched model",
            triton_message="TRITON_BATCH_STRATEGY_PATH cannot be specified with sequence "
            "batcher, using default batching strategy",
            fix="Remove the TRITON_BATCH_STRATEGY_PATH parameter.",
            field="parameters",
        )


MODEL_DIRECTORY_VARIABLE = "$$TRITON_MODEL_DIRECTORY"


@rule("TD246", "python-env-missing", "error", "EXECUTION_ENV_PATH names a missing environment",
      server_says=("The Python environment should contain an 'activate' script.",
                   "Failed to get the canonical path for"), when=("backend:python",))
def python_env_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a Python model's `EXECUTION_ENV_PATH` parameter written relative to the
    model (`$$TRITON_MODEL_DIRECTORY/...`) names a conda-pack archive that is there, or an
    unpacked environment with `bin/activate`. Absolute paths are paths inside the server's
    container and are not checked offline.

    Why it matters: the Python stub cannot start and the model fails to load.

    Example: `$$TRITON_MODEL_DIRECTORY/env.tar.gz` with the archive left out of the deploy →
    copy `env.tar.gz` next to config.pbtxt.

    Fix: ship the environment inside the model directory, or point to a path that exists in
    the container.
    """
    config = model.effective
    parameter = config.parameters.get("EXECUTION_ENV_PATH")
    if config.backend != "python" or parameter is None:
        return
    value = parameter.string_value
    if not value.startswith(MODEL_DIRECTORY_VARIABLE):
        return
    relative = posixpath.normpath(value[len(MODEL_DIRECTORY_VARIABLE) :].lstrip("/"))
    path = f"{model.dir.path}/{relative}"
    if not model.tree_shows_absent(relative):
        return  # there, or the walk stopped before it could tell (TD114 says so)
    if not model.tree_shows_absent(relative + "/"):  # an unpacked environment
        if not model.tree_shows_absent(f"{relative}/bin/activate"):
            return
        text = (
            f"Path {path}/bin/activate does not exist. The Python environment should "
            "contain an 'activate' script."
        )
        yield Hit(
            message=f"EXECUTION_ENV_PATH {value} has no bin/activate",
            triton_message=text,
            fix="Point to a conda-pack .tar.gz, or an unpacked env with bin/activate.",
            field="parameters",
        )
        return
    yield Hit(
        message=f"EXECUTION_ENV_PATH {value}: {path} does not exist",
        triton_message=f"Failed to get the canonical path for {path}.",
        fix=f"Put the packed environment at {path}.",
        field="parameters",
    )
