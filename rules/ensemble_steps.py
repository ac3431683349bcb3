"""TD41x: an ensemble against the models its steps name (the server checks these once the
composing models are loaded)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.records import record
from triton_doctor.registry import rule
from triton_doctor.rules._common import dims_text, is_ensemble, names_text, type_name
from triton_doctor.triton.repository_model import (
    ModelView,
    RepositoryView,
    per_model,
    per_repository,
)


@per_repository
def ensembles(repository: RepositoryView) -> list[ModelView]:
    """The ensembles that declare their steps (found once for the rules that ask). Which
    models are ensembles is read from the config as written: no completion makes a model an
    ensemble, or one no longer, so no other model's auto-complete runs for this."""
    return [model for model in repository.models
            if model.state != "broken" and not model.dir.unreadable and is_ensemble(model.raw)
            and is_ensemble(model.effective) and model.effective.HasField("ensemble_scheduling")]


#: Unmapped inputs listed per step. The server stops at the first; listing all would be steps
#: times inputs findings (100,000 steps calling a model of 100,000 inputs: 10^10).
MAX_LISTED = 64


@record(frozen=True)
class _Node:
    """An ensemble tensor as one model declares it (core's TensorNode): the server checks
    every later declaration of the tensor against the first."""

    model: str
    data_type: int
    dims: tuple[int, ...]
    #: Whether the model batches; None when its backend's auto-complete decides from what was
    #: not read (ModelView.batches).
    batching: bool | None

    def full_dims(self, batching: bool) -> tuple[int, ...]:
        """The shape with the batch dimension (-1) in front, for a model that batches."""
        return (-1, *self.dims) if batching else self.dims

    @property
    def ways(self) -> tuple[bool, ...]:
        return (True, False) if self.batching is None else (self.batching,)

    @property
    def shape_text(self) -> str:
        """The shape as the server prints it (both ways when the batching is unknown)."""
        return " or ".join(dims_text(self.full_dims(way)) for way in self.ways)

    def fits(self, other: _Node) -> bool:
        """Core's shape check: the shapes match (-1 matching any size), or do with the batch
        dimension, so that a non-batching model may take [-1, 4] from a batching one's [4];
        a model whose batching is unknown fits if it does either way."""
        return _wildcard_equal(self.dims, other.dims) or any(
            _wildcard_equal(self.full_dims(mine), other.full_dims(theirs))
            for mine in self.ways for theirs in other.ways
        )


def _wildcard_equal(left: tuple[int, ...], right: tuple[int, ...]) -> bool:
    return len(left) == len(right) and all(
        a == b or -1 in (a, b) for a, b in zip(left, right, strict=True)
    )


@record
class _StepModel:
    """A step model's tensors, gathered once for all the steps that call it, so that a step
    costs the size of its own maps rather than the size of the model."""

    inputs: dict[str, Any]
    outputs: set[str]
    #: Inputs that are not optional, in declaration order.
    required: list[str]
    #: The inputs as declared (a name declared twice is met twice): the order in which the
    #: server meets a step's inputs.
    input_nodes: list[tuple[str, _Node]]
    #: The outputs by name, each name's declarations in order.
    output_nodes: dict[str, list[_Node]]
    #: The fix every finding about a step calling this model gives.
    fix: str


@per_model
def _step_model(target: ModelView) -> _StepModel:
    """The tensors of a model that ensemble steps call, worked out once per check."""
    config = target.effective
    inputs = {t.name: t for t in config.input}
    outputs = {t.name for t in config.output}
    batching = target.batches

    def node(tensor: Any) -> _Node:
        return _Node(config.name, tensor.data_type, tuple(tensor.dims), batching)

    return _StepModel(
        inputs=inputs,
        outputs=outputs,
        required=[name for name, tensor in inputs.items() if not tensor.optional],
        input_nodes=[(t.name, node(t)) for t in config.input],
        output_nodes=_by_name(config.output, node),
        fix=f"{config.name} has {_listed('inputs', list(inputs))} and "
        f"{_listed('outputs', sorted(outputs))}"
        + ("; map those names." if inputs or outputs else
           ": declare its tensors in its config.pbtxt."),
    )


def _by_name(tensors: Any, node: Callable[[Any], _Node]) -> dict[str, list[_Node]]:
    nodes: dict[str, list[_Node]] = {}
    for tensor in tensors:
        nodes.setdefault(tensor.name, []).append(node(tensor))
    return nodes


def _listed(kind: str, names: list[str]) -> str:
    return f"{kind} {names_text(names)}" if names else f"no {kind}"


def declares_io(model: ModelView) -> bool:
    """Whether the step model's tensors are known: those of the configuration it runs, as
    written or as its backend's auto-complete was followed from the model file (a Python
    model's: see _python_io_settled)."""
    config = model.effective
    if config.backend == "python":
        return _python_io_settled(model)
    return bool(config.input and config.output) and model.state in ("parsed", "absent")


