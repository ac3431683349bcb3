"""TD40x: an ensemble's own scheduling block, as the server checks it when it reads the config."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.records import record
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble
from triton_doctor.triton.repository_model import ModelView, RepositoryView


def _step_problems(config: Any) -> Iterator[tuple[str, str]]:
    """(triton message, field) for the first structural problem of each kind, in core's order."""
    name = config.name
    if config.instance_group:
        yield f"instance group should not be specified for ensemble '{name}'", "instance_group"
    if config.HasField("optimization"):
        yield f"optimization should not be specified for ensemble '{name}'", "optimization"
    steps = config.ensemble_scheduling.step
    if not steps:
        yield f"must specify 'step' for ensemble '{name}'", "ensemble_scheduling"
        return
    produced: set[str] = set()
    for index, step in enumerate(steps):
        where = f"ensemble_scheduling.step[{index}]"
        for field in ("model_name", "input_map", "output_map"):
            if not getattr(step, field):
                yield f"must specify '{field}' in step {index} of ensemble '{name}'", where
        for tensor in step.output_map.values():
            if tensor in produced:
                yield (
                    (
                        f"ensemble tensor '{tensor}' can appear in an output map only once for "
                        f"ensemble '{name}' step {index}"
                    ),
                    f"{where}.output_map",
                )
            produced.add(tensor)


@record
class _Flow:
    """An ensemble's tensors as its steps connect them."""

    steps: list[Any]
    #: Tensors some step reads.
    consumed: set[str]
    #: Tensors some step writes, with the index of that step.
    produced: dict[str, int]
    #: The ensemble's inputs and every tensor the steps compute from them.
    ready: set[str]

    @property
    def tensors(self) -> set[str]:
        return self.consumed | set(self.produced)


def _flow_problems(config: Any) -> Iterator[tuple[str, str]]:
    """Data-flow checks: inputs used, outputs written, no dangling intermediate tensors."""
    steps = list(config.ensemble_scheduling.step)
    flow = _Flow(
        steps=steps,
        consumed={t for s in steps for t in s.input_map.values()},
        produced={t: i for i, s in enumerate(steps) for t in s.output_map.values()},
        ready=_reachable(steps, {t.name for t in config.input}),
    )
    yield from _unused_inputs(config, flow)
    yield from _unwritten_outputs(config, flow)
    yield from _dangling_tensors(config, flow)


def _unused_inputs(config: Any, flow: _Flow) -> Iterator[tuple[str, str]]:
    tensors = flow.tensors
    for tensor in config.input:
        if tensor.name not in tensors:
            yield f"ensemble input '{tensor.name}' for ensemble {config.name}' is not used", "input"


def _unwritten_outputs(config: Any, flow: _Flow) -> Iterator[tuple[str, str]]:
    """Outputs no step touches, and outputs not computed from the inputs (naming the first
    tensor on the way back that nothing produces)."""
    tensors = flow.tensors
    walked: dict[str, str | None] = {}
    for tensor in config.output:
        if tensor.name not in tensors:
            yield (
                f"ensemble output '{tensor.name}' for ensemble {config.name}' is not used",
                "output",
            )
        elif tensor.name not in flow.ready:
            culprit = _first_unconnected(tensor.name, flow.steps, flow.produced, flow.ready, walked)
            suffix = (
                f": at least one of its depending tensors, '{culprit}', is not connected"
                if culprit and culprit != tensor.name
                else ""
            )
            yield (
                f"output '{tensor.name}' for ensemble '{config.name}' is not written{suffix}",
                "output",
            )


def _dangling_tensors(config: Any, flow: _Flow) -> Iterator[tuple[str, str]]:
    """Intermediate tensors not computed from the inputs, or that no step reads."""
    boundary = {t.name for t in config.input} | {t.name for t in config.output}
    for tensor in sorted(flow.tensors - boundary):
        if tensor not in flow.ready or tensor not in flow.consumed:
            yield (
                f"ensemble tensor '{tensor}' is unused in ensemble '{config.name}'",
                "ensemble_scheduling",
            )


def _reachable(steps: list[Any], ready: set[str]) -> set[str]:
    """``ready`` and every tensor the steps produce from it. Linear in the maps: a fixpoint
    over the step list takes one pass per step of a chain listed backwards (quadratic)."""
    ready = set(ready)
    missing: list[int] = []
    consumers: dict[str, list[int]] = {}
    for index, step in enumerate(steps):
        needs = set(step.input_map.values()) - ready
        missing.append(len(needs))
        for tensor in needs:
            consumers.setdefault(tensor, []).append(index)
    runnable = [index for index, count in enumerate(missing) if count == 0]
    while runnable:
        for tensor in steps[runnable.pop()].output_map.values():
            if tensor in ready:
                continue
            ready.add(tensor)
            for index in consumers.get(tensor, ()):
                missing[index] -= 1
                if missing[index] == 0:
                    runnable.append(index)
    return ready


def _first_unconnected(
    tensor: str, steps: list[Any], produced: dict[str, int], ready: set[str],
    walked: dict[str, str | None],
) -> str | None:
    """Walk back through not-ready producers to a tensor nothing produces. ``walked`` keeps
    the answer for every tensor a walk passed, so walks from many outputs stay linear."""
    path: dict[str, None] = {}  # ordered, and a set
    answer = None
    while tensor not in path:  # a loop back onto the path: no answer
        if tensor in walked:
            answer = walked[tensor]
            break
        path[tensor] = None
        if tensor not in produced:
            answer = tensor
            break
        pending = [t for t in steps[produced[tensor]].input_map.values() if t not in ready]
        if not pending:
            break
        tensor = pending[0]
    walked.update(dict.fromkeys(path, answer))
    return answer


@rule("TD401", "ensemble-structure", "error", "Ensemble scheduling block is inconsistent",
      server_says=("instance group should not be specified for ensemble '",
                   "optimization should not be specified for ensemble '",
                   "must specify 'step' for ensemble '",
                   "can appear in an output map only once for ensemble '", "ensemble input '",
                   "ensemble output '", "' is not written", "' is unused in ensemble '"),
                   when=("ensemble",))
def ensemble_structure(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: an ensemble's own config as the server checks it on reading: no
    instance_group or optimization; at least one step, each with model_name, input_map and
    output_map; each ensemble tensor produced once; every ensemble input consumed, every
    output written from the inputs, every intermediate tensor produced and consumed.

    Why it matters: the server refuses the ensemble.

    Example: an output map writing `temp` in two steps → give the second a new tensor name.

    Fix: wire every step's inputs from ensemble inputs or earlier steps' outputs, and every
    ensemble output from a step.
    """
    config = model.effective
    if not is_ensemble(config) or not config.HasField("ensemble_scheduling"):
        return
    structural = list(_step_problems(config))
    problems = structural or list(_flow_problems(config))
    for text, field in problems:
        yield Hit(
            message=text,
            triton_message=text,
            fix="Connect each step to tensors that earlier steps or the ensemble "
            "inputs provide; remove what the server says should not be there.",
            field=field,
        )
