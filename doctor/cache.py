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

from triton_doctor.safe_files import FileTooLarge, read_file, write_file

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
    """The entries of one repository, read when the run starts and written once at its end
    (``save``), holding only what this run used: a model gone or changed drops its entry."""

    def __init__(self, directory: str, identity: str) -> None:
        self._path = os.path.join(directory, f"{digest(identity)}.json")
        self._directory = directory
        self._tool = tool_stamp()
        old = self._read()
        self._old_models: dict[str, Any] = old.get("models", {})
        self._old_results: list[Any] = old.get("results", [])
        self._models: dict[str, Any] = {}
        self._results: list[Any] = []
        self._changed = False

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(read_file(self._path, MAX_FILE_BYTES))
        except (OSError, FileTooLarge, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("tool") != self._tool:
            return {}
        models, results = data.get("models"), data.get("results")
        return {"models": models if isinstance(models, dict) else {},
                "results": results if isinstance(results, list) else []}

    def model(self, name: str, key: str) -> Any | None:
        """The entry of model ``name`` recorded under ``key``, or None."""
        entry = self._old_models.get(name)
        if isinstance(entry, dict) and entry.get("key") == key and "data" in entry:
            self._models[name] = entry
            return entry["data"]
        return None

    def keep_model(self, name: str, key: str, data: Any) -> None:
        self._models[name] = {"key": key, "data": data}
        self._changed = True

    def result(self, key: str) -> Any | None:
        for entry in self._old_results:
            if isinstance(entry, dict) and entry.get("key") == key and "data" in entry:
                self._results = [entry]
                return entry["data"]
        return None

    def keep_result(self, key: str, data: Any) -> None:
        self._results = [{"key": key, "data": data}]
        self._changed = True

    def save(self) -> None:
        """Write the entries this run used, if any is new or one recorded was not used; the
        other Results recorded stay (another choice of rules may come back). Best effort: a
        cache that cannot be written is no error."""
        others = [entry for entry in self._old_results
                  if isinstance(entry, dict) and entry not in self._results]
        dropped = set(self._old_models) - set(self._models)
        if not (self._changed or dropped):
            return
        document = {"format": FORMAT, "tool": self._tool, "models": self._models,
                    "results": (self._results + others)[:KEPT_RESULTS]}
        try:
            os.makedirs(self._directory, mode=0o700, exist_ok=True)
            write_file(self._path, json.dumps(document, separators=(",", ":")).encode())
            _prune(self._directory)
        except (OSError, ValueError):
            return


def _prune(directory: str) -> None:
    """Keep the KEPT_REPOSITORIES most recently written repositories' files."""
    with os.scandir(directory) as listing:
        files = [(entry.stat().st_mtime_ns, entry.path) for entry in listing
                 if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)]
    for _, path in sorted(files, reverse=True)[KEPT_REPOSITORIES:]:
        try:
            os.unlink(path)
        except OSError:
            continue