def _python_io_settled(model: ModelView) -> bool:
    """Whether a Python model has exactly the tensors its configuration lists, even none:
    model.py is the module the stub imports, defines the model class, and its
    auto_complete_config (its own, not inherited) is absent or followed exactly."""
    source = model.python_source()
    return (model.state in ("parsed", "absent")
            and source is not None and source.has_model_class
            and not source.may_define_model_class and source.imported_instead is None
            and source.syntax_error is None and model.auto_complete_exact is not False)


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
        missing = sorted({s.model_name for s in steps
                          if s.model_name and s.model_name not in repository.by_name})
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
                 "which only allows maximum batch size to be",
                 "are mapped to the same ensemble tensor"),
)
def ensemble_step_mismatch(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: for each ensemble step whose model declares its inputs and outputs:
    `input_map` keys are inputs of that model, every input of that model is mapped,
    `output_map` keys are its outputs (each declared once), and the model's max_batch_size
    (when not 0) is at least the ensemble's.

    Why it matters: the server refuses the ensemble when it loads it.

    Example: `input_map { key: "INPUT" value: "RAW" }` for a model whose input is `INPUT0`
    → `key: "INPUT0"`.

    Fix: use the step model's own tensor names as keys (`value` is the ensemble tensor).
    """
    for model in ensembles(repository):
        ensemble = model.effective
        for index, step in enumerate(ensemble.ensemble_scheduling.step):
            target = repository.by_name.get(step.model_name)
            if target is None or not declares_io(target):
                continue
            yield from _step_hits(model, index, step, target, _step_model(target))


def _step_hits(model: ModelView, index: int, step, target: ModelView,  # type: ignore[no-untyped-def]
               tensors: _StepModel) -> Iterator[Hit]:
    ensemble, config = model.effective, target.effective
    name, step_model = ensemble.name, config.name
    where = f"ensemble_scheduling.step[{index}]"
    inputs, outputs = tensors.inputs, tensors.outputs
    texts: list[tuple[str, str]] = []
    if (target.max_batch_size_known and config.max_batch_size != 0
            and config.max_batch_size < ensemble.max_batch_size):
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
        if len(tensors.output_nodes.get(key, [])) > 1:
            texts.append(
                (
                    f"in ensemble {name}, multiple outputs in model {step_model} are mapped to "
                    f"the same ensemble tensor {tensor}",
                    f"{where}.output_map",
                )
            )
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
            if (target is None or target.state == "broken" or step.model_version < 0
                    or not target.loaded_versions):
                # A model with no version to load fails itself, and the server says the
                # ensemble depends on a model "which is not valid" (TD104 explains it).
                continue
            if step.model_version not in target.loaded_versions:
                loaded = ", ".join(map(str, target.loaded_versions))
                yield Hit(
                    message=f"step {index} pins {step.model_name} version {step.model_version}; "
                    f"the versions it loads: {loaded}",
                    triton_message=f"ensemble '{model.effective.name}' depends on "
                    f"'{step.model_name}' whose required version {step.model_version} is not "
                    "loaded.",
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


@record(frozen=True)
class _Conflict:
    """The first declaration of an ensemble tensor that disagrees with the tensor's first one,
    where the server meets it; ``shape`` says that the data types agree."""

    tensor: str
    first: _Node
    later: _Node
    field: str
    shape: bool


def _conflicts(model: ModelView, repository: RepositoryView) -> list[_Conflict]:
    """What TD415 and TD416 judge of one ensemble, worked out once per check for both."""
    memo = model.memo
    if _conflicts not in memo:
        memo[_conflicts] = list(_each_conflict(model, repository))
    return memo[_conflicts]  # type: ignore[no-any-return]


def _each_conflict(model: ModelView, repository: RepositoryView) -> Iterator[_Conflict]:
    """At most one conflict per ensemble tensor, in the server's order: the ensemble's inputs
    and outputs (their reshape, if any, as the shape), then each step's inputs in the step
    model's order and its outputs. A step model whose tensors are unknown may declare a tensor
    first; shapes against that unknown first are not judged (-1 makes the check
    intransitive), data types still are (equality is)."""
    ensemble = model.effective
    batching = ensemble.max_batch_size > 0
    first: dict[str, _Node] = {}
    for tensor in [*ensemble.input, *ensemble.output]:
        shape = tensor.reshape.shape if tensor.HasField("reshape") else tensor.dims
        node = _Node(ensemble.name, tensor.data_type, tuple(shape), batching)
        first.setdefault(tensor.name, node)
    unknown_first: set[str] = set()
    settled: set[str] = set()
    for index, step in enumerate(ensemble.ensemble_scheduling.step):
        target = repository.by_name.get(step.model_name)
        where = f"ensemble_scheduling.step[{index}]"
        if target is None or not declares_io(target):
            maps = [*step.input_map.values(), *step.output_map.values()]
            unknown_first.update(t for t in maps if t not in first)
            continue
        tensors = _step_model(target)
        met = [(step.input_map[name], node, f"{where}.input_map")
               for name, node in tensors.input_nodes if name in step.input_map]
        met += [
            (tensor, node, f"{where}.output_map")
            for key, tensor in step.output_map.items()
            for node in tensors.output_nodes.get(key, [])
        ]
        for tensor, node, mapped in met:
            earlier = first.setdefault(tensor, node)
            if earlier is node or tensor in settled:
                continue
            conflict = _conflict(tensor, earlier, node, mapped, tensor in unknown_first)
            if conflict is not None:
                settled.add(tensor)
                yield conflict


def _conflict(
    tensor: str, first: _Node, later: _Node, field: str, first_unknown: bool
) -> _Conflict | None:
    if first.data_type and later.data_type and first.data_type != later.data_type:
        return _Conflict(tensor, first, later, field, shape=False)
    if first_unknown or not (first.data_type and later.data_type) or first.fits(later):
        return None
    return _Conflict(tensor, first, later, field, shape=True)


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
    for model in ensembles(repository):
        ensemble = model.effective
        for conflict in _conflicts(model, repository):
            if conflict.shape:
                continue
            first, later = conflict.first, conflict.later
            text = (
                f"in ensemble {ensemble.name}, ensemble tensor {conflict.tensor}: inconsistent "
                f"data type: {type_name(first.data_type)} is inferred from model {first.model} "
                f"while {type_name(later.data_type)} is inferred from model {later.model}"
            )
            yield Hit(
                message=text,
                triton_message=text,
                fix=f"Give '{conflict.tensor}' one data type everywhere it is used.",
                model=model.name,
                path=model.config_path,
                line=model.locate("ensemble_scheduling"),
            )


@rule(
    "TD416",
    "ensemble-shape-mismatch",
    "error",
    "Ensemble tensor with two shapes",
    scope="repository",
    server_says=(": inconsistent shape: ",),
)
def ensemble_shape_mismatch(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each ensemble tensor has one shape across the ensemble's own inputs and
    outputs (their `reshape` when they have one) and the `dims` of the step models' tensors it
    is mapped to, as the server compares them: the batch dimension (-1) in front for a model
    whose max_batch_size is above 0, -1 matching any size, and the shapes equal either without
    or with the batch dimension. Step models are taken as the server runs them, auto-complete
    included (those that declare their tensors only); a step whose batching auto-complete
    decides from what is not read (a TensorRT engine, a computed or conditional
    `set_max_batch_size` in model.py) must fit neither way to be flagged.

    Why it matters: the server refuses the ensemble ("inconsistent shape").

    Example: `preprocess` writes `IMAGE` with `dims: [ 3, 224, 224 ]` into the ensemble tensor
    that `classifier` reads as `dims: [ 224, 224, 3 ]` → make the layouts agree (or add a
    transposing step).

    Fix: declare the tensor with the same shape in the ensemble and in every step that reads
    or writes it; a variable dimension is -1.
    """
    for model in ensembles(repository):
        ensemble = model.effective
        for conflict in _conflicts(model, repository):
            if not conflict.shape:
                continue
            first, later = conflict.first, conflict.later
            text = (
                f"in ensemble {ensemble.name}, ensemble tensor {conflict.tensor}: inconsistent "
                f"shape: {first.shape_text} is inferred from model {first.model} "
                f"while {later.shape_text} is inferred from model {later.model}"
            )
            certain = None not in (first.batching, later.batching)
            yield Hit(
                message=text,
                triton_message=text if certain else None,
                fix=f"Give '{conflict.tensor}' one shape in {first.model} and {later.model} "
                "(-1 for a dimension that varies; a model with max_batch_size above 0 adds "
                "the batch dimension itself).",
                model=model.name,
                path=model.config_path,
                line=model.locate(conflict.field),
                field=conflict.field,
            )


@rule(
    "TD417",
    "ensemble-decoupled-mix",
    "error",
    "Ensemble step joins tensors from different decoupled models",
    scope="repository",
    server_says=("receives inputs originated from different decoupled models",),
)
def ensemble_decoupled_mix(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: tensors that come out of a decoupled step model (`model_transaction_policy
    { decoupled: true }`) are combined, by a later step or among the ensemble's outputs, only
    with tensors that come out of the same decoupled step: every tensor carries the last
    decoupled model on its way from the ensemble's inputs, and what one step reads (or the
    ensemble returns) must carry the same one.

    Why it matters: a decoupled model sends any number of responses per request, so its
    outputs cannot be paired with other tensors; the server refuses the ensemble ("receives
    inputs originated from different decoupled models").

    Example: a step reads `TOKENS` from a decoupled `generate` step and `PROMPT` from the
    ensemble's inputs → pass `PROMPT` through `generate` as one of its outputs, and read it
    from there.

    Fix: route every tensor that a step reads (and every ensemble output) through the same
    decoupled model, or make the step model that joins them part of that model.
    """
    for model in ensembles(repository):
        flow = _decoupled_flow(model, repository)
        if flow is None:
            continue
        joined = flow.first_mix()
        if joined is not None:
            tensor, named = joined
            text = (
                f"in ensemble {model.effective.name}, step of model '{named}' receives "
                "inputs originated from different decoupled models"
            )
            what = f"'{tensor}' is computed" if tensor else "the outputs are computed"
            decoupled = sorted(
                {s.model_name for s, d in zip(model.effective.ensemble_scheduling.step,
                                              flow.decoupled, strict=True) if d}
            )
            yield Hit(
                message=f"{what} from tensors that come out of different decoupled models "
                f"(decoupled steps: {', '.join(decoupled)})",
                triton_message=text,
                fix="Pass the other tensors through the decoupled model too, so that "
                "everything one step reads comes out of the same decoupled model.",
                model=model.name,
                path=model.config_path,
                line=model.locate("ensemble_scheduling"),
            )


@record
class _DecoupledFlow:
    """An ensemble's steps as the decoupled walk sees them (core links each tensor a step
    writes to every tensor it reads; a step here stands for all the tensors it writes, so the
    walk costs the size of the maps, not their product)."""

    ensemble: str
    inputs: list[str]
    outputs: list[str]
    reads: list[list[str]]
    writes: list[list[str]]
    decoupled: list[bool]
    #: The model that declared each tensor first, the one the server's words name.
    declared_by: dict[str, str]

    def first_mix(self) -> tuple[str, str] | None:
        """Core's walk from the ensemble inputs: a tensor takes the label of what it is
        computed from, or a new one out of a decoupled step (one per step); the first step (or
        the ensemble's outputs, "" here) whose tensors carry different labels is refused:
        (tensor, model the server names)."""
        sink = len(self.reads)
        sources = [*self.reads, self.outputs]
        readers: dict[str, list[int]] = {}
        for user, tensors in enumerate(sources):
            for tensor in set(tensors):
                readers.setdefault(tensor, []).append(user)
        pending = [len(set(tensors)) for tensors in sources]
        label = dict.fromkeys(self.inputs, 0)
        count = 0
        queue = deque(label)
        while queue:
            for user in readers.get(queue.popleft(), ()):
                pending[user] -= 1
                if pending[user] or not (user == sink or self.writes[user]):
                    # Core checks the tensors a step writes: one that writes none is not met.
                    continue
                if len({label[t] for t in sources[user]}) > 1:
                    if user == sink:
                        return "", self.ensemble
                    return self.writes[user][0], self.declared_by[self.writes[user][0]]
                if user == sink:
                    continue
                if self.decoupled[user]:
                    count += 1
                written = count if self.decoupled[user] else label[sources[user][0]]
                for tensor in self.writes[user]:
                    if tensor not in label:
                        label[tensor] = written
                        queue.append(tensor)
        return None


def _decoupled_flow(model: ModelView, repository: RepositoryView) -> _DecoupledFlow | None:
    """The ensemble's steps, or None when no step model is decoupled, one is absent or
    unreadable (the server refuses for that first), or a tensor is written twice (TD401). A
    nested ensemble counts as not decoupled: a step missed as decoupled can hide a refusal,
    never invent one."""
    ensemble = model.effective
    steps = list(ensemble.ensemble_scheduling.step)
    decoupled: list[bool] = []
    for step in steps:
        target = repository.by_name.get(step.model_name)
        if target is None or target.state == "broken" or target.dir.unreadable:
            return None
        config = target.effective
        # An ensemble's own flag is what the server computes, not what its config says.
        decoupled.append(not is_ensemble(config) and config.model_transaction_policy.decoupled)
    if not any(decoupled):
        return None
    reads = [list(step.input_map.values()) for step in steps]
    writes = [list(step.output_map.values()) for step in steps]
    if sum(map(len, writes)) != len({t for tensors in writes for t in tensors}):
        return None
    declared_by = dict.fromkeys([t.name for t in [*ensemble.input, *ensemble.output]],
                                ensemble.name)
    for step, read, written in zip(steps, reads, writes, strict=True):
        for tensor in [*read, *written]:
            declared_by.setdefault(tensor, step.model_name)
    return _DecoupledFlow(
        ensemble.name, [t.name for t in ensemble.input], [t.name for t in ensemble.output],
        reads, writes, decoupled, declared_by,
    )
