"""The server's own completion of a configuration, before it validates it.

Reproduces tritonserver core's backend-field inference (platform, backend and default model
file from the config and the first version directory's files) and its normalisation defaults.
Backend auto-complete (reading model files) is not done here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from triton_doctor.evidence import ModelDir

#: Default model file per backend, as the server and backends look it up.
DEFAULT_FILENAME = {
    "tensorrt": "model.plan",
    "onnxruntime": "model.onnx",
    "openvino": "model.xml",
    "pytorch": "model.pt",
    "python": "model.py",
}
BACKEND_PLATFORM = {
    "tensorrt": "tensorrt_plan",
    "onnxruntime": "onnxruntime_onnx",
    "pytorch": "pytorch_libtorch",
}
SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000
TF_FILENAME = {"tensorflow_savedmodel": "model.savedmodel", "tensorflow_graphdef": "model.graphdef"}


def complete(raw: Any, model_name: str, model_dir: ModelDir) -> tuple[Any, str | None]:
    """(completed copy of ``raw``, the server's error if it cannot determine the backend)."""
    config = type(raw)()
    config.CopyFrom(raw)
    first = model_dir.subdirs[0] if model_dir.subdirs else None
    contents = set(first.entries) if first else set()
    has_version = first is not None

    def has_file(name: str) -> bool:
        return name in contents

    def has_dir(name: str) -> bool:
        return name + "/" in contents

    if not config.name:
        config.name = model_name
    error = _backend_fields(config, model_name, has_version, has_file, has_dir)
    defaults(config)
    return config, error


def _backend_fields(
    config: Any,
    model_name: str,
    has_version: bool,
    has_file: Callable[[str], bool],
    has_dir: Callable[[str], bool],
) -> str | None:
    """Core's AutoCompleteBackendFields: platform, backend and default model file, from the
    config, then the first version directory's files, then the model's name."""
    # TensorFlow: the platform decides, so infer it first.
    if not config.platform and config.backend in ("", "tensorflow"):
        _infer_tensorflow_platform(config, has_version, has_file, has_dir)
    if config.platform in TF_FILENAME:
        config.backend = config.backend or "tensorflow"
        config.default_model_filename = (
            config.default_model_filename or TF_FILENAME[config.platform]
        )
        return None
    if not config.backend:
        _infer_backend(config, has_version, has_file, has_dir)
    if config.backend in DEFAULT_FILENAME:
        _fill_backend_defaults(config)
        return None
    if not config.backend and not config.platform and not config.default_model_filename:
        return _backend_from_model_name(config, model_name)
    return None


def _infer_tensorflow_platform(
    config: Any, has_version: bool, has_file: Callable[[str], bool],
    has_dir: Callable[[str], bool],
) -> None:
    """A TensorFlow platform named by the default file name, else by the first version's files
    (a graphdef file wins over a savedmodel directory)."""
    for platform, filename in TF_FILENAME.items():
        if config.default_model_filename == filename:
            config.platform = platform
    if not config.default_model_filename and has_version:
        if has_dir("model.savedmodel"):
            config.platform = "tensorflow_savedmodel"
        if has_file("model.graphdef"):
            config.platform = "tensorflow_graphdef"


#: (backend, platform, default file name, whether a directory of that name counts), in the
#: order core tries them: the first whose platform, default file name or file in the first
#: version directory matches names the backend.
BACKEND_SIGNS = (
    ("tensorrt", "tensorrt_plan", "model.plan", False),
    ("onnxruntime", "onnxruntime_onnx", "model.onnx", True),
    ("openvino", "", "model.xml", False),
    ("pytorch", "pytorch_libtorch", "model.pt", False),
    ("pytorch", "torch_aoti", "model.pt2", False),
    ("pytorch", "libtorch", "", False),  # refused later by the platform/backend pair check
    ("python", "", "model.py", False),
)


def _infer_backend(
    config: Any, has_version: bool, has_file: Callable[[str], bool],
    has_dir: Callable[[str], bool],
) -> None:
    """The backend (and platform) of the first sign in BACKEND_SIGNS the model shows. Files
    are looked at only when neither a platform nor a default file name is given."""
    guess = not config.platform and not config.default_model_filename and has_version
    for backend, platform, filename, directory in BACKEND_SIGNS:
        present = guess and filename and (has_file(filename) or (directory and has_dir(filename)))
        if (
            (platform and config.platform == platform)
            or (filename and config.default_model_filename == filename)
            or present
        ):
            config.backend = backend
            config.platform = config.platform or platform
            return


def _fill_backend_defaults(config: Any) -> None:
    """The platform and default model file a known backend implies."""
    config.platform = config.platform or BACKEND_PLATFORM.get(config.backend, "")
    aoti = config.platform == "torch_aoti"
    default = "model.pt2" if aoti else DEFAULT_FILENAME[config.backend]
    config.default_model_filename = config.default_model_filename or default


def _backend_from_model_name(config: Any, model_name: str) -> str | None:
    """A custom backend, named by the model directory: ``model.<backend>``; the server's error
    for a name without a dot."""
    if "." not in model_name:
        return (
            f"Invalid model name: Could not determine backend for model '{model_name}' "
            "with no backend in model configuration. Expected model name of the form "
            "'model.<backend_name>'."
        )
    backend = model_name.split(".", 1)[1]
    config.backend = backend
    config.default_model_filename = f"model.{backend}"
    return None


def defaults(config: Any) -> None:
    """NormalizeModelConfig: the defaults the server applies before validating."""
    if not config.HasField("version_policy"):
        config.version_policy.latest.num_versions = 1
    batching = config.dynamic_batching if config.HasField("dynamic_batching") else None
    if batching is not None and not batching.preferred_batch_size and config.max_batch_size > 0:
        config.dynamic_batching.preferred_batch_size.append(config.max_batch_size)
    if config.HasField("sequence_batching"):
        sequence = config.sequence_batching
        if sequence.max_sequence_idle_microseconds == 0:
            sequence.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS
        oldest = sequence.oldest if sequence.HasField("oldest") else None
        if oldest is not None and not oldest.preferred_batch_size and config.max_batch_size > 0:
            oldest.preferred_batch_size.append(config.max_batch_size)
    if not config.HasField("ensemble_scheduling"):
        for pinned in ("input_pinned_memory", "output_pinned_memory"):
            if not config.optimization.HasField(pinned):
                getattr(config.optimization, pinned).enable = True


#: The most GPUs a machine is judged with (``--gpus``): more than any one machine has.
MAX_GPUS = 1024
#: Backends whose default instance group is pinned to CPU (their preferred group).
CPU_ONLY_BACKENDS = frozenset({"openvino"})
#: Backends whose CPU groups default to two instances (core's SetDefaultInstanceCount).
TWO_CPU_INSTANCES = frozenset({"tensorflow", "onnxruntime"})


def instance_groups(config: Any, gpus: int) -> None:
    """Core's NormalizeInstanceGroup on a machine with ``gpus`` usable GPUs: names, kinds,
    counts and GPU ids as ``GET /v2/models/<m>/config`` shows them."""
    if config.HasField("ensemble_scheduling"):
        return
    group_type = type(config).DESCRIPTOR.fields_by_name["instance_group"].message_type
    kinds = group_type.enum_types_by_name["Kind"].values_by_name
    auto, gpu, cpu = (kinds[name].number for name in ("KIND_AUTO", "KIND_GPU", "KIND_CPU"))
    preferred_cpu = config.backend in CPU_ONLY_BACKENDS
    if not config.instance_group:
        group = config.instance_group.add()
        group.name = config.name
        if preferred_cpu:
            group.kind = cpu
    supported = list(range(gpus))
    for index, group in enumerate(config.instance_group):
        if not group.name:
            group.name = f"{config.name}_{index}"
        if group.kind == auto:
            fits = supported and all(device in supported for device in group.gpus)
            group.kind = gpu if fits else cpu
        if group.count < 1:
            two = group.kind == cpu and config.backend in TWO_CPU_INSTANCES
            group.count = 2 if two else 1
        if group.kind == gpu and not group.gpus:
            group.gpus.extend(supported)
