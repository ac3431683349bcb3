"""Collect a model repository the way tritonserver sees it: every subdirectory is a model.

Which models there are, each from the cache when its directory is unchanged, else read
(checks/model_dir.py), by several processes when there are many. Never executes anything from
the repository.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triton_doctor.cache import RepositoryCache, digest
from triton_doctor.checks.model_fingerprint import fingerprint
from triton_doctor.evidence import (
    EvidenceError,
    ModelDir,
    RepositoryEvidence,
    from_jsonable,
    json_text,
)
from triton_doctor.parallel import map_apart, processes
from triton_doctor.printable import display_name


class TargetError(Exception):
    """The repository path itself cannot be checked (missing, not a directory, unreadable)."""



def collect_repository(path: str | Path, config_name: str | None = None, *,
                       cache_dir: str | None = None, jobs: int | None = 1,
                       meanwhile: Callable[[], None] | None = None) -> RepositoryEvidence:
    """Every model directory of the repository at ``path``.

    ``config_name`` mirrors tritonserver --model-config-name: a model's
    ``configs/<config_name>.pbtxt`` is read instead of config.pbtxt when it exists. With a
    ``cache_dir``, a model whose directory is unchanged since a run recorded it is taken from
    the cache (triton_doctor.cache); the others are read by ``jobs`` processes (None: as
    ``parallel.processes`` decides), this one running ``meanwhile`` (work of the caller's,
    done only if models are read). The evidence is the same whichever way it was read.
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
    read = functools.partial(_read_models, entries, config_name=config_name,
                             real_root=real_root, jobs=jobs, meanwhile=meanwhile)
    if not cache_dir:
        return RepositoryEvidence(shown, read()[0])
    cache = RepositoryCache(cache_dir, f"{shown}\0{real_root}\0{config_name or ''}")
    now = time.time_ns()
    if not cache.records_models():  # nothing to look up: fingerprint each model as it is read
        models, keys = read(cache=cache, fingerprint_at=now)
        cache.complete = _whole(entries, keys)
        return RepositoryEvidence(shown, models, cache=cache, fingerprint=cache.complete)
    keys = map_apart(functools.partial(_key, now=now), entries,
                     processes(jobs, len(entries)))
    cache.complete = _whole(entries, keys)
    if cache.complete is not None and cache.holds(cache.complete):
        return RepositoryEvidence.deferred(shown, lambda: read(keys, cache)[0], cache,
                                           cache.complete)
    return RepositoryEvidence(shown, read(keys, cache)[0], cache=cache,
                              fingerprint=cache.complete)


def _whole(entries: list[os.DirEntry[str]], keys: list[str | None]) -> str | None:
    """The repository's fingerprint: its models' names and keys; None when a model has no key
    (that model, read on every run, makes the whole uncacheable)."""
    named = [(entry.name, key) for entry, key in zip(entries, keys, strict=True)
             if not _ignored(entry)]
    if not named or not all(key for _, key in named):
        return None
    return digest(*(f"{name}\0{key}" for name, key in named))


def _key(entry: os.DirEntry[str], now: int,
         listed: dict[str, list[os.DirEntry[str]]] | None = None) -> str | None:
    """The entry's fingerprint; None for what is no model, or cannot be cached. ``listed``
    gets the listings the fingerprint made (see ``fingerprint``)."""
    return None if _ignored(entry) else fingerprint(entry, now, listed)


def _ignored(entry: os.DirEntry[str]) -> bool:
    """Whether the entry is a plain file (or FIFO, ...) at the root, which the server ignores:
    neither a directory nor a link to one."""
    try:
        return not entry.is_symlink() and not entry.is_dir()
    except OSError:
        return False


#: One model as a reading process gives it: the model (None: no model), and its key.
Read = tuple[ModelDir | None, str | None]


def _read_models(entries: list[os.DirEntry[str]], keys: list[str | None] | None = None,
                 cache: RepositoryCache | None = None, *, config_name: str | None,
                 real_root: str, jobs: int | None, meanwhile: Callable[[], None] | None,
                 fingerprint_at: int | None = None) -> tuple[list[ModelDir], list[str | None]]:
    """The models of ``entries``, and their keys: from the cache where it holds one under the
    entry's key, else read (and kept in the cache under that key). Without ``keys``, a cached
    run fingerprints each model as it is read, at ``fingerprint_at``."""
    keys = list(keys) if keys is not None else [None] * len(entries)
    found = [_cached(cache, entry.name, key) if cache and key else None
             for entry, key in zip(entries, keys, strict=True)]
    missing = [index for index, model in enumerate(found) if model is None]
    if missing:
        work = functools.partial(_read_one, config_name=config_name, real_root=real_root,
                                 fingerprint_at=fingerprint_at)
        read = map_apart(work, [(entries[index], keys[index]) for index in missing],
                         processes(jobs, len(missing)), _portable, _restored, meanwhile)
        for index, (model, key) in zip(missing, read, strict=True):
            found[index], keys[index] = model, key
            if cache and key and model is not None:
                cache.keep_model(entries[index].name, key, functools.partial(json_text, model))
    return [model for model in found if model is not None], keys


def _read_one(item: tuple[os.DirEntry[str], str | None], *, config_name: str | None,
              real_root: str, fingerprint_at: int | None) -> Read:
    """One model read, in whichever process reads it; its key is taken first, where asked (an
    edit while it is read then changes the key, never the entry under the old one)."""
    from triton_doctor.checks.model_dir import collect_model

    entry, key = item
    listed: dict[str, list[os.DirEntry[str]]] = {}
    if fingerprint_at is not None:
        key = _key(entry, fingerprint_at, listed)
    return collect_model(entry, config_name, real_root, listed), key


def _portable(read: Read) -> tuple[object, str | None]:
    from triton_doctor.checks.model_dir import portable

    return portable(read[0]), read[1]


def _restored(sent: tuple[Any, str | None]) -> Read:
    from triton_doctor.checks.model_dir import restored

    model, key = sent
    return restored(model), key


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
