"""``check --statistics``: how many findings each rule made, the rules that fire most first, so
that a team adopting the tool sees which rules to fix or to waive."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from triton_doctor.findings import Finding


def per_rule(findings: Iterable[Finding]) -> dict[str, dict[str, Any]]:
    """Each rule that made a finding: its name, severity and count, most findings first (ties
    by rule id)."""
    findings = list(findings)
    counts = Counter(f.rule for f in findings)
    first = {f.rule: f for f in reversed(findings)}
    return {rule: {"name": first[rule].name, "severity": str(first[rule].severity),
                   "count": count}
            for rule, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))}


def table(statistics: dict[str, dict[str, Any]]) -> str:
    """The text table printed after the report; a line saying so when no rule fired."""
    if not statistics:
        return "statistics: no findings\n"
    lines = ["statistics:", f"  {'count':>5}  rule   {'name':<34} severity"]
    lines += [f"  {row['count']:>5}  {rule}  {row['name']:<34} {row['severity']}"
              for rule, row in statistics.items()]
    return "\n".join(lines) + "\n"
