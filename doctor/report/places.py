"""Where a CI's file view shows each finding: a file and a line, always where one exists.

Code scanning, workflow annotations and merge-request widgets drop a result that names no file
line. A finding on a line keeps it; one about a file (a model plan) points at its line 1; one
about a directory, or a live finding, points at its model's config.pbtxt line 1 when the model
has one, else at the directory itself (the repository's root for a finding about all of it). A
run with no repository (a server alone) has no file: its findings have a model and no place.
"""

from __future__ import annotations

import functools
import os

from triton_doctor.evidence import Evidence, ModelDir
from triton_doctor.findings import Finding
from triton_doctor.result import Result

#: One repository of a ``check`` (or a run without one) and its Result.
Part = tuple[Evidence, Result]


class Places:
    """The files of one repository's Evidence that a finding may point at."""

    def __init__(self, evidence: Evidence) -> None:
        self._repository = evidence.repository
        self.root = self._repository.path if self._repository else None

    @functools.cached_property
    def _models(self) -> list[ModelDir]:
        """Asked only for a finding without a line: models the cache holds are then read."""
        return self._repository.models if self._repository else []

    @functools.cached_property
    def configs(self) -> dict[str, str]:
        return {m.name: m.config.path for m in self._models if m.config.present}

    @functools.cached_property
    def directories(self) -> set[str]:
        directories = {self.root} if self.root else set()
        for model in self._models:
            directories.add(model.path)
            directories.update(f"{model.path}/{entry.rstrip('/')}"
                               for entry in model.tree if entry.endswith("/"))
        return directories

    def of(self, finding: Finding) -> tuple[str, int] | None:
        """The file and line that ``finding`` is shown on, or None when it has no file."""
        path, line = finding.location.path, finding.location.line
        if path and line:
            return path, line
        if path and path not in self.directories:
            return path, 1
        config = self.configs.get(finding.model or "")
        if config:
            return config, 1
        path = path or self.root
        return (path, 1) if path else None


def relative(path: str, base: str) -> str:
    """``path`` relative to ``base`` with "/" separators, as CI systems name files; a path
    outside ``base`` stays absolute."""
    inside = os.path.relpath(os.path.abspath(path), base)
    if inside == os.pardir or inside.startswith(os.pardir + os.sep):
        return os.path.abspath(path).replace(os.sep, "/")
    return inside.replace(os.sep, "/")


def label(evidence: Evidence) -> str:
    """What a part is called in a report: its repository, its server, or the tool's name."""
    if evidence.repository is not None:
        return evidence.repository.path
    if evidence.server is not None:
        return evidence.server.url
    return "triton-doctor"

