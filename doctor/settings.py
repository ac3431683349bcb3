"""Project settings: ``.triton-doctor.toml``, or ``[tool.triton-doctor]`` in pyproject.toml.

Command-line flags win over the file. Example::

    select = ["TD1", "TD2"]
    ignore = ["batching-without-dynamic-batcher"]
    fail-on = "warning"
    disable-auto-complete-config = true
    configs-only = true          # the checkout holds configurations, not model files
    triton-version = "24.08"     # the release the repository is deployed with
    gpu = "L4"                   # the GPU it runs on (a name, sm_89 or 8.9)
    gpus = 0                     # how many GPUs the server can use (0: a CPU-only server)
    backends = ["mybackend"]     # backends installed in the image beyond the release's own
    repo-agents = ["decrypt"]    # repository agents installed beyond the release's own
    baseline = "triton-doctor-baseline.json"  # known findings, not counted (beside this file)

    [[waive]]
    rules = ["TD217"]
    models = ["video_*"]
    reason = "video models take a variable number of frames first"

Which file applies: the one given with ``--config``; else the nearest ``.triton-doctor.toml``
(or ``pyproject.toml`` with ``[tool.triton-doctor]``) in the repository's directory or above it,
up to and including the project root: the nearest directory, from the repository up, holding
``.git`` (a directory or a file), ``.hg`` or a ``pyproject.toml``. Nothing above the project root
is looked at, and with no project root at all only the repository's own directory is: a file in
a shared directory (``/tmp``, a home directory without a VCS) could otherwise switch every rule
off for every repository under it, unseen. The file that applied is named in every report.

Every value is checked for its type and range: a malformed file is a usage error (exit 2) that
names the file and the key, never a traceback, and never a half-applied file.
"""

from __future__ import annotations

import math
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from triton_doctor.records import field, record
from triton_doctor.registry import key_matches
from triton_doctor.safe_files import read_file

FILE_NAME = ".triton-doctor.toml"
#: A settings file is a few hundred bytes: a larger one is refused, not read into memory whole.
MAX_SETTINGS_BYTES = 1024 * 1024
#: What marks a project root: settings discovery stops there (see the module docstring).
PROJECT_MARKERS = (".git", ".hg", "pyproject.toml")
KEYS = {
    "select", "ignore", "fail-on", "disable-auto-complete-config", "model-config-name", "waive",
    "triton-version", "gpu", "gpus", "backends", "repo-agents", "thresholds", "configs-only",
    "baseline",
}


class SettingsError(ValueError):
    """The settings file is unreadable or says something this version does not understand."""


@record(frozen=True)
class ModelWaiver:
    """Rules waived for the models whose directory names match one of the globs."""

    rules: tuple[str, ...]
    models: tuple[str, ...]
    reason: str

    def covers(self, rule_id: str, rule_name: str, model: str | None) -> bool:
        return any(key_matches(rule_id, rule_name, key) for key in self.rules) and any(
            fnmatchcase(model or "", glob) for glob in self.models
        )


@record
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "error"
    disable_auto_complete_config: bool = False
    configs_only: bool = False
    model_config_name: str | None = None
    triton_version: str | None = None
    gpu: str | None = None
    gpus: int | None = None
    backends: list[str] = field(default_factory=list)
    repo_agents: list[str] = field(default_factory=list)
    #: Live-rule thresholds by name (defaults in triton_doctor.triton.server_model.THRESHOLDS).
    thresholds: dict[str, float] = field(default_factory=dict)
    waivers: list[ModelWaiver] = field(default_factory=list)
    #: The baseline file (``check --baseline``), its path resolved from the settings file's.
    baseline: str | None = None
    #: The file the settings came from, for messages.
    source: str | None = None


def find_settings_file(start: Path) -> tuple[Path, bool] | None:
    """(path, is pyproject) of the nearest settings file from ``start`` up to its project root,
    or in ``start`` alone when no directory above it is a project root."""
    directories = [start, *start.parents]
    root = next((i for i, d in enumerate(directories) if _is_project_root(d)), 0)
    for directory in directories[: root + 1]:
        own = directory / FILE_NAME
        if _is_file(own):
            return own, False
        pyproject = directory / "pyproject.toml"
        if _is_file(pyproject) and "[tool.triton-doctor]" in _read(pyproject):
            return pyproject, True
    return None


def _is_project_root(directory: Path) -> bool:
    for marker in PROJECT_MARKERS:
        try:
            if (directory / marker).exists():
                return True
        except OSError:  # an unreadable directory on the way: not known to be one
            continue
    return False


def _is_file(path: Path) -> bool:
    """Like Path.is_file, but an unreadable directory on the way means "not here"."""
    try:
        return path.is_file()
    except OSError:
        return False


def load_settings(explicit: str | None, start: Path) -> Settings:
    """Settings from ``explicit`` (a path), or the nearest file above ``start``, or defaults."""
    if explicit:
        path, is_pyproject = Path(explicit), Path(explicit).name == "pyproject.toml"
    else:
        found = find_settings_file(start)
        if found is None:
            return Settings()
        path, is_pyproject = found
    # Imported here: most runs have no settings file, and every run pays for its imports.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: not valid TOML: {error}") from None
    except (RecursionError, MemoryError):  # arrays or tables nested past Python's stack
        raise SettingsError(f"{path}: nested too deeply to read; a settings file is a few "
                            "flat tables") from None
    if is_pyproject:
        data = _table(_table(data, "tool", "[tool]", path), "triton-doctor",
                      "[tool.triton-doctor]", path)
    return _parse(data, str(path))


