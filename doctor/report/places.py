"""Where a CI's file view shows each finding: a file and a line, always where one exists.

Code scanning, workflow annotations and merge-request widgets drop a result that names no file
line. A finding on a line keeps it; one about a file (a model plan) points at its line 1; one
about a directory, or a live finding, points at its model's config.pbtxt line 1 when the model
has one, else at the directory itself (the repository's root for a finding about all of it). A
run with no repository (a server alone) has no file: its findings have a model and no place.
"""

from __future__ import annotations

import os

from triton_doctor.engine import Result
from triton_doctor.evidence import Evidence
from triton_doctor.findings import Finding

#: One repository of a ``check`` (or a run without one) and its Result.
Part = tuple[Evidence, Result]


class Places:
    """The files of one repository's Evidence that a finding may point at."""

    def __init__(self, evidence: Evidence) -> None:
        repository = evidence.repository
        models = repository.models if repository else []
        self.configs = {m.name: m.config.path for m in models if m.config.present}
        self.root = repository.path if repository else None
        self.directories = {self.root} if self.root else set()
        for model in models:
            self.directories.add(model.path)
            self.directories.update(f"{model.path}/{entry.rstrip('/')}"
                                    for entry in model.tree if entry.endswith("/"))

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

