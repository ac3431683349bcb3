"""The cache of repeated runs: what was read from each model directory, and what was judged.

One file per repository (as the run names it, with its real path and --model-config-name),
in the user's cache directory. Each model's entry is keyed by a fingerprint of everything in its
directory (checks/model_fingerprint.py); the judged Result by the repository's models and all
that judging depends on. The file records the tool it was written by (its version and the
metadata of its own source files), and one written by any other is ignored whole: a new release
or an edited checkout never reads an old entry. A file that cannot be read or parsed is a miss,
never an error; a cache directory that cannot be written leaves the run uncached.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from triton_doctor.safe_files import read_file, write_file

#: Bumped when the file's shape changes.
FORMAT = 1
#: A cache file past this is not read: a repository of 100,000 models is ~200 MB of entries.
MAX_FILE_BYTES = 512 * 1024 * 1024
#: Judged Results kept per repository: one per choice of rules, settings and target.
KEPT_RESULTS = 4
#: Repositories a cache directory keeps; the least recently used beyond are deleted.
KEPT_REPOSITORIES = 64


def default_dir() -> str:
    """The user's cache directory, as each platform names it."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return os.path.join(base, "triton-doctor")


def digest(*parts: str) -> str:
    """A short hex digest of ``parts`` (joined so that no two lists give the same text)."""
    import hashlib  # only runs that use the cache hash

    joined = "\x1f".join(parts).encode("utf-8", "surrogateescape")
    return hashlib.blake2b(joined, digest_size=16).hexdigest()


@cache
def tool_stamp() -> str:
    """This build of the tool: Python's and protobuf's versions, and the size and mtime of every
    source file of the package and of the ModelConfig schema it parses with (a release, an edit
    of a checkout or another tritonclient all change it)."""
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
                if name.endswith((".py", ".json")):
                    status = os.stat(os.path.join(directory, name))
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
        self._directory = directory
        base = os.path.join(directory, digest(identity))
        self._index_path, self._models_path = f"{base}.json", f"{base}.models.json"
        self._tool = tool_stamp()
        index = self._read(self._index_path)
        complete = index.get("complete")
        self._recorded_complete = complete if isinstance(complete, str) else None
        results = index.get("results")
        self._old_results = results if isinstance(results, list) else []
        self._results: list[Any] = []
        self._old_models: dict[str, Any] | None = None  # read on first use
        self._models: dict[str, Any] = {}
        self._models_changed = False
        #: The fingerprint of the repository whose every model this run read or kept (set by
        #: the collector); None when some model could not be cached.
        self.complete: str | None = None

    def _read(self, path: str) -> dict[str, Any]:
        try:
            data = json.loads(read_file(path, MAX_FILE_BYTES))
        except (OSError, ValueError):  # FileTooLarge is an OSError
            return {}
        if not isinstance(data, dict) or data.get("tool") != self._tool:
            return {}
        return data

    def holds(self, fingerprint: str) -> bool:
        """Whether the models file was written for the repository ``fingerprint`` names."""
        return fingerprint == self._recorded_complete

    def model(self, name: str, key: str) -> Any | None:
        """The entry of model ``name`` recorded under ``key``, or None."""
        if self._old_models is None:
            models = self._read(self._models_path).get("models")
            self._old_models = models if isinstance(models, dict) else {}
        entry = self._old_models.get(name)
        if isinstance(entry, dict) and entry.get("key") == key and "data" in entry:
            self._models[name] = entry
            return entry["data"]
        return None

    def keep_model(self, name: str, key: str, data: Any) -> None:
        self._models[name] = {"key": key, "data": data}
        self._models_changed = True

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
        models_read = self._old_models is not None
        write_models = models_read and (self._models_changed
                                        or set(self._old_models or ()) != set(self._models))
        complete = self.complete if models_read else self._recorded_complete
        others = [entry for entry in self._old_results
                  if isinstance(entry, dict) and entry not in self._results]
        results = (self._results + others)[:KEPT_RESULTS]
        if not (write_models or complete != self._recorded_complete
                or results != self._old_results[:KEPT_RESULTS]):
            return
        try:
            os.makedirs(self._directory, mode=0o700, exist_ok=True)
            if write_models:  # first: the index must never name models not yet written
                self._write(self._models_path, {"models": self._models})
            self._write(self._index_path, {"complete": complete, "results": results})
            _prune(self._directory)
        except (OSError, ValueError):
            return

    def _write(self, path: str, document: dict[str, Any]) -> None:
        document = {"format": FORMAT, "tool": self._tool, **document}
        write_file(path, json.dumps(document, separators=(",", ":")).encode())


def _prune(directory: str) -> None:
    """Keep the files of the KEPT_REPOSITORIES most recently written repositories."""
    with os.scandir(directory) as listing:
        written = sorted(((entry.stat().st_mtime_ns, entry.name) for entry in listing
                          if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)),
                         reverse=True)
    kept: list[str] = []
    for _, name in written:
        if name.split(".")[0] not in kept and len(kept) < KEPT_REPOSITORIES:
            kept.append(name.split(".")[0])
    for _, name in written:
        if name.split(".")[0] not in kept:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                continue
