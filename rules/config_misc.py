"""TD24x: response cache, custom metrics and warmup."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble
from triton_doctor.view import ModelView, RepositoryView

#: Bytes per element of each TYPE_ value (STRING has no fixed size).
ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 14: 2}


@rule(
    "TD241",
    "response-cache-conflict",
    "error",
    "Response cache with sequence batching or decoupled mode",
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


@rule("TD242", "invalid-model-metrics", "error", "model_metrics control is incomplete")
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


@rule("TD243", "invalid-warmup", "error", "model_warmup cannot run")
def invalid_warmup(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `model_warmup` samples as the server prepares them at load: not on an
    ensemble; every input with fixed dims (no -1), a data source (zero_data, random_data or
    input_data_file), a data file that exists under `warmup/` and holds enough bytes; input
    names that are the model's inputs; batch_size within max_batch_size.

    Why it matters: a failing warmup fails the model's load.

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
    inputs = {tensor.name for tensor in config.input}
    tree = set(model.dir.tree)
    for index, sample in enumerate(config.model_warmup):
        where = f"model_warmup[{index}]"
        if sample.batch_size > max(config.max_batch_size, 1):
            yield Hit(
                message=f"warmup '{sample.name}' batch_size {sample.batch_size} exceeds "
                f"max_batch_size {config.max_batch_size}",
                fix=f"Use batch_size <= {max(config.max_batch_size, 1)}.",
                field=f"{where}.batch_size",
            )
        for name in sorted(sample.inputs):
            tensor = sample.inputs[name]
            if inputs and name not in inputs:
                yield Hit(
                    message=f"warmup '{sample.name}' feeds '{name}', which is not an input "
                    f"(inputs: {', '.join(sorted(inputs))})",
                    fix="Key warmup inputs by the model's input names.",
                    field=f"{where}.inputs",
                )
            if any(d == -1 for d in tensor.dims):
                yield Hit(
                    message=f"warmup '{sample.name}' input '{name}' has variable dims",
                    triton_message="warmup setting expects all variable-size dimensions "
                    f"are specified for input '{name}'",
                    fix="Give every dimension a concrete size.",
                    field=f"{where}.inputs",
                )
                continue
            source = tensor.WhichOneof("input_data_type")
            if source is None:
                yield Hit(
                    message=f"warmup '{sample.name}' input '{name}' has no data source",
                    triton_message=f"warmup setting expects input '{name}' to have "
                    "input_data_type set",
                    fix="Add zero_data: true, random_data: true or input_data_file.",
                    field=f"{where}.inputs",
                )
            elif source == "input_data_file":
                path = f"warmup/{tensor.input_data_file}"
                if path not in tree:
                    yield Hit(
                        message=f"warmup data file {path} does not exist",
                        triton_message=f"failed to open text file for read "
                        f"{model.dir.path}/{path}: No such file or directory",
                        fix=f"Write the raw tensor bytes to {model.dir.path}/{path}.",
                        field=f"{where}.inputs",
                    )
