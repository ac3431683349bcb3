"""TD41x: an ensemble against the models its steps name (the server checks these once the
composing models are loaded)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble, names_text, type_name
from triton_doctor.triton.repository_model import ModelView, RepositoryView


def ensembles(repository: RepositoryView) -> Iterator[ModelView]:
    for model in repository.models:
        if model.state != "broken" and not model.dir.unreadable:
            config = model.effective
            if is_ensemble(config) and config.HasField("ensemble_scheduling"):
                yield model


#: Unmapped inputs listed per step. The server stops at the first; listing all would be steps
#: times inputs findings (100,000 steps calling a model of 100,000 inputs: 10^10).
MAX_LISTED = 64


@dataclass
class _StepModel:
    """A step model's tensors, gathered once for all the steps that call it, so that a step
    costs the size of its own maps rather than the size of the model."""

    inputs: dict[str, Any]
    outputs: set[str]
    #: Inputs that are not optional, in declaration order.
    required: list[str]
    types: dict[str, int]
    #: The fix every finding about a step calling this model gives.
    fix: str


def _step_model(target: ModelView, known: dict[str, _StepModel]) -> _StepModel:
    if target.name not in known:
        config = target.effective
        inputs = {t.name: t for t in config.input}
        outputs = {t.name for t in config.output}
        known[target.name] = _StepModel(
            inputs=inputs,
            outputs=outputs,
            required=[name for name, tensor in inputs.items() if not tensor.optional],
            types={t.name: t.data_type for t in [*config.input, *config.output]},
            fix=f"{config.name} has inputs {names_text(list(inputs))} and outputs "
            f"{names_text(sorted(outputs))}; map those names.",
        )
    return known[target.name]


def declares_io(model: ModelView) -> bool:
    """Whether the step model's tensors are known: its config lists them, or (without a
    config.pbtxt) the backend's auto-complete was followed exactly from the model file or
    model.py."""
    config = model.effective
    if not (config.input and config.output):
        return False
    if model.state == "parsed":
        return True
    if model.state != "absent":
        return False
    return config.backend != "python" or model.auto_complete_exact is True


@rule(
    "TD411",
    "ensemble-missing-model",
    "error",
    "Ensemble step names a model that is not there",
    scope="repository",
    server_says=("contains models that are not available or ambiguous",),
)
def ensemble_missing_model(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: every `model_name` in an ensemble's steps is a model directory of the
    repository.

    Why it matters: the server refuses the ensemble ("contains models that are not available
    or ambiguous").

    Example: `model_name: "preprocessing"` with the directory named `preprocess/` → use
    `model_name: "preprocess"`.

    Fix: name the step models exactly as their directories, and deploy them together.
    """
    for model in ensembles(repository):
        steps = model.effective.ensemble_scheduling.step
        missing = sorted({s.model_name for s in steps if s.model_name} - set(repository.by_name))
        if missing:
            yield Hit(
                message=f"steps name models that are not in the repository: {', '.join(missing)}",
                triton_message=f"ensemble {model.effective.name} contains models that are not "
                f"available or ambiguous: {', '.join(missing)}",
                fix="Add the models to the repository, or correct the step's model_name "
                f"(models here: {', '.join(sorted(repository.by_name)[:8])}).",
                model=model.name,
                path=model.config_path,
                line=model.locate("ensemble_scheduling"),
            )