def _read(path: Path) -> str:
    try:
        return read_file(path, MAX_SETTINGS_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{path}: cannot be read: {error}") from None


def _parse(data: dict[str, Any], source: str) -> Settings:
    _no_unknown(data, KEYS, "setting", source)
    fail_on = _optional_string(data, "fail-on", source)
    if fail_on not in (None, "error", "warning", "info"):
        raise SettingsError(f"{source}: fail-on must be \"error\", \"warning\" or \"info\", "
                            f"not {fail_on!r}")
    auto_complete = data.get("disable-auto-complete-config", False)
    if not isinstance(auto_complete, bool):
        raise SettingsError(f"{source}: disable-auto-complete-config must be true or false, "
                            f"not {_kind(auto_complete)}")
    configs_only = data.get("configs-only", False)
    if not isinstance(configs_only, bool):
        raise SettingsError(f"{source}: configs-only must be true or false, "
                            f"not {_kind(configs_only)}")
    return Settings(
        select=_strings(data, "select", source),
        ignore=_strings(data, "ignore", source),
        fail_on=fail_on or "error",
        disable_auto_complete_config=auto_complete,
        configs_only=configs_only,
        model_config_name=_config_name(data, source),
        triton_version=_optional_string(data, "triton-version", source),
        gpu=_optional_string(data, "gpu", source),
        gpus=_gpus(data, source),
        backends=_strings(data, "backends", source),
        repo_agents=_strings(data, "repo-agents", source),
        thresholds=_thresholds(data, source),
        waivers=_waivers(data, source),
        baseline=_beside(_optional_string(data, "baseline", source), source),
        source=source,
    )


def _beside(path: str | None, source: str) -> str | None:
    """A path the settings file names, from the file's directory (where it is checked in)."""
    return str(Path(source).parent / path) if path else None


def _waivers(data: dict[str, Any], source: str) -> list[ModelWaiver]:
    entries = data.get("waive", [])
    if not isinstance(entries, list):
        raise SettingsError(f"{source}: waive must be an array of tables ([[waive]] entries), "
                            f"not {_kind(entries)}")
    waivers = []
    for index, entry in enumerate(entries):
        where = f"{source}: waive #{index + 1}"
        if not isinstance(entry, dict):
            raise SettingsError(f"{where} must be a table with rules, models and a reason, "
                                f"not {_kind(entry)}")
        _no_unknown(entry, {"rules", "models", "reason"}, "key", where)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise SettingsError(f"{where} needs a reason (a non-empty string)")
        rules = _strings(entry, "rules", where)
        if not rules:
            raise SettingsError(f"{where} names no rules")
        models = _strings(entry, "models", where) or ["*"]
        waivers.append(ModelWaiver(tuple(rules), tuple(models), reason))
    return waivers


def _table(data: dict[str, Any], key: str, name: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f"{path}: {name} must be a table, not {_kind(value)}; write it as "
                            f"{name} with key = value lines under it")
    return value


def _no_unknown(table: dict[str, Any], known: set[str] | dict[str, Any], what: str,
                where: str) -> None:
    """A misspelt key is an error, not silently ignored: say which, and the likely one."""
    unknown = sorted(set(table) - set(known))
    if unknown:
        from difflib import get_close_matches  # only for a mistyped key

        named = []
        for key in unknown:
            close = get_close_matches(key, list(known), n=1)
            named.append(f"{key} (did you mean {close[0]}?)" if close else key)
        raise SettingsError(f"{where}: unknown {what}(s) {', '.join(named)}; known: "
                            f"{', '.join(sorted(known))}")


def _kind(value: Any) -> str:
    """A TOML value's type in TOML's words, for messages."""
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
             list: "an array", dict: "a table"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def _strings(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: {key} must be a list of strings (ids, id prefixes or "
                            f"names, as in [\"TD2\", \"invalid-dims\"]), not {_kind(value)}")
    return value


def _optional_string(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"{where}: {key} must be a string, not {_kind(value)}")
    return value


def _config_name(data: dict[str, Any], where: str) -> str | None:
    """model-config-name names ``configs/NAME.pbtxt`` in each model: a bare name, since a
    settings file comes with the repository and must not point the tool at files elsewhere."""
    name = _optional_string(data, "model-config-name", where)
    if name is not None and (not name or "/" in name or "\\" in name or name in (".", "..")):
        raise SettingsError(f"{where}: model-config-name must be a bare name (the NAME of "
                            f"configs/NAME.pbtxt), not {name!r}")
    return name


def _gpus(data: dict[str, Any], where: str) -> int | None:
    from triton_doctor.triton.normalize import MAX_GPUS

    value = data.get("gpus")
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or not 0 <= value <= MAX_GPUS):
        raise SettingsError(f"{where}: gpus must be a whole number, 0 to {MAX_GPUS} (0: a "
                            f"CPU-only server), not {value!r}")
    return value


def _thresholds(data: dict[str, Any], where: str) -> dict[str, float]:
    from triton_doctor.triton.server_model import SHARES, THRESHOLDS

    table = data.get("thresholds", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{where}: thresholds must be a table ([thresholds] with name = "
                            f"number lines), not {_kind(table)}")
    _no_unknown(table, THRESHOLDS, "threshold", where)
    for key, value in table.items():
        high = 1.0 if key in SHARES else math.inf
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not (math.isfinite(value) and 0 <= value <= high)):
            bounds = "0 to 1 (a share)" if key in SHARES else "0 or more, finite"
            raise SettingsError(f"{where}: thresholds.{key} must be a number, {bounds}; not "
                                f"{value!r} (the default is {THRESHOLDS[key]:g})")
    return {key: float(value) for key, value in table.items()}
