"""TD115: Git LFS pointers among a model's files, where they are not the model file itself
(TD301 judges that one)."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import names_text
from triton_doctor.rules.layout import is_stray
from triton_doctor.rules.model_files import LFS_FIX
from triton_doctor.triton.repository_model import (
    ModelView,
    RepositoryView,
    read_version_dir,
    version_dir_name,
)

#: Pointers named in a finding; the count says how many more there are.
MAX_LISTED_POINTERS = 8


def _loaded_parts(model: ModelView) -> tuple[set[str], set[str]]:
    """(paths TD301 already reads as the model file, directories the backend loads whole) of
    the versions the policy loads, relative to the model directory."""
    config = model.effective
    filename = config.default_model_filename
    files: set[str] = set()
    loaded: set[str] = set()
    for number in model.loaded_versions:
        directory = version_dir_name(number)
        if not filename:
            continue
        files.add(f"{directory}/{filename}")
        if config.backend == "onnxruntime":
            files.add(f"{directory}/{filename}/model.onnx")  # what ONNX Runtime opens in one
        loaded.add(f"{directory}/{filename}/")  # a model stored as a directory
        if config.backend == "openvino" and filename.endswith(".xml"):
            loaded.add(f"{directory}/{filename[:-4]}.bin")  # the IR's weights
    return files, loaded


def _version(path: str) -> int | None:
    """The version whose directory holds ``path``, if any."""
    top = path.split("/", 1)[0]
    number = read_version_dir(top).number if "/" in path else None
    return number if number is not None and version_dir_name(number) == top else None


@rule("TD115", "lfs-pointer", "warning", "Git LFS pointer among the model's files", needs=(),
      when=("lfs_pointers",))
def lfs_pointer(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: files below the model directory that are Git LFS pointers (a small text
    file starting `version https://git-lfs.github.com/spec/`) instead of their content:
    inside a model stored as a directory (a SavedModel's `saved_model.pb` and `variables/`,
    an ONNX directory's external data), an OpenVINO model's `.bin`, or any other file
    of a loaded version or of the model directory (weights or a tokenizer read by model.py,
    TensorRT-LLM engines). Only files under 1 KiB are opened. The model file itself is
    TD301's. A model's pointers make at most two findings: those the backend loads, and the
    others (a clone without `git lfs pull` leaves thousands).

    Why it matters: the repository was cloned without `git lfs pull` (or an image was built
    from such a clone). A pointer inside what the backend loads fails the version's load:
    an error. Other files fail whatever reads them, model.py at initialize or at the first
    request: a warning.

    Example: `1/model.savedmodel/saved_model.pb` of 132 bytes → run `git lfs pull`.

    Fix: fetch the real files (`git lfs pull`, or `git lfs install` before cloning), and make
    sure the image build copies the fetched files.
    """
    pointers = model.dir.lfs_pointers
    if not pointers or is_stray(model):
        return
    files, loaded = _loaded_parts(model)
    groups: dict[bool, list[tuple[str, str, int | None]]] = {True: [], False: []}
    for path, size in sorted(pointers.items()):
        number = _version(path)
        if path in files or (number is not None and number not in model.loaded_versions):
            continue  # TD301's, or never loaded
        inside = path in loaded or any(path.startswith(part) for part in loaded
                                        if part.endswith("/"))
        groups[inside].append((path, size, number))
    # One finding per kind of pointer, not per pointer: a clone without `git lfs pull` leaves
    # every large file a pointer, thousands in a model.
    for inside, found in groups.items():
        if found:
            yield _pointers_hit(model, found, inside)


def _pointers_hit(model: ModelView, found: list[tuple[str, str, int | None]],
                  inside: bool) -> Hit:
    path, size, number = found[0]
    if len(found) == 1:
        recorded = _size(size)
        what = f"{path} is a Git LFS pointer, not the file" + (
            f" (the real file is {recorded} bytes)" if recorded is not None else "")
        evidence = {} if recorded is None else {"pointer_to_bytes": recorded}
    else:
        paths = [p for p, _, _ in found]
        what = (f"{len(found):,} files are Git LFS pointers, not the files: "
                f"{names_text(paths, MAX_LISTED_POINTERS)}")
        evidence = {"pointer_files": len(found),
                    "pointers_to_bytes": sum(_size(s) or 0 for _, s, _ in found)}
    versions = {n for _, _, n in found}
    them = "it" if len(found) == 1 else "them"
    return Hit(
        message=what + (f"; the backend loads {them} with the model, so the version fails to "
                        "load" if inside else f"; whatever reads {them} (model.py, the "
                        "backend) fails"),
        fix=LFS_FIX,
        path=f"{model.dir.path}/{path}",
        version=None if number is None or len(versions) > 1 else str(number),
        severity=Severity.ERROR if inside else None,
        evidence=evidence,
    )


def _size(recorded: str) -> int | None:
    """The size a pointer records, if it is a number (a snapshot from an older collector may
    hold the pointer's text as it was)."""
    if recorded.isascii() and recorded.isdigit() and len(recorded) <= 20:
        return int(recorded)
    return None
