"""TD116: hints about what kind of checkout the repository is, so that a run judges it as what
it is (a repository without its model files is judged with ``--configs-only``)."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import names_text
from triton_doctor.triton.repository_model import RepositoryView


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
    judged = [m for m in repository.models if m.expected_model_file() is not None]
    if judged and all(m.lacks_model_files for m in judged):
        yield Hit(
            message="no model holds the model file its backend opens "
            f"({names_text([m.name for m in judged])}): the model files seem to be kept "
            "elsewhere",
            fix="Run `triton-doctor check --configs-only` to judge the layout and "
            "configurations without the model files (or set configs-only = true in the "
            "settings file), or fetch the model files first.",
        )
