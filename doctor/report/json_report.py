"""The JSON report: a stable, versioned document (schema in doctor/schema/report.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from triton_doctor import __version__
from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import json_printable
from triton_doctor.result import Result

REPORT_SCHEMA = "triton-doctor/report/v1"
#: A repository's path (None for a run without one: a server, a snapshot) and its Result.
Part = tuple["str | None", Result]


def finding_dict(finding: Finding) -> dict[str, Any]:
    """A finding as the schema's ``finding`` (``instance`` only for a fleet's replica)."""
    found = {
        "rule": finding.rule,
        "name": finding.name,
        "severity": str(finding.severity),
        "title": finding.title,
        "model": finding.model,
        "version": finding.version,
        "location": {
            "path": finding.location.path,
            "line": finding.location.line,
            "field": finding.location.field,
        },
        "message": finding.message,
        "triton_message": finding.triton_message,
        "fix": finding.fix,
        "evidence": finding.evidence,
        "fingerprint": finding.fingerprint,
    }
    if finding.instance is not None:
        found["instance"] = finding.instance
    return found


def summary(result: Result) -> dict[str, int]:
    counts = {str(s): 0 for s in Severity}
    for finding in result.findings:
        counts[str(finding.severity)] += 1
    return {
        **counts,
        "models": result.models,
        "rules": result.rules_run,
        "skipped": len(result.skipped),
        "suppressed": len(result.suppressed),
        "without_model_files": result.without_model_files,
    }


def summaries(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """``summary.repositories``: each repository's counts, in the order given."""
    return [{"path": path, **summary(result)} for path, result in parts if path is not None]


def render(result: Result, target: dict[str, Any], exit_code: int,
           repositories: list[dict[str, Any]] | None = None,
           statistics: dict[str, Any] | None = None,
           baseline: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """``repositories``: each repository's own summary (``summary.repositories``);
    ``statistics``: the findings counted per rule (``--statistics``); ``baseline``: the
    ``baselined`` and ``fixed`` lists of a run with a baseline (report/baselined.py)."""
    document: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "tool": {"name": "triton-doctor", "version": __version__},
        "target": target,
        "findings": [finding_dict(f) for f in result.findings],
        "skipped": [
            {"rule": s.rule, "model": s.model, "reason": s.reason, "internal": s.internal}
            for s in result.skipped
        ],
        "suppressed": [{**finding_dict(s.finding), "reason": s.reason} for s in result.suppressed],
        "summary": {**summary(result), "exit_code": exit_code},
    }
    if repositories is not None:
        document["summary"]["repositories"] = repositories
    if statistics is not None:
        document["statistics"] = statistics
    document.update(baseline or {})
    return json_printable(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
