"""TD23x: instance groups and rate-limiter resources."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import enum_name
from triton_doctor.triton import profiles
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: No single machine sold today exposes more GPUs than this to one process; an id at or
#: above it cannot be valid anywhere.
MAX_GPUS_PER_NODE = 16


def groups(config: Any) -> Iterator[tuple[int, str, Any]]:
    """(index, name as the server names it, group): unnamed groups become ``<model>_<index>``."""
    for index, group in enumerate(config.instance_group):
        yield index, group.name or f"{config.name}_{index}", group


def judged_groups(model: ModelView) -> Iterator[tuple[int, str, Any, str]]:
    """(index, name, group, kind as written) of the groups the server validates: resolved for
    the target machine where its GPU count is known (KIND_AUTO decided), else as written."""
    written = model.effective
    config = model.on_target if model.on_target is not None else written
    for index, name, group in groups(config):
        source = written.instance_group[index] if index < len(written.instance_group) else group
        yield index, name, group, enum_name(source, "kind", source.kind)


@rule("TD231", "instance-group-gpus", "error", "Instance group GPUs do not fit its kind",
      server_says=("but specifies one or more GPUs", "invalid or unsupported gpu id"))
def instance_group_gpus(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `gpus` only on groups that run on GPUs, and GPU ids the machine has.
    A group without a kind (KIND_AUTO) runs on GPUs only when the machine has every GPU it
    lists; otherwise the server makes it KIND_CPU, which takes no `gpus`. With the machine
    named (`--gpus N`, the settings file, or NVML on the server's machine) ids run 0..N-1;
    without, only ids no machine has (negative, or 16 and above) are judged.

    Why it matters: KIND_CPU or KIND_MODEL with `gpus` is refused at load; an id the server
    does not see is refused with "invalid or unsupported gpu id". GPU ids are renumbered by
    CUDA_VISIBLE_DEVICES and `docker --gpus`, so `gpus: [ 3 ]` fails in a container given
    one GPU, and `gpus: [ 0 ]` fails on a CPU-only server.

    Example: `{ kind: KIND_CPU gpus: [ 0 ] }` → `{ kind: KIND_CPU }`; `gpus: [ -1 ]` →
    `gpus: [ 0 ]`.

    Fix: remove `gpus` from CPU/model groups; list ids as the container sees them (0..N-1).
    """
    config = model.effective
    gpus = model.options.gpus
    for index, name, group, written in judged_groups(model):
        kind = enum_name(group, "kind", group.kind)
        where = f"instance_group[{index}].gpus"
        if not group.gpus:
            continue
        if kind == "KIND_AUTO":  # only on an unknown machine
            if all(_may_exist(gpu) for gpu in group.gpus):
                continue  # KIND_GPU where the machine has those GPUs, KIND_CPU elsewhere
            kind = "KIND_CPU"
        if kind in ("KIND_CPU", "KIND_MODEL"):
            yield Hit(
                message=_kind_message(name, kind, written, list(group.gpus), gpus),
                triton_message=f"instance group {name} of model {config.name} has kind {kind} "
                "but specifies one or more GPUs",
                fix="Remove gpus, or use kind: KIND_GPU."
                if written != "KIND_AUTO"
                else "List only GPUs the machine has, or use kind: KIND_GPU.",
                field=where,
            )
            continue
        bad = next((gpu for gpu in group.gpus
                    if not (gpu in range(gpus) if gpus is not None else _may_exist(gpu))), None)
        if bad is not None:
            yield Hit(
                message=f"instance group {name} names GPU {bad}, " + _missing_gpu(bad, gpus),
                triton_message=_invalid_gpu_words(name, config.name, bad, gpus,
                                                  profiles.min_compute_capability(
                                                      repository.release)),
                fix="List GPU ids as the server's container sees them, 0..N-1"
                + ("" if gpus is None else f" (here {_ids(gpus)})") + ".",
                field=where,
                evidence={"gpu_id": bad},
            )


