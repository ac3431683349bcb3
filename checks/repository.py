"""Collect a model repository the way tritonserver sees it: every subdirectory is a model.

Which models there are, each from the cache when its directory is unchanged, else read
(checks/model_dir.py), by several processes when there are many. Never executes anything from
the repository.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from triton_doctor.cache import RepositoryCache, digest
from triton_doctor.checks.model_fingerprint import fingerprint
from triton_doctor.evidence import (
    EvidenceError,
    ModelDir,
    RepositoryEvidence,
    from_jsonable,
    to_jsonable,
)
from triton_doctor.parallel import map_apart, processes
from triton_doctor.printable import display_name


class TargetError(Exception):
    """The repository path itself cannot be checked (missing, not a directory, unreadable)."""



def collect_repository(path: str | Path, config_name: str | None = None, *,
                       cache_dir: str | None = None, jobs: int | None = 1) -> RepositoryEvidence:
    """Every model directory of the repository at ``path``.

    ``config_name`` mirrors tritonserver --model-config-name: a model's
    ``configs/<config_name>.pbtxt`` is read instead of config.pbtxt when it exists. With a
    ``cache_dir``, a model whose directory is unchanged since a run recorded it is taken from
    the cache (triton_doctor.cache); the others are read by ``jobs`` processes (None: as
    ``parallel.processes`` decides). The evidence is the same whichever way it was read.
    """
    root = Path(path)
    shown = display_name(str(root))
    try:
        if not root.exists():
            raise TargetError(f"{shown}: no such directory")
        if not root.is_dir():
            raise TargetError(f"{shown}: not a directory; give the model repository's directory")
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:
        from triton_doctor.checks.model_dir import describe

        raise TargetError(f"{shown}: cannot read the repository: {describe(error)}") from None
    real_root = os.path.realpath(root)
    if not cache_dir:
        return RepositoryEvidence(shown, _read_models(entries, [None] * len(entries), None,
                                                      config_name, real_root, jobs))
    cache = RepositoryCache(cache_dir, f"{shown}\0{real_root}\0{config_name or ''}")
    now = time.time_ns()
    keys = map_apart(functools.partial(_key, now=now), entries,
                     processes(jobs, len(entries)))
    named = [(entry.name, key) for entry, key in zip(entries, keys, strict=True)
             if not _ignored(entry)]
    whole = (digest(*(f"{name}\0{key}" for name, key in named))
             if named and all(key for _, key in named) else None)
    read = functools.partial(_read_models, entries, keys, cache, config_name, real_root, jobs)
    cache.complete = whole
    if whole is not None and cache.holds(whole):
        return RepositoryEvidence.deferred(shown, read, cache, whole)
    return RepositoryEvidence(shown, read(), cache=cache, fingerprint=whole)


def _key(entry: os.DirEntry[str], now: int) -> str | None:
    """The entry's fingerprint; None for what is no model, or cannot be cached."""
    return None if _ignored(entry) else fingerprint(entry.path, now)


def _ignored(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a plain file (or FIFO, ...) at the root, which the server ignores:
    neither a directory nor a link to one."""
    try:
        return not entry.is_symlink() and not entry.is_dir()
    except OSError:
        return False


def _read_models(entries: list[os.DirEntry[str]], keys: list[str | None],
                 cache: RepositoryCache | None, config_name: str | None, real_root: str,
                 jobs: int | None) -> list[ModelDir]:
    """The models of ``entries``: from the cache where it holds one under the entry's key,
    else read (and kept in the cache under that key)."""
    found = [_cached(cache, entry.name, key) if cache and key else None
             for entry, key in zip(entries, keys, strict=True)]
    missing = [index for index, model in enumerate(found) if model is None]
    if not missing:
        return [model for model in found if model is not None]
    from triton_doctor.checks import model_dir

    read = map_apart(functools.partial(model_dir.collect_model, config_name=config_name,
                                       real_root=real_root),
                     [entries[index] for index in missing],
                     processes(jobs, len(missing)), model_dir.portable, model_dir.restored)
    for index, model in zip(missing, read, strict=True):
        found[index] = model
        key = keys[index]
        if cache and key and model is not None:
            cache.keep_model(entries[index].name, key, to_jsonable(model))
    return [model for model in found if model is not None]


def _cached(cache: RepositoryCache, name: str, key: str) -> ModelDir | None:
    """The model recorded under ``key``; None when there is none, or it is not a ModelDir (a
    cache file from elsewhere is read as untrusted as a snapshot)."""
    data = cache.model(name, key)
    if data is None:
        return None
    try:
        model: ModelDir = from_jsonable(ModelDir, data, "cache")
    except EvidenceError:
        return None
    return model
