"""GitLab Code Quality: the JSON list a merge request's widget and diff annotations read."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import json_printable
from triton_doctor.report.places import Part, Places, relative

SEVERITY = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def _issue(finding: Finding, places: Places, base: str) -> dict[str, Any]:
    place = places.of(finding)
    path, line = (relative(place[0], base), place[1]) if place else ("", 1)
    description = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
    # GitLab matches issues across pipelines by fingerprint, which must be unique in a report:
    # the finding's own, told apart by its file when two repositories hold the same problem.
    fingerprint = hashlib.sha256(
        f"{finding.fingerprint}\x1f{path}".encode("utf-8", "surrogatepass")).hexdigest()
    return {
        "type": "issue",
        "check_name": f"{finding.rule} {finding.name}",
        "description": description,
        "categories": ["Bug Risk"],
        "severity": SEVERITY[finding.severity],
        "fingerprint": fingerprint,
        "location": {"path": path, "lines": {"begin": line}},
    }


def render(parts: Sequence[Part], base: str) -> str:
    issues = []
    for evidence, result in parts:
        places = Places(evidence)
        issues += [_issue(f, places, base) for f in result.findings]
    return json_printable(json.dumps(issues, indent=2, ensure_ascii=False)) + "\n"
