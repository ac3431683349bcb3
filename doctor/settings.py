"""Project settings: ``.triton-doctor.toml``, or ``[tool.triton-doctor]`` in pyproject.toml.

Command-line flags win over the file. Example::

    select = ["TD1", "TD2"]
    ignore = ["batching-without-dynamic-batcher"]
    fail-on = "warning"
    disable-auto-complete-config = true
    triton-version = "24.08"     # the release the repository is deployed with
    gpu = "L4"                   # the GPU it runs on (a name, sm_89 or 8.9)
    backends = ["mybackend"]     # backends installed in the image beyond the release's own

    [[waive]]
    rules = ["TD217"]
    models = ["video_*"]
    reason = "video models take a variable number of frames first"
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from triton_doctor.registry import key_matches

FILE_NAME = ".triton-doctor.toml"
KEYS = {
    "select", "ignore", "fail-on", "disable-auto-complete-config", "model-config-name", "waive",
    "triton-version", "gpu", "backends", "thresholds",
}


class SettingsError(ValueError):
    """The settings file is unreadable or says something this version does not understand."""


@dataclass(frozen=True)
class ModelWaiver:
    """Rules waived for the models whose directory names match one of the globs."""

    rules: tuple[str, ...]
    models: tuple[str, ...]
    reason: str

    def covers(self, rule_id: str, rule_name: str, model: str | None) -> bool:
        return any(key_matches(rule_id, rule_name, key) for key in self.rules) and any(
            fnmatchcase(model or "", glob) for glob in self.models
        )


@dataclass
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "error"
    disable_auto_complete_config: bool = False
    model_config_name: str | None = None
    triton_version: str | None = None
    gpu: str | None = None
    backends: list[str] = field(default_factory=list)
    #: Live-rule thresholds by name (defaults in triton_doctor.live_view.THRESHOLDS).
    thresholds: dict[str, float] = field(default_factory=dict)
    waivers: list[ModelWaiver] = field(default_factory=list)
    #: The file the settings came from, for messages.
    source: str | None = None


def find_settings_file(start: Path) -> tuple[Path, bool] | None:
    """(path, is pyproject) of the nearest settings file at ``start`` or above it."""
    for directory in [start, *start.parents]:
        own = directory / FILE_NAME
        if _is_file(own):
            return own, False
        pyproject = directory / "pyproject.toml"
        if _is_file(pyproject) and "[tool.triton-doctor]" in _read(pyproject):
            return pyproject, True
    return None


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
    if is_pyproject:
        data = data.get("tool", {}).get("triton-doctor", {})
    return _parse(data, str(path))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{path}: cannot be read: {error}") from None


def _parse(data: dict[str, Any], source: str) -> Settings:
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise SettingsError(
            f"{source}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(KEYS))}"
        )
    settings = Settings(
        select=_strings(data, "select", source),
        ignore=_strings(data, "ignore", source),
        fail_on=str(data.get("fail-on", "error")),
        disable_auto_complete_config=bool(data.get("disable-auto-complete-config", False)),
        model_config_name=data.get("model-config-name"),
        triton_version=_optional_string(data, "triton-version", source),
        gpu=_optional_string(data, "gpu", source),
        backends=_strings(data, "backends", source),
        thresholds=_thresholds(data, source),
        source=source,
    )
    if settings.fail_on not in ("error", "warning", "info"):
        raise SettingsError(f"{source}: fail-on must be error, warning or info")
    for index, entry in enumerate(data.get("waive", [])):
        where = f"{source}: waive #{index + 1}"
        if not isinstance(entry, dict) or not str(entry.get("reason", "")).strip():
            raise SettingsError(f"{where} needs a reason")
        rules = _strings(entry, "rules", where)
        if not rules:
            raise SettingsError(f"{where} names no rules")
        models = _strings(entry, "models", where) or ["*"]
        settings.waivers.append(ModelWaiver(tuple(rules), tuple(models), str(entry["reason"])))
    return settings


def _strings(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{where}: {key} must be a list of strings")
    return value


def _optional_string(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"{where}: {key} must be a string")
    return value


def _thresholds(data: dict[str, Any], where: str) -> dict[str, float]:
    from triton_doctor.live_view import THRESHOLDS

    table = data.get("thresholds", {})
    if not isinstance(table, dict):
        raise SettingsError(f"{where}: thresholds must be a table")
    unknown = sorted(set(table) - set(THRESHOLDS))
    if unknown:
        raise SettingsError(
            f"{where}: unknown threshold(s) {', '.join(unknown)}; known: "
            f"{', '.join(sorted(THRESHOLDS))}"
        )
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in table.values()):
        raise SettingsError(f"{where}: thresholds must be numbers")
    return {key: float(value) for key, value in table.items()}
