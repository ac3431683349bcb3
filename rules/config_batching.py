"""TD22x: batch inputs/outputs, the dynamic batcher and the sequence batcher."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import enum_name, is_ensemble, names_text
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: Batch input kinds that take exactly one source input.
ONE_SOURCE_KINDS = {
    "BATCH_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT",
    "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO",
    "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE",
    "BATCH_ITEM_SHAPE",
    "BATCH_ITEM_SHAPE_FLATTEN",
}
#: The data types core accepts for a batch input.
BATCH_INPUT_TYPES = ("TYPE_INT32", "TYPE_FP32")


@rule("TD221", "invalid-batch-io", "error", "batch_input / batch_output is malformed",
      server_says=("unknown batch input kind '", "expects 1 source input, got",
                   "batch input data type must be TYPE_INT32 or TYPE_FP32",
                   "unknown source input name '", "unknown batch output kind '",
                   "target output name '"), when=("batch_io",))
def invalid_batch_io(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each `batch_input` names exactly one existing `source_input` (for the
    kinds that take one) and has data type TYPE_INT32 or TYPE_FP32; each `batch_output` of
    kind BATCH_SCATTER_WITH_INPUT_SHAPE has one existing source input and targets a declared
    output, once.

    Why it matters: core rejects the configuration and the model never loads.

    Example: `source_input: [ "INPUT", "INPUT" ]` → `source_input: [ "INPUT" ]`.

    Fix: give one source input that is declared in `input`.
    """
    config = model.effective
    inputs = {tensor.name for tensor in config.input}
    outputs = {tensor.name for tensor in config.output}
    for index, batch_input in enumerate(config.batch_input):
        yield from _batch_input_hits(batch_input, f"batch_input[{index}]", inputs)
    targets: set[str] = set()
    for index, batch_output in enumerate(config.batch_output):
        where = f"batch_output[{index}]"
        yield from _batch_output_hits(batch_output, where, inputs, outputs, targets)


def _batch_input_hits(batch_input: Any, where: str, inputs: set[str]) -> Iterator[Hit]:
    """One batch_input as core checks it: its kind, then how many sources it lists (core stops
    at either), then its data type and each source's name."""
    kind = enum_name(batch_input, "kind", batch_input.kind)
    sources = list(batch_input.source_input)
    if not kind:
        yield Hit(
            message=f"batch_input '{batch_input.target_name}' has kind "
            f"{batch_input.kind}, which is not a batch input kind",
            triton_message=f"unknown batch input kind '{kind}'",
            fix="Use a kind such as BATCH_ELEMENT_COUNT or BATCH_ACCUMULATED_ELEMENT_COUNT.",
            field=f"{where}.kind",
        )
        return
    if kind in ONE_SOURCE_KINDS and len(sources) != 1:
        yield Hit(
            message=f"batch_input '{batch_input.target_name}' of kind {kind} lists "
            f"{len(sources)} source inputs",
            triton_message=f"batch input kind '{kind}' expects 1 source input, got "
            f"{len(sources)}",
            fix="List exactly one source_input.",
            field=f"{where}.source_input",
        )
        return
    if enum_name(batch_input, "data_type", batch_input.data_type) not in BATCH_INPUT_TYPES:
        yield Hit(
            message=f"batch_input '{batch_input.target_name}' has an unsupported data type",
            triton_message="batch input data type must be TYPE_INT32 or TYPE_FP32",
            fix="Use data_type: TYPE_INT32 or TYPE_FP32.",
            field=f"{where}.data_type",
        )
    for source in sources:
        if source not in inputs:
            yield Hit(
                message=f"batch_input '{batch_input.target_name}' reads source input "
                f"'{source}', which is not a declared input",
                triton_message=f"unknown source input name '{source}'",
                fix=f"Use one of the declared inputs: {names_text(sorted(inputs))}.",
                field=f"{where}.source_input",
            )