@rule(
    "TD412",
    "ensemble-step-mismatch",
    "error",
    "Ensemble step does not fit the model it calls",
    scope="repository",
    server_says=("in ensemble", "is mapping to non-existing input",
                 "is not mapped to any ensemble tensors", "is mapped from non-existing output",
                 "which only allows maximum batch size to be"),
)
def ensemble_step_mismatch(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: for each ensemble step whose model declares its inputs and outputs:
    `input_map` keys are inputs of that model, every input of that model is mapped,
    `output_map` keys are its outputs, and the model's max_batch_size (when not 0) is at
    least the ensemble's.

    Why it matters: the server refuses the ensemble when it loads it.

    Example: `input_map { key: "INPUT" value: "RAW" }` for a model whose input is `INPUT0`
    → `key: "INPUT0"`.

    Fix: use the step model's own tensor names as keys (`value` is the ensemble tensor).
    """
    known: dict[str, _StepModel] = {}
    for model in ensembles(repository):
        ensemble = model.effective
        for index, step in enumerate(ensemble.ensemble_scheduling.step):
            target = repository.by_name.get(step.model_name)
            if target is None or not declares_io(target):
                continue
            yield from _step_hits(model, index, step, target, _step_model(target, known))


def _step_hits(model: ModelView, index: int, step, target: ModelView,  # type: ignore[no-untyped-def]
               tensors: _StepModel) -> Iterator[Hit]:
    ensemble, config = model.effective, target.effective
    name, step_model = ensemble.name, config.name
    where = f"ensemble_scheduling.step[{index}]"
    inputs, outputs = tensors.inputs, tensors.outputs
    texts: list[tuple[str, str]] = []
    if config.max_batch_size != 0 and config.max_batch_size < ensemble.max_batch_size:
        texts.append(
            (
                f"ensemble {name} allows maximum batch size {ensemble.max_batch_size}, but "
                f"it contains model {step_model} which only allows maximum batch size to be "
                f"{config.max_batch_size}",
                where,
            )
        )
    for key, tensor in sorted(step.input_map.items()):
        if key not in inputs:
            texts.append(
                (
                    f"in ensemble {name}, ensemble tensor {tensor} is mapping to "
                    f"non-existing input {key} in model {step_model}",
                    f"{where}.input_map",
                )
            )
    unmapped, unlisted = _unmapped(step.input_map, tensors)
    for input_name in unmapped:
        texts.append(
            (
                f"in ensemble {name}, input {input_name} in model {step_model} is not "
                "mapped to any ensemble tensors",
                f"{where}.input_map",
            )
        )
    for key, tensor in sorted(step.output_map.items()):
        if key not in outputs:
            texts.append(
                (
                    f"in ensemble {name}, ensemble tensor {tensor} is mapped from "
                    f"non-existing output {key} in model {step_model}",
                    f"{where}.output_map",
                )
            )
    for text, field in texts:
        yield Hit(
            message=f"step {index} ({step_model}): {text}",
            triton_message=text,
            fix=tensors.fix,
            model=model.name,
            path=model.config_path,
            line=model.locate(field),
            field=field,
        )
    if unlisted:
        yield Hit(
            message=f"step {index} ({step_model}): {unlisted:,} more inputs of model "
            f"{step_model} are not mapped to any ensemble tensors (the first {MAX_LISTED} "
            "are listed)",
            fix=tensors.fix,
            model=model.name,
            path=model.config_path,
            line=model.locate(f"{where}.input_map"),
            field=f"{where}.input_map",
        )


def _unmapped(input_map: Any, tensors: _StepModel) -> tuple[list[str], int]:
    """The first MAX_LISTED required inputs ``input_map`` leaves out, and how many more it
    does. A map of k keys covers at most k of them, so the first k + MAX_LISTED required
    inputs hold every one listed: the cost is the map's size, not the model's."""
    window = tensors.required[: len(input_map) + MAX_LISTED]
    listed = [name for name in window if name not in input_map][:MAX_LISTED]
    mapped = sum(1 for key in input_map if key in tensors.inputs
                 and not tensors.inputs[key].optional)
    return listed, len(tensors.required) - mapped - len(listed)


@rule(
    "TD413",
    "ensemble-version-missing",
    "error",
    "Ensemble step pins a version that is not loaded",
    scope="repository",
    server_says=("' whose required version ",),
)
def ensemble_version_missing(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a step's `model_version` (other than -1, "latest") is a version the step
    model's version policy loads from its directory.

    Why it matters: the server refuses the ensemble ("whose required version ... is not
    loaded").

    Example: `model_version: 2` while the model has only `1/` → `model_version: -1`.

    Fix: pin a version that exists and that the model's version_policy loads, or use -1.
    """
    for model in ensembles(repository):
        for index, step in enumerate(model.effective.ensemble_scheduling.step):
            target = repository.by_name.get(step.model_name)
            if target is None or target.state == "broken" or step.model_version < 0:
                continue
            if step.model_version not in target.loaded_versions:
                loaded = ", ".join(map(str, target.loaded_versions)) or "none"
                yield Hit(
                    message=f"step {index} pins {step.model_name} version {step.model_version}; "
                    f"the versions it loads: {loaded}",
                    triton_message=f"ensemble '{model.effective.name}' depends on "
                    f"'{step.model_name}' whose required version {step.model_version} is not "
                    "loaded",
                    fix="Use model_version: -1, or add that version (and a version_policy that "
                    "loads it).",
                    model=model.name,
                    path=model.config_path,
                    line=model.locate(f"ensemble_scheduling.step[{index}].model_version"),
                    field=f"ensemble_scheduling.step[{index}].model_version",
                )


@rule("TD414", "ensemble-cycle", "error", "Ensembles call each other in a loop", scope="repository",
      server_says=("circular dependency between ensembles",))
def ensemble_cycle(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: ensembles whose steps lead, through other ensembles, back to themselves.

    Why it matters: the server refuses every ensemble in the loop ("circular dependency
    between ensembles").

    Example: `a` has a step calling `b`, and `b` a step calling `a` → break the loop.

    Fix: make the data flow a chain: no ensemble may (indirectly) call itself.
    """
    calls = {
        model.name: [s.model_name for s in model.effective.ensemble_scheduling.step]
        for model in ensembles(repository)
    }
    for start in sorted(calls):
        last = _cycle_end(start, calls)
        if last is not None:
            model = repository.by_name[start]
            yield Hit(
                message=f"'{start}' reaches itself through its steps (last hop: '{last}')",
                triton_message=f"circular dependency between ensembles: {start} -> ... -> "
                f"{last} -> {start}",
                fix="Remove the step that calls back into the loop.",
                model=start,
                path=model.config_path,
                line=model.locate("ensemble_scheduling"),
            )


def _cycle_end(start: str, calls: dict[str, list[str]]) -> str | None:
    """The ensemble whose step calls ``start`` again, if ``start`` lies on a loop."""
    stack, seen = [start], set()
    while stack:
        current = stack.pop()
        for callee in calls.get(current, []):
            if callee == start:
                return current
            if callee in calls and callee not in seen:
                seen.add(callee)
                stack.append(callee)
    return None


@rule(
    "TD415",
    "ensemble-dtype-mismatch",
    "error",
    "Ensemble tensor with two data types",
    scope="repository",
    server_says=(": inconsistent data type: ",),
)
def ensemble_dtype_mismatch(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each ensemble tensor has one data type across the ensemble's own inputs
    and outputs and the step models' tensors it is mapped to (step models that declare their
    tensors only).

    Why it matters: the server refuses the ensemble ("inconsistent data type").

    Example: ensemble input `data` TYPE_FP32 mapped to a step input of TYPE_INT32 → make
    them agree (or add a casting step).

    Fix: declare the ensemble tensor with the type the step models use.
    """
    known: dict[str, _StepModel] = {}
    for model in ensembles(repository):
        ensemble = model.effective
        seen: dict[str, tuple[int, str]] = {}
        sources: list[tuple[str, int, str]] = [
            (t.name, t.data_type, ensemble.name) for t in ensemble.input
        ]
        for step in ensemble.ensemble_scheduling.step:
            target = repository.by_name.get(step.model_name)
            if target is None or not declares_io(target):
                continue
            types = _step_model(target, known).types
            for key, tensor in [*step.input_map.items(), *step.output_map.items()]:
                if key in types:
                    sources.append((tensor, types[key], target.effective.name))
        sources += [(t.name, t.data_type, ensemble.name) for t in ensemble.output]
        for tensor, dtype, origin in sources:
            if not dtype:
                continue
            first = seen.setdefault(tensor, (dtype, origin))
            if first[0] != dtype:
                text = (
                    f"in ensemble {ensemble.name}, ensemble tensor {tensor}: inconsistent "
                    f"data type: {type_name(first[0])} is inferred from model {first[1]} "
                    f"while {type_name(dtype)} is inferred from model {origin}"
                )
                yield Hit(
                    message=text,
                    triton_message=text,
                    fix=f"Give '{tensor}' one data type everywhere it is used.",
                    model=model.name,
                    path=model.config_path,
                    line=model.locate("ensemble_scheduling"),
                )
                seen[tensor] = (dtype, origin)
