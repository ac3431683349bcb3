"""TD116, TD117: hints about what kind of directory was given, so that a run judges it as what
it is (a repository without its model files is judged with ``--configs-only``; a path one level
off names the repository)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import names_text
from triton_doctor.triton.repository_model import (
    NON_VERSION_DIRS,
    ModelView,
    RepositoryView,
    read_version_dir,
)

#: A path of a model directory's tree that shows a model directory one level down.
_MODEL_BELOW = re.compile(r"^([^/]+)/(config\.pbtxt|[1-9][0-9]*/)$")


@rule("TD116", "model-files-elsewhere", "info", "No model holds its model file",
      scope="repository", needs=())
def model_files_elsewhere(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: whether every model whose backend opens a known file (not an ensemble)
    lacks that file in all of its version directories, as in a checkout that keeps model
    files elsewhere (a model store, Git LFS not pulled, a CI job that fetches no weights).

    Why it matters: the run then reports a missing model file or version for every model,
    which hides the configuration errors it was asked to find.

    Example: `model/config.pbtxt` and `model/1/.gitkeep` in git, `model.onnx` in S3 → run
    `triton-doctor check --configs-only`.

    Fix: judge such a checkout with `--configs-only` (or `configs-only = true` in the
    settings file), or fetch the model files first.
    """
    if repository.options.configs_only:
        return
    judged = []
    for model in repository.models:  # stops at the first that holds its file, as most do
        if model.expected_model_file() is None:
            continue
        if not model.lacks_model_files:
            return
        judged.append(model)
    if judged:
        yield Hit(
            message="no model holds the model file its backend opens "
            f"({names_text([m.name for m in judged])}): the model files seem to be kept "
            "elsewhere",
            fix="Run `triton-doctor check --configs-only` to judge the layout and "
            "configurations without the model files (or set configs-only = true in the "
            "settings file), or fetch the model files first.",
        )


@rule("TD117", "repository-path-off", "warning", "The path given is one level off the repository",
      scope="repository", needs=())
def repository_path_off(repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: whether the directory given is a folder above the repository (its only
    directory holds model directories: `repo/model_repository/<model>/config.pbtxt`) or a
    model directory itself (every directory in it is a version: `1/`, `2/`).

    Why it matters: the server, given that path, would read the wrong level as models, and
    every finding of the run is about that misreading.

    Example: `triton-doctor check repo` with `repo/model_repository/` → `triton-doctor check
    repo/model_repository`; `triton-doctor check repo/resnet` → `triton-doctor check repo`.

    Fix: check (and serve, `--model-repository`) the directory that holds the model
    directories.
    """
    models = repository.models
    if len(models) == 1 and not models[0].dir.config.present:
        below = _models_below(models[0])
        if below:
            path = models[0].dir.path
            yield Hit(
                message=f"the only directory, {models[0].name}/, holds model directories "
                f"({names_text(below)}): it is the repository, one level down",
                fix=f"Check {path}: `triton-doctor check {path}`.",
                path=path,
            )
            return
    versions = [m.name for m in models if m.name not in NON_VERSION_DIRS]
    if versions and all(read_version_dir(name).quirk is None for name in versions):
        root = posixpath.dirname(models[0].dir.path) or "."
        parent = posixpath.normpath(posixpath.join(root, ".."))
        yield Hit(
            message=f"every directory here is named as a version ({names_text(versions)}): "
            f"{root} is a model directory, not a repository",
            fix=f"Check the repository that holds it: `triton-doctor check {parent}`.",
            path=root,
        )


def _models_below(model: ModelView) -> list[str]:
    """Subdirectories of ``model`` that are model directories themselves (a config.pbtxt or a
    version directory in them), when ``model`` has no version of its own."""
    if model.available_versions:
        return []
    return sorted({m.group(1) for m in map(_MODEL_BELOW.match, model.dir.tree) if m})