def _invalid_gpu_words(group: str, model: str, gpu: int, gpus: int | None,
                       minimum: str | None) -> str:
    """The server's refusal, as far as it is known: the list of GPUs it ends with needs the
    machine, the compute capability it names needs the release."""
    words = (f"instance group {group} of model {model} specifies invalid or unsupported gpu id "
             f"{gpu}. GPUs with at least the minimum required CUDA compute compatibility of ")
    if minimum is None:
        return words.rstrip()
    return words + f"{minimum} are:" + ("" if gpus is None else " " + ", ".join(
        map(str, range(gpus))))


def _may_exist(gpu: int) -> bool:
    """Whether some machine has GPU id ``gpu``."""
    return 0 <= gpu < MAX_GPUS_PER_NODE


def _ids(gpus: int) -> str:
    """The GPUs a machine with ``gpus`` GPUs has, in words."""
    return "no GPUs" if gpus == 0 else "GPU 0" if gpus == 1 else f"GPUs 0..{gpus - 1}"


def _missing_gpu(gpu: int, gpus: int | None) -> str:
    if gpus is not None:
        return f"which the target machine does not have (it has {_ids(gpus)})"
    if gpu < 0:
        return "which no machine has (ids start at 0)"
    return f"which no machine has (ids run 0..N-1; no machine exposes {MAX_GPUS_PER_NODE} or more)"


def _kind_message(name: str, kind: str, written: str, listed: list[int],
                  gpus: int | None) -> str:
    if written == kind:
        return f"instance group {name} is {kind} but lists gpus {listed}"
    machine = "no machine has" if gpus is None else f"the target machine has {_ids(gpus)}"
    return (f"instance group {name} has no kind and lists gpus {listed}; {machine}, so the "
            f"server makes it {kind}, which takes no gpus")


@rule("TD236", "gpu-group-without-gpus", "error", "KIND_GPU instances on a machine without GPUs",
      server_says=("has kind KIND_GPU but no GPUs are available",
                   "has kind KIND_GPU but server does not support GPUs"))
