"""Read one model directory the way tritonserver sees it: its listing, its config.pbtxt, and
the headers of the model files its backend would load.

Never executes anything from the repository. Imported only when a model must be read: a check
whose models are all in the cache never loads the model-file readers.
"""

from __future__ import annotations

import functools
import itertools
import os

from triton_doctor.checks.formats import lfs, read_model_file
from triton_doctor.checks.formats.sniff import Heads
from triton_doctor.checks.unavailable import describe_os_error
from triton_doctor.evidence import (
    MAX_TREE_DEPTH,
    ConfigFile,
    ModelDir,
    Subdir,
    SyntaxProblem,
)
from triton_doctor.printable import display_name
from triton_doctor.safe_files import FileTooLarge, NotRegularFile, read_file
from triton_doctor.triton import model_config, normalize
from triton_doctor.triton.repository_model import read_version_dir

#: What a config.pbtxt outside the repository does not parse as: not protobuf's words, which
#: quote the text (see ``_inside``).
UNQUOTED_SYNTAX = ("the text there is not quoted, as the file is a link to outside the "
                   "repository")
#: A model configuration is a few kilobytes; past this the file is not a configuration.
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: Budgets for listing below a model directory: weights folders hold thousands of shards, so
#: these only stop hostile directories. A listing that reaches one stops, the evidence says so,
#: and the files the backend loads are still looked up by name.
MAX_ENTRIES_PER_DIR = 100_000
MAX_TREE_ENTRIES = 100_000
#: Files the server looks for in a version directory to infer the backend.
KNOWN_MODEL_FILES = (*normalize.DEFAULT_FILENAME.values(), *normalize.TF_FILENAME.values())
DATA_DIRS = ("warmup/", "initial_state/")
def describe(error: OSError) -> str:
    # Entries were listed a moment before: one that is gone now is a dangling link.
    return describe_os_error(error, missing="does not exist (dangling symbolic link?)")


def collect_model(entry: os.DirEntry[str], config_name: str | None, real_root: str,
                  listed: dict[str, list[os.DirEntry[str]]] | None = None) -> ModelDir | None:
    """The model directory ``entry``; names in the evidence are shown forms (see
    ``display_name``), while every read goes through ``entry.path``. ``real_root`` is the
    repository's real path: text of a file outside it is never quoted (see ``_inside``).
    ``listed``: whole listings of directories below it made a moment ago (by its
    fingerprint), sorted by name, by path; taken instead of listing those again."""
    config_path = os.path.join(entry.path, "config.pbtxt")
    model = ModelDir(name=display_name(entry.name), path=display_name(entry.path),
                     config=ConfigFile(display_name(config_path), False))
    try:
        is_dir = entry.is_dir()
        if entry.is_symlink():
            os.stat(entry.path)  # resolves the link: raises on loops and dangling targets
    except OSError as error:
        model.unreadable = describe(error)
        return model
    if not is_dir:
        return None  # plain files at the repository root are ignored by the server
    listed = dict(listed or {})
    try:
        children, model.listing_stopped_after = _listing(entry.path, listed)
    except OSError as error:
        model.unreadable = describe(error)
        return model
    if model.listing_stopped_after is None:
        listed[entry.path] = children
    subdirs = [child for child in children if child.name != "config.pbtxt" and _is_dir(child)]
    model.subdirs = [_collect_subdir(child, listed) for child in subdirs]
    has_config = any(child.name == "config.pbtxt" for child in children)
    if has_config or (model.listing_stopped_after is not None and os.path.lexists(config_path)):
        model.config = _read_config(config_path, real_root)
    if config_name:
        custom = os.path.join(entry.path, "configs", f"{config_name}.pbtxt")
        if os.path.exists(custom):  # as the server's FileExists: a FIFO or directory counts
            model.config = _read_config(custom, real_root)
    tree, model.tree_stopped_after = _tree(entry.path, listed)
    model.tree = [display_name(path) for path in tree]
    model.data_files = _data_files(entry.path, tree)
    heads: Heads = {}  # what reading the model's files saw of them, for the LFS scan
    _read_model_files(model, [child.path for child in subdirs], real_root, heads)
    model.lfs_pointers = lfs.find_pointers(entry.path, tree, heads)
    return model


