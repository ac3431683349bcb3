"""The cache of repeated runs: what was read from each model directory, and what was judged.

Two files per repository (as the run names it, with its real path, --model-config-name and
the user), in a folder of its own in the user's cache directory. Each model's entry is keyed by
a fingerprint of everything in its directory (checks/model_fingerprint.py); the judged Result by
the repository's models and all that judging depends on. A file records the tool it was written
by (its version and the metadata of its own source files), and one written by any other is
ignored whole: a new release or an edited checkout never reads an old entry. A file that cannot
be read or parsed is a miss, never an error; a cache directory that cannot be written leaves
the run uncached.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from triton_doctor.hashes import algorithm
from triton_doctor.safe_files import read_file

#: Bumped when the file's shape changes.
FORMAT = 1
#: A cache file past this is not read: a repository of 100,000 models is ~200 MB of entries.
MAX_FILE_BYTES = 512 * 1024 * 1024
#: Judged Results kept per repository: one per choice of rules, settings and target.
KEPT_RESULTS = 4
#: The index holds only judged Results: past this it is not a file this tool wrote.
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: Repositories a cache directory keeps; the least recently used beyond are deleted.
KEPT_REPOSITORIES = 64
#: A half-written file older than this was left by a run that was killed.
ABANDONED_NS = 3600 * 1_000_000_000
#: The names of this cache's files (and of a write a killed run left behind).
OWN_NAME = re.compile(r"^(?:[0-9a-f]{32}(?:\.models)?\.json|\.part-\w+)$")


def default_dir() -> str | None:
    """The user's cache directory, as each platform names it; None where the user has no home
    (a container run under an id without a passwd entry): the run is then uncached."""
    try:
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        elif sys.platform == "darwin":
            base = str(Path.home() / "Library" / "Caches")
        else:
            base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except (RuntimeError, KeyError, OSError):
        return None
    return os.path.join(base, "triton-doctor")


def digest(*parts: str) -> str:
    """A short hex digest of ``parts`` (joined so that no two lists give the same text)."""
    joined = "\x1f".join(parts).encode("utf-8", "surrogateescape")
    return str(algorithm("blake2b")(joined, digest_size=16).hexdigest())


@functools.cache
def tool_stamp() -> str:
    """This build of the tool: Python's and protobuf's versions, and the size and mtime of every
    source file of the package and of the ModelConfig schema it parses with (a release, an edit
    of a checkout or another tritonclient all change it). Worked out when a cache file is first
    read, or while other processes read the models (result_cache.prepare)."""
    from importlib.util import find_spec

    import google.protobuf
    import triton_doctor

    roots = [os.path.dirname(triton_doctor.__file__), *_package_dirs("checks", "rules")]
    schema = find_spec("tritonclient")
    if schema is not None:
        roots += [f"{location}/grpc" for location in schema.submodule_search_locations or []]
    stamps = []
    for root in roots:
        for directory, _, files in os.walk(root):
            for name in sorted(files):
                if name.endswith((".py", ".json")) and not name.startswith("."):
                    try:  # an editor's lock file is a dangling link
                        status = os.lstat(os.path.join(directory, name))
                    except OSError:
                        continue
                    stamps.append(f"{directory}/{name}:{status.st_size}:{status.st_mtime_ns}")
    return digest(str(FORMAT), sys.version, triton_doctor.__version__,
                  google.protobuf.__version__, *sorted(stamps))


def _package_dirs(*names: str) -> list[str]:
    """Where the subpackages ``names`` are, found without importing them."""
    from importlib.util import find_spec

    found = []
    for name in names:
        spec = find_spec(f"triton_doctor.{name}")
        found.extend(spec.submodule_search_locations or [] if spec else [])
    return found


class RepositoryCache:
    """The entries of one repository, in two files written once at the run's end (``save``):
    ``ID.models.json``, every model as read, and ``ID.json``, the judged Results and the
    fingerprint of the repository whose every model the first file holds (``complete``), so
    that a run finding the same fingerprint can leave the first file unread until a model is
    needed. The models file keeps only what this run used: a model gone or changed drops its
    entry. Both files are checked on reading, never trusted: a wrong one is a miss."""

    def __init__(self, directory: str, identity: str) -> None:
        self._directory = os.path.join(directory, f"v{FORMAT}")
        base = os.path.join(self._directory, digest(identity, str(_user())))
        self._index_path, self._models_path = f"{base}.json", f"{base}.models.json"
        index = self._read(self._index_path, MAX_INDEX_BYTES)
        complete = index.get("complete")
        self._recorded_complete = complete if isinstance(complete, str) else None
        results = index.get("results")
        self._old_results = results if isinstance(results, list) else []
        self._results: list[Any] = []
        self._old_models: dict[str, Any] | None = None  # read on first use
        #: Each model kept: its key, and what gives its data as JSON text when the file is
        #: written (the data as read from the file, or the model read this run).
        self._models: dict[str, tuple[str, Callable[[], str]]] = {}
        self._models_changed = False
        self._models_saved: bool | None = None  # not yet written
        #: The fingerprint of the repository whose every model this run read or kept (set by
        #: the collector); None when some model could not be cached.
        self.complete: str | None = None

    def _read(self, path: str, cap: int) -> dict[str, Any]:
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return {}  # a link planted there would be read, and written, through
            data = json.loads(read_file(path, cap))
        except (OSError, ValueError, RecursionError, MemoryError):  # FileTooLarge: OSError
            return {}
        if not isinstance(data, dict) or data.get("tool") != tool_stamp():
            return {}
        return data

    def records_models(self) -> bool:
        """Whether a models file may be there to take models from (else none is looked up)."""
        return self._recorded_complete is not None or os.path.lexists(self._models_path)

    def holds(self, fingerprint: str) -> bool:
        """Whether the index names ``fingerprint`` the repository whose every model the models
        file holds. A run killed between writing the two leaves them apart; each model read
        from the file is still checked against its own key, so that costs a miss, never a
        stale model."""
        return fingerprint == self._recorded_complete

    def model(self, name: str, key: str) -> Any | None:
        """The entry of model ``name`` recorded under ``key``, or None."""
        if self._old_models is None:
            models = self._read(self._models_path, MAX_FILE_BYTES).get("models")
            self._old_models = models if isinstance(models, dict) else {}
        entry = self._old_models.get(name)
        if isinstance(entry, dict) and entry.get("key") == key and "data" in entry:
            self._models[name] = (key, functools.partial(_dumps, entry["data"]))
            return entry["data"]
        return None

    def keep_model(self, name: str, key: str, data: Callable[[], str]) -> None:
        """Record model ``name`` under ``key``; ``data()`` gives it as JSON text when the file
        is written (by this process while others judge: made where the model was read, the
        text would have to travel back beside the model)."""
        self._models[name] = (key, data)
        self._models_changed = True
        self._models_saved = None  # written again, should it have been already

    def result(self, key: str) -> Any | None:
        for entry in self._old_results:
            if isinstance(entry, dict) and entry.get("key") == key and "data" in entry:
                self._results = [entry]
                return entry["data"]
        return None

    def keep_result(self, key: str, data: Any) -> None:
        self._results = [{"key": key, "data": data}]

    def save(self) -> None:
        """Write what changed: the models file when a model was read or one recorded was not
        used, the index when a Result is new or the completeness changed; the other Results
        recorded stay (another choice of rules may come back). Best effort: a cache that cannot
        be written is no error."""
        models_read = self._old_models is not None or self._models_changed
        complete = self.complete if models_read else self._recorded_complete
        others = [entry for entry in self._old_results
                  if isinstance(entry, dict) and entry not in self._results]
        results = (self._results + others)[:KEPT_RESULTS]
        if not (self._models_differ() or complete != self._recorded_complete
                or results != self._old_results[:KEPT_RESULTS]):
            return
        if not self.save_models():  # first: the index must never name models not yet written
            return
        try:
            os.makedirs(self._directory, mode=0o700, exist_ok=True)
            self._write(self._index_path, "complete", _dumps(complete),
                        results=_dumps(results))
            _prune(self._directory)
        except (OSError, ValueError):
            return

    def save_models(self) -> bool:
        """Write the models file, once, if this run changed what it holds; whether it is
        written as the index may name it (False: writing failed). ``save`` calls it first; a
        run calls it earlier, while other processes judge the models."""
        if self._models_saved is None:
            try:
                if self._models_differ():
                    os.makedirs(self._directory, mode=0o700, exist_ok=True)
                    self._write(self._models_path, "models", self._models_text())
                self._models_saved = True
            except (OSError, ValueError):
                self._models_saved = False
        return self._models_saved

    def _models_differ(self) -> bool:
        """Whether the models file should change: a model was read, or one recorded was not
        used."""
        return self._models_changed or (
            self._old_models is not None and set(self._old_models) != set(self._models))

    def _models_text(self) -> str:
        """The models kept, as JSON, each made into its text now."""
        return "{" + ",".join(_member(name, *entry) for name, entry in self._models.items()) + "}"

    def _write(self, path: str, name: str, text: str, **more: str) -> None:
        """Write the document ``{"format", "tool", name: text, **more}`` (values as JSON text)
        to a temporary file and rename it onto ``path`` itself: whatever stood there (a link
        planted in a shared or restored cache) is replaced, never written through."""
        members = {"format": str(FORMAT), "tool": _dumps(tool_stamp()), name: text, **more}
        document = "{" + ",".join(f"{_dumps(key)}:{value}" for key, value in members.items()) + "}"
        handle, temporary = _new_part(self._directory)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(document.encode())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise


def _member(name: str, key: str, data: Callable[[], str]) -> str:
    """Model ``name``'s member of the models file, recorded under ``key``, as JSON text (a
    string is its own compact JSON: ``json``'s shared encoder writes it, without making one of
    its own for the separators)."""
    return f'{json.dumps(name)}:{{"key":{json.dumps(key)},"data":{data()}}}'


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _new_part(directory: str) -> tuple[int, str]:
    """A new file of this process's own in ``directory``, open for writing, and its path: made
    here rather than by ``tempfile``, whose import (``shutil``, ``random``) costs more than a
    one-model check's cache write."""
    for attempt in range(100):
        path = os.path.join(directory, f".part-{os.getpid()}_{time.monotonic_ns()}_{attempt}")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: no free name for a new cache file")


def _user() -> int | str:
    """Who runs: what a run may read, and so quote, is the user's; a cache directory shared
    by several never serves one user's entries to another."""
    return os.geteuid() if hasattr(os, "geteuid") else os.environ.get("USERNAME", "")


def _prune(directory: str) -> None:
    """Keep the files of the KEPT_REPOSITORIES most recently written repositories, and delete
    what a killed run left half-written; only this cache's own names are ever deleted."""
    with os.scandir(directory) as listing:
        written = sorted(((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name)
                          for entry in listing if OWN_NAME.match(entry.name)), reverse=True)
    abandoned = time.time_ns() - ABANDONED_NS  # a write this old is no concurrent run's
    written = [(when, name) for when, name in written
               if not name.startswith(".") or when < abandoned]
    kept: list[str] = []
    for _, name in written:
        stem = name.split(".")[0]
        if stem and stem not in kept and len(kept) < KEPT_REPOSITORIES:
            kept.append(stem)
    for _, name in written:
        if name.split(".")[0] not in kept:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                continue
