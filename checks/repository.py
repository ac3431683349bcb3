"""Collect a model repository the way tritonserver sees it: every subdirectory is a model.

Reads directory listings and config.pbtxt text only; never opens model files, never executes
anything from the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from triton_doctor import model_config, normalize
from triton_doctor.checks.formats import read_model_file
from triton_doctor.checks.python_source import read_python_source
from triton_doctor.checks.unavailable import describe_os_error
from triton_doctor.evidence import ConfigFile, ModelDir, RepositoryEvidence, Subdir
from triton_doctor.view import read_version_dir

#: A model configuration is a few kilobytes; past this the file is not a configuration.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: Limits on what is listed below a model directory (weights folders can hold many files).
MAX_ENTRIES_PER_DIR = 2000
MAX_TREE_DEPTH = 4
MAX_TREE_ENTRIES = 5000
DATA_DIRS = ("warmup/", "initial_state/")


def _describe(error: OSError) -> str:
    # Entries were listed a moment before: one that is gone now is a dangling link.
    return describe_os_error(error, missing="does not exist (dangling symbolic link?)")


class TargetError(Exception):
    """The repository path itself cannot be checked (missing, not a directory, unreadable)."""



def collect_repository(path: str | Path, config_name: str | None = None) -> RepositoryEvidence:
    """Every model directory of the repository at ``path``.

    ``config_name`` mirrors tritonserver --model-config-name: a model's
    ``configs/<config_name>.pbtxt`` is read instead of config.pbtxt when it exists.
    """
    root = Path(path)
    try:
        if not root.exists():
            raise TargetError(f"{root}: no such directory")
        if not root.is_dir():
            raise TargetError(f"{root}: not a directory; give the model repository's directory")
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:
        raise TargetError(f"{root}: cannot read the repository: {_describe(error)}") from None
    models = []
    for entry in entries:
        model = _collect_model(entry, config_name)
        if model is not None:
            models.append(model)
    return RepositoryEvidence(path=str(root), models=models)


def _collect_model(entry: os.DirEntry[str], config_name: str | None) -> ModelDir | None:
    config_path = os.path.join(entry.path, "config.pbtxt")
    try:
        is_dir = entry.is_dir()
        if entry.is_symlink():
            os.stat(entry.path)  # resolves the link: raises on loops and dangling targets
    except OSError as error:
        return ModelDir(
            name=entry.name,
            path=entry.path,
            config=ConfigFile(path=config_path, present=False),
            unreadable=_describe(error),
        )
    if not is_dir:
        return None  # plain files at the repository root are ignored by the server
    model = ModelDir(name=entry.name, path=entry.path, config=ConfigFile(config_path, False))
    try:
        with os.scandir(entry.path) as listing:
            children = sorted(listing, key=lambda child: child.name)[:MAX_ENTRIES_PER_DIR]
    except OSError as error:
        model.unreadable = _describe(error)
        return model
    for child in children:
        if child.name == "config.pbtxt":
            model.config = _read_config(child.path)
        elif _is_dir(child):
            model.subdirs.append(_collect_subdir(child))
    if config_name:
        custom = os.path.join(entry.path, "configs", f"{config_name}.pbtxt")
        if os.path.isfile(custom):
            model.config = _read_config(custom)
    model.tree = _tree(entry.path)
    model.data_files = _data_files(entry.path, model.tree)
    _read_model_files(model)
    return model


def _read_model_files(model: ModelDir) -> None:
    """Read, in every version directory, the files the model's backend would load.

    Which files those are follows from the config as the server completes it (backend,
    default_model_filename, cc_model_filenames); only their headers are read.
    """
    parsed = model.config.message() if model.config.present else model_config.new_config()
    if parsed is None:
        return
    config, _ = normalize.complete(parsed, model.name, model)
    if config.backend in ("", "python") or config.platform == "ensemble":
        return
    names = dict.fromkeys([config.default_model_filename, *config.cc_model_filenames.values()])
    for subdir in model.subdirs:
        if read_version_dir(subdir.name).number is None:
            continue
        for name in names:
            if name and (name in subdir.entries or f"{name}/" in subdir.entries):
                subdir.model_files.append(
                    read_model_file(model.path, f"{subdir.name}/{name}", config.backend)
                )


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _read_config(path: str) -> ConfigFile:
    config = ConfigFile(path=path, present=True)
    if os.path.isdir(path):
        config.unreadable = "is a directory, not a file"
        return config
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
            config.size_bytes = os.fstat(handle.fileno()).st_size
    except OSError as error:
        config.unreadable = _describe(error)
        return config
    if len(data) > MAX_CONFIG_BYTES:
        config.unreadable = (
            f"is {config.size_bytes / 1e6:.1f} MB; a model configuration is a few kilobytes "
            f"(files over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB are not parsed)"
        )
        return config
    if b"\x00" in data:
        config.unreadable = "is binary data, not text"
        return config
    try:
        config.text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        config.unreadable = f"is not valid UTF-8 text (byte offset {error.start})"
        return config
    config.message()  # parse now, so the evidence records the syntax error
    return config


def _collect_subdir(entry: os.DirEntry[str]) -> Subdir:
    subdir = Subdir(name=entry.name)
    try:
        with os.scandir(entry.path) as listing:
            names = sorted(child.name + ("/" if _is_dir(child) else "") for child in listing)
    except OSError as error:
        subdir.unreadable = _describe(error)
        return subdir
    subdir.entries = names[:MAX_ENTRIES_PER_DIR]
    subdir.python = [
        read_python_source(os.path.join(entry.path, name))
        for name in subdir.entries
        if name.endswith(".py")
    ]
    return subdir


def _data_files(model_path: str, tree: list[str]) -> dict[str, int]:
    """Sizes of the warmup and initial-state files, whose length the server checks."""
    sizes = {}
    for relative in tree:
        if relative.startswith(DATA_DIRS) and not relative.endswith("/"):
            try:
                sizes[relative] = os.stat(os.path.join(model_path, relative)).st_size
            except OSError:
                continue
    return sizes


def _tree(model_path: str) -> list[str]:
    """Relative paths below the model directory, bounded; symbolic links are not followed."""
    paths: list[str] = []
    for current, dirnames, filenames in os.walk(model_path, followlinks=False):
        relative = os.path.relpath(current, model_path)
        depth = 0 if relative == "." else relative.count(os.sep) + 1
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        dirnames.sort()
        paths.extend(prefix + name + "/" for name in dirnames)
        paths.extend(prefix + name for name in sorted(filenames))
        if depth + 1 >= MAX_TREE_DEPTH:
            dirnames.clear()
        if len(paths) >= MAX_TREE_ENTRIES:
            break
    return paths[:MAX_TREE_ENTRIES]