def _inside(path: str, real_root: str) -> bool:
    """Whether ``path`` resolves, through symbolic links, to a file inside the repository. The
    text of one outside is never quoted in a finding: a repository under review (a pull request
    in CI) could link to any file the user can read, a token or a key, and have it printed in a
    log. Asked only when there is text to quote (resolving every path costs 5 % of a check)."""
    return os.path.commonpath([os.path.realpath(path), real_root]) == real_root


def _read_model_files(model: ModelDir, subdir_paths: list[str], real_root: str,
                      heads: Heads) -> None:
    """Read, in every version directory, the files the model's backend would load.

    Which files those are follows from the config as the server completes it (backend,
    default_model_filename, cc_model_filenames); only their headers are read. A Python
    model's file is parsed with ``ast``; ``subdir_paths`` are the real paths of
    ``model.subdirs``. ``heads`` gets each file's first bytes and size, by path.
    """
    parsed = (model_config.parsed(model.config) if model.config.present
              else model_config.new_config())
    config, _ = normalize.complete(
        parsed if parsed is not None else model_config.new_config(), model.name, model)
    if config.backend == "python":
        _read_python_files(model, subdir_paths, config.default_model_filename or "model.py",
                           heads)
    if parsed is None or config.backend in ("", "python") or config.platform == "ensemble":
        return
    names = [config.default_model_filename, *config.cc_model_filenames.values()]
    for subdir, directory in zip(model.subdirs, subdir_paths, strict=True):
        if read_version_dir(subdir.name).number is None:
            continue
        _look_up(subdir, directory, names)
        for name in dict.fromkeys(names):
            if name and (name in subdir.entries or f"{name}/" in subdir.entries):
                relative = f"{os.path.basename(directory)}/{name}"
                inside = functools.partial(_inside, os.path.join(directory, name), real_root)
                found = read_model_file(os.path.dirname(directory), relative, config.backend,
                                        may_quote=inside, heads=heads)
                found.path = display_name(found.path)
                subdir.model_files.append(found)


def _read_python_files(model: ModelDir, subdir_paths: list[str], filename: str,
                       heads: Heads) -> None:
    """Parse the file the Python backend imports from each version directory (only that one:
    a directory of 100,000 .py files must not cost 100,000 parses)."""
    for subdir, directory in zip(model.subdirs, subdir_paths, strict=True):
        if read_version_dir(subdir.name).number is None:
            continue
        stem = filename.removesuffix(".py")
        _look_up(subdir, directory, [filename, stem, f"{stem}.so", f"{stem}.abi3.so"])
        if filename in subdir.entries:
            # Parsed with ast: imported where a repository has a Python model.
            from triton_doctor.checks.python_source import read_python_source

            subdir.python.append(read_python_source(os.path.join(directory, filename),
                                                    subdir.entries, heads))


def _list(path: str, budget: int) -> tuple[list[os.DirEntry[str]], int | None]:
    """The entries of the directory ``path`` by name, at most ``budget`` of them, and the
    number listed when the budget stopped the listing (None when it is complete)."""
    with os.scandir(path) as listing:
        entries = list(itertools.islice(listing, budget + 1))
    stopped = budget if len(entries) > budget else None
    return sorted(entries[:budget], key=lambda entry: entry.name), stopped


def _listing(path: str, listed: dict[str, list[os.DirEntry[str]]]
             ) -> tuple[list[os.DirEntry[str]], int | None]:
    """``_list`` within MAX_ENTRIES_PER_DIR, or the whole listing in ``listed``, if there is
    one."""
    known = listed.get(path)
    if known is not None and len(known) <= MAX_ENTRIES_PER_DIR:
        return known, None
    return _list(path, MAX_ENTRIES_PER_DIR)


def _look_up(subdir: Subdir, directory: str, names: list[str]) -> None:
    """Add to a listing that stopped at its budget the entries among ``names`` that exist, so
    no file the server needs is taken for missing. Only plain names are looked up: a name
    such as ``../x`` never leads the lookup out of the directory."""
    if subdir.listing_stopped_after is None:
        return
    listed = set(subdir.entries)
    for name in names:
        if not name or "/" in name or name in (".", ".."):
            continue
        path = os.path.join(directory, name)
        entry = name + "/" if os.path.isdir(path) else name
        if entry not in listed and os.path.lexists(path):
            listed.add(entry)
    subdir.entries = sorted(listed)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _walkable(entry: os.DirEntry[str]) -> bool:
    """Whether the walk goes into the directory ``entry``: not through a symbolic link, nor
    into one gone since it was listed (``is_symlink`` then raises where d_type is unknown)."""
    try:
        return not entry.is_symlink()
    except OSError:
        return False


