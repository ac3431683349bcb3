"""TD5xx: the repository against its target: the release's TensorRT, ONNX Runtime and
backends, and the GPU it will run on."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble
from triton_doctor.rules.layout import is_stray
from triton_doctor.rules.model_files import model_files
from triton_doctor.triton import profiles
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: Official backends that are not in the stock image but are installed often.
OPTIONAL_BACKENDS = frozenset({"vllm", "tensorrtllm", "tensorflow", "pytorch", "fil", "dali"})


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


@rule("TD501", "tensorrt-version-mismatch", "error", "Plan built with another TensorRT",
      server_says=("not compatible with this version of TensorRT",), when=("backend:tensorrt",))
def tensorrt_version_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the TensorRT version in each plan's header (read without a GPU) against
    the TensorRT of the target release (`--triton-version`, default the newest known). The
    whole version must match: from TensorRT 8.6 on, major.minor.patch.build; before, the first
    three. Plans built version-compatible (TensorRT >= 8.6, loaded with
    `--backend-config=tensorrt,version-compatible=true`) are the exception, which the header
    does not show. Against a release whose TensorRT no public source confirms, a mismatch is a
    warning.

    Why it matters: TensorRT refuses to deserialize the plan, even from another build of the
    same release ("The engine plan file is not compatible with this version of TensorRT,
    expecting library version 8.6.1.2 got 8.6.1.6, please rebuild."; a plan of another
    major.minor fails on its serialization tag instead), and Triton reports "unable to create
    TensorRT engine".

    Example: a plan built with `pip install tensorrt` (8.6.1.6) served by `tritonserver:23.05`
    (8.6.1.2) → rebuild it with the trtexec of TensorRT 8.6.1.2.

    Fix: rebuild the engine with the exact TensorRT of the serving image, on the same GPU model.
    """
    release = repository.release
    if model.effective.backend != "tensorrt" or not release.tensorrt:
        return
    confirmed = release.container in profiles.TENSORRT_CONFIRMED
    expected = profiles.tensorrt_compared(release.tensorrt, release.tensorrt)
    for number, found in model_files(model):
        plan = found.tensorrt
        if plan is None or not plan.tensorrt_version:
            continue
        built = plan.tensorrt_version
        got = profiles.tensorrt_compared(built, release.tensorrt)
        if got.split(".")[: expected.count(".") + 1] == expected.split("."):
            continue  # equal as far as the release's version is known
        same_family = _major_minor(built) == _major_minor(release.tensorrt)
        yield Hit(
            message=f"{found.path} was built with TensorRT {built}; {release.label} ships "
            f"TensorRT {release.tensorrt}"
            + (", and TensorRT compares the whole version" if same_family else "")
            + _version_compatible_caveat(built, release.tensorrt)
            + ("" if confirmed else " (release table entry not confirmed by a public source)"),
            triton_message="The engine plan file is not compatible with this version of "
            f"TensorRT, expecting library version {expected} got {got}, please rebuild."
            if same_family else None,
            fix=f"Rebuild the plan with TensorRT {release.tensorrt}, the one inside "
            f"tritonserver:{release.container}-py3 (the tensorrt:{release.container}-py3 image "
            "usually has the same build, not always: compare its TRT_VERSION), or pick the "
            f"Triton release whose TensorRT is {built}.",
            path=f"{model.dir.path}/{found.path}",
            version=str(number),
            evidence={"plan_tensorrt": built, "server_tensorrt": release.tensorrt},
            severity=None if confirmed else Severity.WARNING,
        )


def _version_compatible_caveat(built: str, server: str) -> str:
    """The exception a version-compatible plan makes: built with TensorRT >= 8.6 and loaded by
    a later TensorRT of the same major, when the backend is configured for it."""
    def numbers(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in version.split(".") if part.isdigit())
    plan, target = numbers(built), numbers(server)
    if plan[:2] >= profiles.TENSORRT_BUILD_COMPARED_FROM and plan[:1] == target[:1] \
            and plan < target:
        return (" (it loads only if it was built version-compatible and the server runs with "
                "--backend-config=tensorrt,version-compatible=true)")
    return ""


@rule("TD502", "tensorrt-gpu-mismatch", "error", "Plan built for another GPU",
      server_says=("The engine plan file is generated on an incompatible device",
                   "incompatible device"), when=("backend:tensorrt",))