def _batch_output_hits(batch_output: Any, where: str, inputs: set[str], outputs: set[str],
                       targets: set[str]) -> Iterator[Hit]:
    """One batch_output as core checks it: its kind, then its one source (core stops at
    either), then the source's name and its targets."""
    kind = enum_name(batch_output, "kind", batch_output.kind)
    sources = list(batch_output.source_input)
    if not kind:
        yield Hit(
            message=f"batch_output has kind {batch_output.kind}, which is not a batch "
            "output kind",
            triton_message=f"unknown batch output kind '{kind}'",
            fix="Use kind: BATCH_SCATTER_WITH_INPUT_SHAPE.",
            field=f"{where}.kind",
        )
        return
    if len(sources) != 1:
        yield Hit(
            message=f"batch_output of kind {kind} lists {len(sources)} source inputs",
            triton_message=f"batch output kind '{kind}' expects 1 source input, got "
            f"{len(sources)}",
            fix="List exactly one source_input.",
            field=f"{where}.source_input",
        )
        return
    if sources[0] not in inputs:
        yield Hit(
            message=f"batch_output reads source input '{sources[0]}', which is not declared",
            triton_message=f"unknown source input name '{sources[0]}'",
            fix="Use a declared input.",
            field=f"{where}.source_input",
        )
    yield from _batch_output_target_hits(batch_output, where, outputs, targets)


def _batch_output_target_hits(batch_output: Any, where: str, outputs: set[str],
                              targets: set[str]) -> Iterator[Hit]:
    """Each target is a declared output, and none is named twice across the batch outputs
    (``targets``: those named before)."""
    for target in batch_output.target_name:
        if target not in outputs:
            yield Hit(
                message=f"batch_output targets '{target}', which is not a declared output",
                triton_message=f"unknown target output name '{target}'",
                fix="Target a declared output.",
                field=f"{where}.target_name",
            )
        elif target in targets:
            yield Hit(
                message=f"batch_output target '{target}' is given twice",
                triton_message=f"target output name '{target}' can only be specified once",
                fix="Name each target output once.",
                field=f"{where}.target_name",
            )
        targets.add(target)


def _queue_policies(batching: Any) -> Iterator[tuple[str, Any]]:
    if batching.HasField("default_queue_policy"):
        yield "default_queue_policy", batching.default_queue_policy
    for level in sorted(batching.priority_queue_policy):
        yield f"priority_queue_policy[{level}]", batching.priority_queue_policy[level]


@rule("TD222", "invalid-dynamic-batching", "error", "dynamic_batching is invalid",
      server_says=("dynamic batching preferred size must be",
                   "default priority level must be in range",
                   "priority queue policy must have priority level in range",
                   "Only one priority level is allowed when 'preserve_ordering'",
                   "Queue policy can not have DELAY as timeout action when"),
                   when=("dynamic_batching",))
