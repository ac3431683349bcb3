"""TD30x: the model file itself: is it the file its backend can load at all."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.evidence import ModelFile
from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: What each backend prints when it cannot open the file, where the words are known.
_LOAD_FAILURE = {
    "onnxruntime": "onnx runtime error 7: Load model from {path} failed:Protobuf parsing failed.",
    "pytorch": "failed to load model '{model}': PytorchStreamReader failed reading zip archive: "
    "failed finding central directory",
    "tensorrt": "unable to create TensorRT engine",
}
#: The words where a kind of file fails before the backend's usual load step.
_LOAD_FAILURE_BY_KIND = {
    ("onnxruntime", "directory"): "unable to find '{path}/model.onnx' for model instance "
    "'{model}'",
}
#: What to do about a Git LFS pointer, wherever it is (TD115 says it too).
LFS_FIX = ("Fetch the real file: `git lfs pull` (or `git lfs install` before cloning), and make "
           "sure the image build copies the fetched file.")
_FIXES = {
    "lfs-pointer": LFS_FIX,
    "empty": "Copy the real model file; a placeholder of 0 bytes cannot be loaded.",
    "pickle": "Export TorchScript: `torch.jit.script(model).save('model.pt')` (or "
    "`torch.jit.trace(model, example).save(...)`); torch.save() of a module is a pickle the "
    "backend cannot load.",
    "zip": "Export TorchScript: `torch.jit.script(model).save('model.pt')`; torch.save() writes "
    "weights without the code TorchScript needs.",
}


def model_files(model: ModelView) -> Iterator[tuple[int, ModelFile]]:
    """(version, file) for the default model file of every version the policy loads."""
    for number in model.loaded_versions:
        found = model.model_file(number)
        if found is not None:
            yield number, found


@rule("TD301", "model-file-unusable", "error", "The model file is not a model its backend loads",
      server_says=("SyntaxError", "Protobuf parsing failed", "PytorchStreamReader",
                   "unable to create TensorRT engine", "/model.onnx' for model instance '"),
                   when=("unusable_file", "python_source"))
def model_file_unusable(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the file each loaded version's backend opens is what that backend reads:
    not empty, not a Git LFS pointer, a complete ONNX protobuf (or a directory holding
    model.onnx), a TorchScript archive (not a `torch.save` pickle or weights zip), a TensorRT
    plan, OpenVINO IR XML, a model.py that parses as Python. Only headers and metadata are
    read, never weights, and nothing is unpickled or executed.

    Why it matters: the backend fails to load the version, usually with a low-level message
    (Protobuf parsing failed, PytorchStreamReader failed, unable to create TensorRT engine)
    that does not say the file was never the model.

    Example: `1/model.pt` written by `torch.save(model)` → save it with
    `torch.jit.script(model).save("1/model.pt")`.

    Fix: replace the file with the real, complete model in the format its backend loads.
    """
    backend = model.effective.backend
    for number, found in model_files(model):
        if found.problem is None:
            continue
        path = f"{model.dir.path}/{found.path}"
        template = _LOAD_FAILURE_BY_KIND.get((backend, found.kind), _LOAD_FAILURE.get(backend))
        yield Hit(
            message=f"{found.path} {found.problem}",
            triton_message=template.format(path=path, model=model.name) if template else None,
            fix=_FIXES.get(found.kind, "Replace it with the complete model file, exported "
                           f"for the {backend} backend."),
            path=path,
            version=str(number),
            evidence={"size_bytes": found.size_bytes, "detected": found.kind},
        )
    source = model.python_source()
    if source is not None and (source.syntax_error or source.unreadable):
        number = model.loaded_versions[0]
        why = source.syntax_error or f"it cannot be read: {source.unreadable}"
        yield Hit(
            message=f"{number}/{source.name} cannot be imported: {why}",
            triton_message=source.syntax_error,
            fix=f"Make `python -m py_compile {source.name}` pass, with the Python of the "
            "serving image." if source.syntax_error else "Make the file readable by the "
            "server's user.",
            path=f"{model.dir.path}/{number}/{source.name}",
            version=str(number),
        )


@rule("TD302", "onnx-external-data-missing", "error", "ONNX external data file is missing",
      when=("onnx_file",))
def onnx_external_data_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the external-data files an ONNX model names (initializers stored beside
    the .onnx, as every model over 2 GB must be) are present next to it.

    Why it matters: ONNX Runtime fails to create the session, and the version does not load.

    Example: `1/model.onnx` naming `model.onnx.data` with only model.onnx copied → ship the
    model as a directory `1/model.onnx/` holding `model.onnx` and `model.onnx.data`.

    Fix: copy the data files with the model, keeping the relative names the model records.
    """
    for number, found in model_files(model):
        if found.onnx is None or not found.onnx.missing_external_data:
            continue
        missing = found.onnx.missing_external_data
        yield Hit(
            message=f"{found.path} stores weights in {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not beside it",
            fix="Copy the external data files next to the .onnx file (or ship `model.onnx/` as "
            "a directory holding both).",
            path=f"{model.dir.path}/{found.path}",
            version=str(number),
            evidence={"missing_files": missing},
        )


@rule("TD312", "onnx-external-data-outside", "warning",
      "ONNX external data lies outside the model's directory", when=("onnx_file",))
def onnx_external_data_outside(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the external-data locations an ONNX model names are relative paths that
    stay in the .onnx file's directory: not absolute (`/data/weights.bin`), not climbing out
    (`../shared/weights.bin`). A bare name that is a symbolic link to elsewhere (as in the
    Hugging Face cache) stays in the directory and is fine.

    Why it matters: newer ONNX Runtime (since PR #26776, December 2025) refuses the session,
    so the version does not load; older ones, bundled in most Triton releases, read whatever
    file the path names, which breaks when the repository moves and lets a model read files
    of the host. triton-doctor never looks such a path up, so the report tells nothing about
    files outside the model.

    Example: location `../../weights/model.onnx.data` → copy the data file beside the model
    and re-save it with `location="model.onnx.data"`.

    Fix: keep the data files next to the .onnx file and record their bare names
    (`onnx.save_model(m, path, save_as_external_data=True, location="model.onnx.data")`).
    """
    for number, found in model_files(model):
        if found.onnx is None or not found.onnx.outside_external_data:
            continue
        outside = found.onnx.outside_external_data
        yield Hit(
            message=f"{found.path} names external data outside its directory: "
            f"{', '.join(repr(location) for location in outside)}",
            fix="Copy the data files next to the .onnx file and re-save the model with "
            "location set to their bare file names.",
            path=f"{model.dir.path}/{found.path}",
            version=str(number),
            evidence={"outside_locations": outside},
        )