def _read_config(path: str, real_root: str) -> ConfigFile:
    config = ConfigFile(path=display_name(path), present=True)
    try:
        data = read_file(path, MAX_CONFIG_BYTES)
    except FileTooLarge as error:
        config.size_bytes = error.size
        config.unreadable = (
            f"is {error.size / 1e6:.1f} MB; a model configuration is a few kilobytes "
            f"(files over {MAX_CONFIG_BYTES // (1024 * 1024)} MiB are not parsed)"
        )
        return config
    except NotRegularFile as error:  # a directory, FIFO or device: "is a FIFO (named pipe), ..."
        config.unreadable = f"is {error}"
        return config
    except OSError as error:
        config.unreadable = describe(error)
        return config
    config.size_bytes = len(data)
    if b"\x00" in data:
        config.unreadable = "is binary data, not text"
        return config
    try:
        config.text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        config.unreadable = f"is not valid UTF-8 text (byte offset {error.start})"
        return config
    model_config.parsed(config)  # parse now, so the evidence records the syntax error
    problem = config.syntax_error
    if problem is not None and not _inside(path, real_root):
        # Nor is its text kept: TD202 would quote a ${...} in it, and a snapshot would save it.
        config.text = None
        config.syntax_error = SyntaxProblem(problem.line, problem.column, UNQUOTED_SYNTAX)
    return config


def _collect_subdir(entry: os.DirEntry[str], listed: dict[str, list[os.DirEntry[str]]]) -> Subdir:
    """The version (or other) directory ``entry``; its listing is added to ``listed`` when
    whole."""
    subdir = Subdir(name=display_name(entry.name))
    try:
        children, subdir.listing_stopped_after = _listing(entry.path, listed)
    except OSError as error:
        subdir.unreadable = describe(error)
        return subdir
    if subdir.listing_stopped_after is None:
        listed[entry.path] = children
    subdir.entries = [display_name(child.name) + ("/" if _is_dir(child) else "")
                      for child in children]
    _look_up(subdir, entry.path, list(KNOWN_MODEL_FILES))
    return subdir


def _data_files(model_path: str, tree: list[str]) -> dict[str, int]:
    """Sizes of the warmup and initial-state files, whose length the server checks."""
    sizes = {}
    for relative in tree:
        if relative.startswith(DATA_DIRS) and not relative.endswith("/"):
            try:
                sizes[display_name(relative)] = os.stat(os.path.join(model_path, relative)).st_size
            except OSError:
                continue
    return sizes


def _tree(model_path: str, listed: dict[str, list[os.DirEntry[str]]]
          ) -> tuple[list[str], int | None]:
    """Relative paths below the model directory (real names), depth first, down to
    MAX_TREE_DEPTH levels and at most MAX_TREE_ENTRIES of them; and the number listed when
    that budget stopped the walk (None when complete). Symbolic links are not followed.
    ``listed`` holds whole listings already made, by path: one within the budget is what
    listing the directory again would give."""
    paths: list[str] = []
    pending = [("", model_path, 0)]
    while pending:
        prefix, directory, depth = pending.pop()
        budget = MAX_TREE_ENTRIES - len(paths)
        known = listed.get(directory)
        try:
            children, stopped = ((known, None) if known is not None and len(known) <= budget
                                 else _list(directory, budget))
        except OSError:
            continue
        dirs = [child for child in children if _is_dir(child)]
        paths.extend(prefix + child.name + "/" for child in dirs)
        paths.extend(prefix + child.name for child in children if not _is_dir(child))
        if stopped is not None:
            return paths, len(paths)
        if depth + 1 < MAX_TREE_DEPTH:
            pending.extend((prefix + child.name + "/", child.path, depth + 1)
                           for child in reversed(dirs) if _walkable(child))
    return paths, None


def portable(model: ModelDir | None) -> tuple[ModelDir | None, bytes | None]:
    """A model read in another process, as it is sent back: its parsed config (which pickle
    cannot carry: the schema is loaded from a file) as protobuf's bytes."""
    if model is None or model.config._parsed is None:
        return model, None
    wire = model.config._parsed.SerializeToString()
    model.config._parsed = None
    return model, wire


def restored(sent: tuple[ModelDir | None, bytes | None]) -> ModelDir | None:
    model, wire = sent
    if model is not None and wire is not None:
        model.config._parsed = model_config.schema().ModelConfig.FromString(wire)
    return model