def tensorrt_gpu_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the compute capability in each plan's header against the target GPU
    (`--gpu sm_80`, `--gpu 8.0` or `--gpu A100`), taking `cc_model_filenames` into account:
    the backend loads the file listed for the GPU's "major.minor" instead of the default.

    Why it matters: TensorRT refuses a plan built for another architecture ("The engine plan
    file is generated on an incompatible device, expecting compute 8.6 got compute 8.0,
    please rebuild."); plans built with a hardware-compatibility level are the exception.

    Example: a plan built on an A100 (sm_80) deployed to L4 nodes (sm_89) → build one per
    GPU and list them: `cc_model_filenames { key: "8.0" value: "a100.plan" }`,
    `cc_model_filenames { key: "8.9" value: "l4.plan" }`.

    Fix: build the plan on the target GPU model, or ship one plan per compute capability
    with `cc_model_filenames`.
    """
    target = model.options.gpu_compute_capability
    config = model.effective
    if config.backend != "tensorrt" or not target:
        return
    filename = config.cc_model_filenames.get(target, config.default_model_filename)
    for number in model.loaded_versions:
        found = next((f for f in model.version_files(number)
                      if f.path.endswith("/" + filename)), None)
        plan = found.tensorrt if found else None
        if found is None or plan is None or not plan.compute_capability:
            continue
        if plan.compute_capability == target:
            continue
        yield Hit(
            message=f"{found.path} was built for compute capability {plan.compute_capability}"
            + (f" ({plan.multiprocessor_count} SMs)" if plan.multiprocessor_count else "")
            + f"; the target GPU is {target}",
            # TensorRT's line in the server log; the load error ends with its last error line.
            triton_message="The engine plan file is generated on an incompatible device, "
            f"expecting compute {target} got compute "
            f"{plan.compute_capability}, please rebuild.",
            fix=f"Build the plan on a {target} GPU, or add cc_model_filenames {{ key: "
            f'"{target}" value: "<plan built for it>" }}.',
            path=f"{model.dir.path}/{found.path}",
            version=str(number),
            evidence={"plan_compute_capability": plan.compute_capability,
                      "target_compute_capability": target},
        )


@rule("TD503", "onnx-too-new", "error", "ONNX IR version or opset too new for the release",
      server_says=("Unsupported model IR version",
                   "ONNX Runtime only *guarantees* support for models stamped with official "
                   "released onnx opset versions"), when=("backend:onnxruntime",))
def onnx_too_new(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each ONNX model's IR version and default-domain opset against the
    newest the target release's ONNX Runtime loads (ONNX Runtime's compatibility table;
    releases past its last row are not judged).

    Why it matters: ONNX Runtime refuses the model ("Unsupported model IR version: 10, max
    supported IR version: 9"), and Triton reports "onnx runtime error 1".

    Example: a model exported by a recent torch (IR 10, opset 21) served by 24.01 (ONNX
    Runtime 1.16: IR 9, opset 19) → export with `opset_version=19`.

    Fix: re-export with an opset the server's ONNX Runtime knows (torch.onnx.export
    `opset_version=`), or serve with a newer Triton release.
    """
    release = repository.release
    limits = profiles.onnxruntime_limits(release)
    if model.effective.backend != "onnxruntime" or limits is None:
        return
    max_ir, max_opset = limits
    for number, found in model_files(model):
        facts = found.onnx
        if facts is None or found.problem:
            continue
        path = f"{model.dir.path}/{found.path}"
        opset = facts.opsets.get("", 0)
        # ONNX Runtime's words; the server puts "onnx runtime error 1: Load model from <path>
        # failed:<source location>" in front of them.
        if facts.ir_version > max_ir:
            triton = (f"Unsupported model IR version: {facts.ir_version}, max supported IR "
                      f"version: {max_ir}")
            what = f"IR version {facts.ir_version} (ONNX Runtime {release.onnxruntime} loads "
            what += f"up to {max_ir})"
        elif opset > max_opset:
            triton = (
                "ONNX Runtime only *guarantees* support for models stamped with official "
                f"released onnx opset versions. Opset {opset} is under development and support "
                "for this is limited. The operator schemas and or other functionality may "
                "change before next ONNX release and in this case ONNX Runtime will not "
                "guarantee backward compatibility. Current official support for domain ai.onnx "
                f"is till opset {max_opset}."
            )
            what = f"opset {opset} (ONNX Runtime {release.onnxruntime} knows up to {max_opset})"
        else:
            continue
        yield Hit(
            message=f"{found.path} has {what}, for {release.label}",
            triton_message=triton,
            fix=f"Re-export with opset_version={max_opset} or lower (torch.onnx.export), or "
            "serve with a newer Triton release.",
            path=path,
            version=str(number),
            evidence={"ir_version": facts.ir_version, "opset": opset,
                      "max_ir_version": max_ir, "max_opset": max_opset},
        )


@rule("TD504", "backend-not-in-release", "error", "Backend the target image does not have",
      server_says=("unable to find backend library",))
def backend_not_in_release(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the model's backend is one the target release's image ships
    (`/opt/tritonserver/backends`), or its library `libtriton_<backend>.so` is inside the
    model directory, where the server looks first. Backends installed into the image by hand
    can be declared in settings: `backends = ["mybackend"]`.

    Why it matters: the server refuses the model ("unable to find backend library for
    backend 'onnx', try specifying runtime on the model configuration.").

    Example: `backend: "onnx"` → `backend: "onnxruntime"`; the TensorFlow backend in 25.03
    and later → serve from 25.02, or convert the model.

    Fix: use a backend the image has, or install the backend into the image.
    """
    config = model.effective
    backend = config.backend
    if not backend or is_ensemble(config) or config.runtime or is_stray(model):
        return  # a stray directory's "backend" is its name's suffix; TD101 says what it is
    release = repository.release
    if backend in release.backends or backend in model.options.extra_backends:
        return
    library = f"libtriton_{backend}.so"
    if model.dir.tree_stopped_after is not None or library in model.dir.tree or any(
        path.endswith("/" + library) and path.count("/") == 1 for path in model.dir.tree
    ):
        return  # found, or the walk stopped before it could tell (TD114 says so)
    optional = backend in OPTIONAL_BACKENDS
    if optional:
        fix = (f"Use the image that ships it (e.g. tritonserver:<release>-vllm-python-py3 for "
               f"vllm), or install it under /opt/tritonserver/backends/{backend}.")
    else:
        fix = (f"Check the spelling (backends in this image: {', '.join(sorted(release.backends))}"
               "), or install the backend and declare it in settings (backends = [...]).")
    yield Hit(
        message=f"backend '{backend}' is not in {release.label}"
        + ("; it is an official backend shipped in its own image" if optional else ""),
        triton_message="Invalid argument: unable to find backend library for backend "
        f"'{backend}', try specifying runtime on the model configuration.",
        fix=fix,
        field="backend" if model.written("backend") else None,
        severity=Severity.WARNING if optional else None,
    )
