"""The Evidence: everything the collectors saw, typed and JSON-serialisable.

Rules judge only this. Each part is present or carries the reason it could not be collected,
so a rule can say "skipped: <why>" instead of guessing.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from triton_doctor import model_config

EVIDENCE_SCHEMA = 1


@dataclass
class ConfigFile:
    """One model's config.pbtxt as read from disk (``text`` is None when it could not be read)."""

    path: str
    present: bool
    text: str | None = None
    size_bytes: int = 0
    #: Why the file could not be read as text (a directory, unreadable, binary, too large).
    unreadable: str | None = None
    #: Where and why the text does not parse as ``inference.ModelConfig``.
    syntax_error: model_config.SyntaxProblem | None = None
    _parsed: Any = field(default=None, repr=False, compare=False, metadata={"transient": True})

    def message(self) -> Any | None:
        """The parsed ModelConfig, or None when the file is absent, unreadable or malformed."""
        if self._parsed is None and self.text is not None and self.syntax_error is None:
            try:
                self._parsed = model_config.parse(self.text)
            except model_config.ConfigSyntaxError as error:
                self.syntax_error = error.problem
        return self._parsed


@dataclass
class PythonSource:
    """What ``ast`` sees in a .py file of a version directory (it is never imported)."""

    name: str
    #: Whether a module-level class TritonPythonModel is defined.
    has_model_class: bool = False
    #: Methods defined in TritonPythonModel.
    methods: list[str] = field(default_factory=list)
    syntax_error: str | None = None


@dataclass
class Subdir:
    """A subdirectory of a model directory (a version directory, or something else)."""

    name: str
    #: Names of the entries inside it; directories end with "/".
    entries: list[str] = field(default_factory=list)
    unreadable: str | None = None
    #: The Python files directly inside it, as ``ast`` reads them.
    python: list[PythonSource] = field(default_factory=list)


@dataclass
class ModelDir:
    """A subdirectory of the repository: the server treats every one as a model."""

    name: str
    path: str
    config: ConfigFile
    subdirs: list[Subdir] = field(default_factory=list)
    #: Every path below the model directory (relative, "/"-separated, directories end with "/"),
    #: up to a depth and count limit: enough to resolve label, warmup and runtime references.
    tree: list[str] = field(default_factory=list)
    #: Sizes in bytes of the data files the server reads: ``warmup/*``, ``initial_state/*``.
    data_files: dict[str, int] = field(default_factory=dict)
    unreadable: str | None = None


@dataclass
class RepositoryEvidence:
    path: str
    models: list[ModelDir] = field(default_factory=list)


@dataclass
class CheckOptions:
    """How the target server runs, as far as static checks care."""

    #: Mirrors tritonserver --disable-auto-complete-config.
    disable_auto_complete_config: bool = False


@dataclass
class Evidence:
    repository: RepositoryEvidence | None = None
    options: CheckOptions = field(default_factory=CheckOptions)
    #: Parts that were asked for but could not be collected: part name -> why.
    unavailable: dict[str, str] = field(default_factory=dict)
    schema: int = EVIDENCE_SCHEMA


def to_jsonable(value: Any) -> Any:
    """Evidence as plain JSON data (transient caches left out)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.metadata.get("transient")
        }
    if isinstance(value, list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    return value


def from_jsonable(cls: Any, data: Any) -> Any:
    """Rebuild a dataclass tree written by ``to_jsonable``, driven by the type hints."""
    origin = typing.get_origin(cls)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        options = [arg for arg in typing.get_args(cls) if arg is not type(None)]
        return from_jsonable(options[0], data)
    if origin is list:
        (item_type,) = typing.get_args(cls)
        return [from_jsonable(item_type, item) for item in data]
    if origin is dict:
        _, item_type = typing.get_args(cls)
        return {key: from_jsonable(item_type, item) for key, item in data.items()}
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        kwargs = {
            f.name: from_jsonable(hints[f.name], data[f.name])
            for f in dataclasses.fields(cls)
            if f.name in data and not f.metadata.get("transient")
        }
        return cls(**kwargs)  # type: ignore[operator]
    return data
