"""TD20x: what the model is — platform, backend, batch size, scheduler kind."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: Core's GetBackendTypeFromPlatform / GetBackendType: the known backends and their platforms.
PLATFORM_TYPE = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "torch_aoti": "pytorch",
}
KNOWN_BACKENDS = {"tensorflow", "tensorrt", "onnxruntime", "pytorch"}
PLATFORM_FOR_BACKEND = {
    "tensorrt": "tensorrt_plan",
    "onnxruntime": "onnxruntime_onnx",
    "pytorch": "pytorch_libtorch",
    "tensorflow": "tensorflow_savedmodel",
}
PLATFORM_TYPOS = {
    "onnx": "onnxruntime_onnx",
    "onnxruntime": "onnxruntime_onnx",
    "tensorrt": "tensorrt_plan",
    "trt": "tensorrt_plan",
    "pytorch": "pytorch_libtorch",
    "libtorch": "pytorch_libtorch",
    "torch": "pytorch_libtorch",
    "python": None,
    "tensorflow": "tensorflow_savedmodel",
}


@rule("TD205", "unknown-platform", "error", "Platform the server does not know",
      server_says=("unexpected platform type '",), when=("backend:",))
def unknown_platform(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: after the server infers the backend, a model still without a backend:
    the `platform` is not one the server maps to a backend (`onnx`, `tensorrt`, `python`,
    a typo), and no `backend` is given.

    Why it matters: the server refuses the model: "unexpected platform type".

    Example: `platform: "onnx"` → `platform: "onnxruntime_onnx"`; `platform: "python"` →
    `backend: "python"`.

    Fix: use a platform from tensorrt_plan, onnxruntime_onnx, pytorch_libtorch, torch_aoti,
    tensorflow_savedmodel, tensorflow_graphdef, ensemble — or set `backend` instead.
    """
    config = model.effective
    if model.autocomplete_error or config.backend or is_ensemble(config):
        return
    suggestion = PLATFORM_TYPOS.get(config.platform, "")
    if suggestion is None:
        fix = f'Replace platform: "{config.platform}" with backend: "{config.platform}".'
    elif suggestion:
        fix = f'Write platform: "{suggestion}".'
    else:
        fix = 'Use a known platform (e.g. "onnxruntime_onnx") or set backend: "<name>".'
    yield Hit(
        message=f"platform '{config.platform}' names no backend the server knows",
        triton_message=f"unexpected platform type '{config.platform}' for {config.name}",
        fix=fix,
        field="platform",
    )


@rule("TD206", "ensemble-with-backend", "error", "Ensemble with a backend",
      server_says=("must have platform type 'ensemble' and empty backend type",),
      when=("ensemble",))
def ensemble_with_backend(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `platform: "ensemble"` together with a `backend`.

    Why it matters: ensembles are run by the server itself, not a backend; the server
    refuses the model.

    Example: `platform: "ensemble" backend: "python"` → `platform: "ensemble"`.

    Fix: delete the backend line.
    """
    config = model.effective
    if is_ensemble(config) and config.backend:
        yield Hit(
            message=f"ensemble declares backend '{config.backend}'",
            triton_message=f"Ensemble model '{config.name}' must have platform type 'ensemble' "
            "and empty backend type",
            fix="Remove the backend field.",
            field="backend",
        )


@rule("TD207", "platform-backend-mismatch", "error", "platform and backend disagree",
      server_says=("unexpected 'platform' and 'backend' pair, got:",))
def platform_backend_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a known backend (tensorrt, onnxruntime, pytorch, tensorflow) with a
    platform that belongs to another one, or none the server can pair with it.

    Why it matters: the server refuses the model: "unexpected 'platform' and 'backend' pair".

    Example: `platform: "onnxruntime_onnx" backend: "tensorrt"` → keep the one that matches
    the model file.

    Fix: set only `backend` (the server fills the platform), or a matching pair.
    """
    config = model.effective
    if config.backend in KNOWN_BACKENDS and PLATFORM_TYPE.get(config.platform) != config.backend:
        yield Hit(
            message=f"platform '{config.platform}' does not belong to backend '{config.backend}'",
            triton_message=f"unexpected 'platform' and 'backend' pair, got:{config.platform}, "
            f"{config.backend}",
            fix=f'Use platform: "{PLATFORM_FOR_BACKEND[config.backend]}" with backend '
            f'"{config.backend}", or delete the platform line.',
            field="platform" if model.written("platform") else "backend",
        )


@rule("TD208", "negative-max-batch-size", "error", "max_batch_size is negative",
      server_says=("'max_batch_size' must be non-negative value for",))
def negative_max_batch_size(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `max_batch_size` below 0.

    Why it matters: the server refuses the model.

    Example: `max_batch_size: -1` → `max_batch_size: 0` (no batching) or the largest batch
    the model takes.

    Fix: 0 for a model without a batch dimension, otherwise the largest batch it supports.
    """
    config = model.effective
    if config.max_batch_size < 0:
        yield Hit(
            message=f"max_batch_size is {config.max_batch_size}",
            triton_message=f"'max_batch_size' must be non-negative value for {config.name}",
            fix="Use 0 (no batch dimension) or a positive maximum batch size.",
            field="max_batch_size",
        )


@rule("TD209", "ensemble-scheduling-mismatch", "error", "ensemble_scheduling and platform disagree",
      server_says=("ensemble scheduling must be set for ensemble",
                   "ensemble scheduling cannot be set for model '"),
      when=("ensemble", "ensemble_scheduling"))
def ensemble_scheduling_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `platform: "ensemble"` comes with `ensemble_scheduling`, and
    `ensemble_scheduling` only with that platform.

    Why it matters: the server refuses either half on its own.

    Example: an ensemble without steps → add `ensemble_scheduling { step [ ... ] }`.

    Fix: give an ensemble its `ensemble_scheduling` block; remove the block from other models.
    """
    config = model.effective
    has_block = config.HasField("ensemble_scheduling")
    if is_ensemble(config) and not config.backend and not has_block:
        yield Hit(
            message="platform is ensemble but there is no ensemble_scheduling block",
            triton_message=f"ensemble scheduling must be set for ensemble {config.name} whose "
            "platform is ensemble",
            fix="Add ensemble_scheduling { step [ { model_name: ... input_map ... "
            "output_map ... } ] }.",
            field="platform",
        )
    elif has_block and not is_ensemble(config) and config.backend:
        yield Hit(
            message=f"ensemble_scheduling on a model whose platform is "
            f"'{config.platform}' (backend '{config.backend}')",
            triton_message=f"ensemble scheduling cannot be set for model '{config.name}' whose "
            "platform is not ensemble",
            fix='Set platform: "ensemble" and no backend, or remove ensemble_scheduling.',
            field="ensemble_scheduling",
        )
