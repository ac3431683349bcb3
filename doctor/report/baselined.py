"""What a baseline did, for the reports: the findings it held back and those it records that are
gone (doctor/baseline.py)."""

from __future__ import annotations

from typing import Any

from triton_doctor.baseline import Applied
from triton_doctor.printable import printable
from triton_doctor.report.json_report import finding_dict


def json_parts(applied: Applied) -> dict[str, list[dict[str, Any]]]:
    """The JSON report's ``baselined`` (findings, as in ``findings``) and ``fixed`` lists."""
    return {
        "baselined": [finding_dict(f) for f in applied.baselined],
        "fixed": [e.as_dict() for e in applied.fixed],
    }


def text(applied: Applied, path: str) -> str:
    """A count line, each baselined finding marked as such on one line, and the fixed ones."""
    lines = [f"baselined: {len(applied.baselined)} known finding"
             f"{'' if len(applied.baselined) == 1 else 's'} in {printable(path)}, not counted"]
    for finding in applied.baselined:
        lines.append(f"  [baselined] {finding.rule} {printable(finding.model or '(repository)')}"
                     f": {printable(finding.message)}")
    if applied.fixed:
        lines.append(f"fixed: {len(applied.fixed)} baselined finding"
                     f"{'' if len(applied.fixed) == 1 else 's'} no longer found: "
                     + ", ".join(f"{e.rule} {printable(e.model or '(repository)')}"
                                 for e in applied.fixed))
    return "\n".join(lines) + "\n"