def gpu_group_without_gpus(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `kind: KIND_GPU` groups on a target machine named as having no GPUs
    (`--gpus 0`, or `gpus = 0` in the settings file). Silent when the machine is unknown.

    Why it matters: a CPU-only server refuses the model at load. A group without a kind is
    fine there: the server makes it KIND_CPU.

    Example: `instance_group [ { kind: KIND_GPU } ]` on a CPU-only server →
    `instance_group [ { kind: KIND_CPU } ]`, or no kind at all.

    Fix: use KIND_CPU (or leave the kind out, so that the server picks GPUs where there are
    some), or serve the model on a machine with a GPU.
    """
    if model.options.gpus != 0:
        return
    config = model.effective
    for index, name, group, _ in judged_groups(model):
        if enum_name(group, "kind", group.kind) == "KIND_GPU" and not group.gpus:
            yield Hit(
                message=f"instance group {name} is KIND_GPU, and the target machine has no GPUs",
                triton_message=f"instance group {name} of model {config.name} has kind "
                "KIND_GPU but no GPUs are available",
                fix="Use kind: KIND_CPU, or leave the kind out to run on GPUs where there are "
                "some.",
                field=f"instance_group[{index}].kind",
            )


@rule("TD232", "instance-group-profile", "error", "TensorRT profile set on a non-TensorRT model",
      server_says=("specifies profile field which is only supported for TensorRT models",
                   "profile name must not be empty",
                   "The field should contain the string representation of a non-negative integer."))
def instance_group_profile(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `instance_group.profile` only on TensorRT models, and each profile a
    non-negative integer written as a string.

    Why it matters: the server refuses the configuration.

    Example: `profile: [ "0" ]` on an ONNX model → remove it.

    Fix: remove `profile` unless the model is a TensorRT plan with optimization profiles.
    """
    config = model.effective
    for index, name, group in groups(config):
        if not group.profile:
            continue
        where = f"instance_group[{index}].profile"
        if config.platform != "tensorrt_plan":
            yield Hit(
                message=f"instance group {name} selects TensorRT profiles on platform "
                f"'{config.platform or config.backend}'",
                triton_message=f"instance group {name} of model {config.name} and platform "
                f"{config.platform}specifies profile field which is only supported for "
                "TensorRT models",
                fix="Remove profile.",
                field=where,
            )
            continue
        for profile in group.profile:
            text = _profile_problem(profile, name, config)
            if text:
                yield Hit(
                    message=f"instance group {name} has profile {profile!r}, not a "
                    "non-negative integer",
                    triton_message=text,
                    fix='Write profile indexes as strings of digits: profile: [ "0" ].',
                    field=where,
                )


_STOI = re.compile(r"^\s*([+-]?\d+)")


def _profile_problem(profile: str, group: str, config: Any) -> str | None:
    """The server reads a profile with ``std::stoi``: a leading integer, rest ignored."""
    if not profile:
        return "profile name must not be empty"
    match = _STOI.match(profile)
    if match is None:
        return f"unable to parse '{profile}': stoi"
    if int(match.group(1)) < 0:
        return (
            f"instance group {group} of model {config.name} and platform {config.platform} "
            f"specifies invalid profile {profile}. The field should contain the string "
            "representation of a non-negative integer."
        )
    return None


@rule(
    "TD233", "rate-limiter-resource", "warning", "Rate-limiter resource both global and per-device",
    server_says=("is present as both global and device-specific resource in the model "
                 "configuration",),
)
def rate_limiter_resource(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a rate-limiter resource name declared both `global: true` and per-device
    in the same model.

    Why it matters: with rate limiting on (`--rate-limit=execution_count`) the server
    refuses the model; with the default `--rate-limit=off` the resources are ignored, so the
    model loads and fails only once someone turns rate limiting on.

    Example: resources `R1` global in one group and `R1` per-device in another → rename one.

    Fix: declare each resource either global or per-device.
    """
    config = model.effective
    scopes: dict[str, set[bool]] = {}
    for _, _, group in groups(config):
        for resource in group.rate_limiter.resources:
            is_global = getattr(resource, "global")  # a Python keyword, so no attribute syntax
            scopes.setdefault(resource.name, set()).add(is_global)
    for name, kinds in sorted(scopes.items()):
        if len(kinds) == 2:
            yield Hit(
                message=f"rate-limiter resource '{name}' is declared global and per-device; the "
                "server refuses this when it runs with --rate-limit=execution_count",
                triton_message=f'Resource "{name}" is present as both global and '
                "device-specific resource in the model configuration.",
                fix="Make the resource global everywhere or per-device everywhere.",
                field="instance_group",
            )


@rule("TD235", "tensorrt-on-cpu", "error", "TensorRT model with CPU instances",
      server_says=("supports only GPU device",), when=("backend:tensorrt",))
def tensorrt_on_cpu(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `instance_group { kind: KIND_CPU }` on a TensorRT model.

    Why it matters: TensorRT engines run on GPUs only; the backend refuses the model.

    Example: `kind: KIND_CPU` → `kind: KIND_GPU`.

    Fix: use KIND_GPU, or serve an ONNX export of the model on CPU.
    """
    config = model.effective
    if config.backend != "tensorrt":
        return
    # Written kinds only: on a machine without GPUs a kind-less group also becomes KIND_CPU,
    # but the backend's auto-complete then fails first, asking CUDA for a device.
    for index, name, group in groups(config):
        if enum_name(group, "kind", group.kind) == "KIND_CPU":
            yield Hit(
                message=f"instance group {name} runs the TensorRT engine on KIND_CPU",
                triton_message=f"unable to load model '{config.name}', TensorRT backend supports "
                "only GPU device",
                fix="Use kind: KIND_GPU.",
                field=f"instance_group[{index}].kind",
            )


@rule("TD234", "instance-count-silent", "warning", "Instance count of 0 or less")
def instance_count_silent(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: instance groups with an explicit `count` of 0 or below.

    Why it matters: the server accepts it silently; the group gets no instances (or the
    server's default), which is never what the line says.

    Example: `count: 0` → `count: 1`.

    Fix: set count >= 1, or remove the group.
    """
    for index, name, group in groups(model.effective):
        if group.count < 0 or (
            group.count == 0 and model.written(f"instance_group[{index}].count")
        ):
            yield Hit(
                message=f"instance group {name} has count {group.count}",
                fix="Set count: 1 or more.",
                field=f"instance_group[{index}].count",
            )