def invalid_dynamic_batching(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `dynamic_batching` as core validates it: preferred batch sizes positive
    and <= max_batch_size; `default_priority_level` and `priority_queue_policy` levels within
    [1, priority_levels]; with `preserve_ordering`, one priority level and no DELAY
    timeout action.

    Why it matters: the server refuses the configuration at load.

    Example: `max_batch_size: 8` with `preferred_batch_size: [ 4, 16 ]` →
    `preferred_batch_size: [ 4, 8 ]`.

    Fix: keep every preferred size in 1..max_batch_size, and priority levels in range.
    """
    config = model.effective
    if not config.HasField("dynamic_batching"):
        return
    batching = config.dynamic_batching
    name = config.name
    for size in batching.preferred_batch_size:
        if size < 1:
            yield Hit(
                message=f"preferred_batch_size {size} is not positive",
                triton_message=f"dynamic batching preferred size must be positive for {name}",
                fix="Remove it; preferred sizes are 1..max_batch_size.",
                field="dynamic_batching.preferred_batch_size",
            )
        elif size > config.max_batch_size:
            yield Hit(
                message=f"preferred_batch_size {size} is larger than max_batch_size "
                f"{config.max_batch_size}",
                triton_message=f"dynamic batching preferred size must be <= max batch size "
                f"for {name}",
                fix=f"Use preferred sizes up to {config.max_batch_size}, or raise "
                "max_batch_size (and rebuild an engine whose profile allows it).",
                field="dynamic_batching.preferred_batch_size",
                evidence={"preferred_batch_size": size, "max_batch_size": config.max_batch_size},
            )
    levels = batching.priority_levels
    if levels > 0:
        if not 1 <= batching.default_priority_level <= levels:
            yield Hit(
                message=f"default_priority_level {batching.default_priority_level} is outside "
                f"1..{levels}",
                triton_message=f"default priority level must be in range [1, {levels}] for {name}",
                fix=f"Set default_priority_level to a level in 1..{levels}.",
                field="dynamic_batching.default_priority_level",
            )
        for level in sorted(batching.priority_queue_policy):
            if not 1 <= level <= levels:
                yield Hit(
                    message=f"priority_queue_policy for level {level} is outside 1..{levels}",
                    triton_message=f"priority queue policy must have priority level in range "
                    f"[1, {levels}] for {name}",
                    fix=f"Key priority_queue_policy by levels 1..{levels}.",
                    field="dynamic_batching.priority_queue_policy",
                )
    if batching.preserve_ordering:
        if levels > 1:
            yield Hit(
                message=f"preserve_ordering with {levels} priority levels",
                triton_message=f"Only one priority level is allowed when 'preserve_ordering' "
                f"is true for {name}",
                fix="Use one priority level, or drop preserve_ordering.",
                field="dynamic_batching.preserve_ordering",
            )
        for where, policy in _queue_policies(batching):
            delays = enum_name(policy, "timeout_action", policy.timeout_action) == "DELAY"
            if delays and policy.default_timeout_microseconds:
                yield Hit(
                    message=f"{where} delays timed-out requests while preserve_ordering is on",
                    triton_message=f"Queue policy can not have DELAY as timeout action when "
                    f"'preserve_ordering' is true for {name}",
                    fix="Use timeout_action: REJECT, or drop preserve_ordering.",
                    field=f"dynamic_batching.{where.split('[')[0]}",
                )


def _false_true_fields(control: Any) -> list[str]:
    return [
        f
        for f in ("int32_false_true", "fp32_false_true", "bool_false_true")
        if len(getattr(control, f))
    ]


@rule("TD223", "invalid-sequence-batching", "error", "sequence_batching controls are invalid",
      server_says=("sequence batching control tensor must have a name for",
                   "sequence batching specifies multiple",
                   "sequence batching must not specify either",
                   "unexpected data type for control CONTROL_SEQUENCE_CORRID",
                   "sequence batching must specify either 'int32_false_true'",
                   "sequence batching specifies more than one from 'int32_false_true'",
                   "' must have exactly 2 entries for",
                   "sequence batching preferred batch size must be",
                   "sequence batching minimum slot utilization must be in range"),
                   when=("sequence_batching",))
def invalid_sequence_batching(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `sequence_batching.control_input` as core validates it: every control
    tensor named, used for one control kind only, one tensor per kind; START/END/READY
    controls with exactly one of int32/fp32/bool_false_true holding 2 entries; CORRID with a
    data_type of UINT64, INT64, UINT32, INT32 or STRING and no *_false_true; the oldest
    strategy's preferred sizes in 1..max_batch_size.

    Why it matters: the server refuses the configuration.

    Example: two control inputs both of kind CONTROL_SEQUENCE_READY → keep one.

    Fix: declare each control kind once, on its own tensor, with `[ 0, 1 ]` false/true values.
    """
    config = model.effective
    if not config.HasField("sequence_batching"):
        return
    name = config.name
    tensors: set[str] = set()
    kinds: set[str] = set()
    for index, control_input in enumerate(config.sequence_batching.control_input):
        where = f"sequence_batching.control_input[{index}]"
        if not control_input.name:
            yield Hit(
                message="a sequence_batching control_input has no name",
                triton_message=f"sequence batching control tensor must have a name for {name}",
                fix="Name the control tensor as the model's input is named.",
                field=where,
            )
            continue
        if control_input.name in tensors:
            yield Hit(
                message=f"control tensor '{control_input.name}' is declared for more than one "
                "control kind",
                triton_message=f"sequence batching control tensor '{control_input.name}' is "
                f"specified for multiple control kinds for {name}",
                fix="Give each control kind its own tensor.",
                field=f"{where}.name",
            )
            continue
        tensors.add(control_input.name)
        for control in control_input.control:
            kind = enum_name(control, "kind", control.kind)
            if kind in kinds:
                yield Hit(
                    message=f"more than one control tensor of kind {kind}",
                    triton_message=f"sequence batching specifies multiple {kind} tensors for "
                    f"{name}",
                    fix=f"Keep one {kind} control.",
                    field=f"{where}.control",
                )
                continue
            kinds.add(kind)
            yield from _control_values(control, kind, name, where)
    yield from _oldest_strategy(config)


def _control_values(control: Any, kind: str, name: str, where: str) -> Iterator[Hit]:
    given = _false_true_fields(control)
    if kind == "CONTROL_SEQUENCE_CORRID":
        if given:
            yield Hit(
                message="CONTROL_SEQUENCE_CORRID takes a data_type, not false/true values",
                triton_message="sequence batching must not specify either 'int32_false_true', "
                "'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for " + name,
                fix="Remove the *_false_true values; set data_type (e.g. TYPE_UINT64).",
                field=f"{where}.control",
            )
        elif enum_name(control, "data_type", control.data_type) not in (
            "TYPE_UINT64",
            "TYPE_INT64",
            "TYPE_UINT32",
            "TYPE_INT32",
            "TYPE_STRING",
        ):
            yield Hit(
                message="CONTROL_SEQUENCE_CORRID has an unsupported data_type",
                triton_message=f"unexpected data type for control CONTROL_SEQUENCE_CORRID for "
                f"{name}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, "
                "TYPE_INT32 and TYPE_STRING",
                fix="Use data_type: TYPE_UINT64 (or INT64, UINT32, INT32, STRING).",
                field=f"{where}.control",
            )
        return
    if kind not in ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY"):
        return
    if not given:
        text = (
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
            f"'bool_false_true' for {kind} for {name}"
        )
    elif len(given) > 1:
        text = (
            "sequence batching specifies more than one from 'int32_false_true', "
            f"'fp32_false_true' and 'bool_false_true' for {kind} for {name}"
        )
    elif len(getattr(control, given[0])) != 2:
        text = (
            f"sequence batching control '{given[0]}' must have exactly 2 entries for "
            f"{kind} for {name}"
        )
    else:
        return
    yield Hit(
        message=f"{kind} control values are malformed",
        triton_message=text,
        fix="Give exactly one of int32_false_true / fp32_false_true / bool_false_true, "
        "with two values: [ 0, 1 ].",
        field=f"{where}.control",
    )


def _oldest_strategy(config: Any) -> Iterator[Hit]:
    batching = config.sequence_batching
    if batching.WhichOneof("strategy_choice") == "oldest":
        for size in batching.oldest.preferred_batch_size:
            if size < 1:
                text = "sequence batching preferred batch size must be positive"
            elif size > config.max_batch_size:
                text = "sequence batching preferred batch size must be <= max batch size"
            else:
                continue
            yield Hit(
                message=f"oldest-strategy preferred_batch_size {size} is outside "
                f"1..{config.max_batch_size}",
                triton_message=f"{text} for {config.name}",
                fix="Keep preferred sizes within 1..max_batch_size.",
                field="sequence_batching.oldest.preferred_batch_size",
            )
    elif batching.WhichOneof("strategy_choice") == "direct":
        utilization = batching.direct.minimum_slot_utilization
        if utilization and not 0.0 < utilization <= 1.0:
            yield Hit(
                message=f"minimum_slot_utilization {utilization} is outside (0, 1]",
                triton_message="sequence batching minimum slot utilization must be in range "
                f"(0.0, 1.0] for {config.name}",
                fix="Use a value in (0, 1].",
                field="sequence_batching.direct.minimum_slot_utilization",
            )


@rule(
    "TD224",
    "batching-without-dynamic-batcher",
    "warning",
    "Batching model without dynamic_batching",
    when=("batching",),
)
def batching_without_dynamic_batcher(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a model with `max_batch_size > 1` and neither `dynamic_batching` nor
    `sequence_batching` (ensembles and decoupled models, such as streaming orchestrators,
    excluded).

    Why it matters: the default scheduler never merges requests, so every execution runs
    the batch a single client sent — usually 1 — and the GPU idles between tiny batches.
    Backend auto-complete adds `dynamic_batching {}` only for ONNX and TensorRT models whose
    config leaves it out and only when auto-complete is on.

    Example: `max_batch_size: 32` alone → add
    `dynamic_batching { max_queue_delay_microseconds: 100 }`.

    Fix: add `dynamic_batching { }` with a small max_queue_delay_microseconds.
    """
    config = model.effective
    if (
        config.max_batch_size > 1
        and not is_ensemble(config)
        and not config.model_transaction_policy.decoupled
        and config.WhichOneof("scheduling_choice") is None
        and not _autocomplete_adds_batcher(model)
    ):
        yield Hit(
            message=f"max_batch_size is {config.max_batch_size} but no dynamic_batching: "
            "requests are executed in the batches clients send, never merged",
            fix="dynamic_batching { max_queue_delay_microseconds: 100 }",
            field="max_batch_size",
            evidence={"max_batch_size": config.max_batch_size},
        )


def _autocomplete_adds_batcher(model: ModelView) -> bool:
    return not model.options.disable_auto_complete_config and model.effective.backend in (
        "onnxruntime",
        "tensorrt",
    )


@rule("TD225", "zero-queue-delay", "warning", "Preferred batch sizes with no queue delay",
      when=("dynamic_batching",))
def zero_queue_delay(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `dynamic_batching` whose `preferred_batch_size` lists sizes other than
    max_batch_size while `max_queue_delay_microseconds` is 0 (the default).

    Why it matters: with no delay the batcher never waits for a preferred size to fill: it
    executes whatever is queued the moment an instance is free, so the preferred sizes
    rarely happen under moderate load.

    Example: `preferred_batch_size: [ 4, 8 ]` alone → add `max_queue_delay_microseconds: 100`.

    Fix: set max_queue_delay_microseconds to a latency you can afford (100-1000 µs is common).
    """
    config = model.effective
    if (
        not config.HasField("dynamic_batching")
        or config.dynamic_batching.max_queue_delay_microseconds
    ):
        return
    written = list(model.raw.dynamic_batching.preferred_batch_size)
    if written and any(size != config.max_batch_size for size in written):
        yield Hit(
            message=f"preferred_batch_size {written} with max_queue_delay_microseconds 0: the "
            "batcher will not wait for those sizes to fill",
            fix="dynamic_batching { ... max_queue_delay_microseconds: 100 }",
            field="dynamic_batching.preferred_batch_size",
        )


@rule(
    "TD226", "dynamic-batching-no-batch", "warning",
    "dynamic_batching on a model that cannot batch", when=("dynamic_batching",),
)
def dynamic_batching_no_batch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `dynamic_batching` on a model with `max_batch_size: 0`.

    Why it matters: a non-batching model executes one request at a time; the dynamic batcher
    only adds queueing.

    Example: `max_batch_size: 0` + `dynamic_batching { }` → set max_batch_size (if the model
    has a batch dimension) or remove dynamic_batching.

    Fix: set `max_batch_size` > 0 with dims excluding the batch dimension, or remove
    `dynamic_batching`.
    """
    config = model.effective
    if (
        config.HasField("dynamic_batching")
        and config.max_batch_size == 0
        and not config.dynamic_batching.preferred_batch_size
    ):
        yield Hit(
            message="dynamic_batching is set but max_batch_size is 0: nothing can be batched",
            fix="Set max_batch_size > 0 (dims without the batch dimension), or remove "
            "dynamic_batching.",
            field="dynamic_batching",
        )
