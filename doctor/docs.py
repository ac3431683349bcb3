"""Rule documentation generated from the registry, so nothing is written twice.

``python -m triton_doctor.docs`` rewrites the rules table and the alerts table in README.md,
the demo's summary line at its top (which counts the rules) and docs/rules.md: a new rule or
alert needs nothing written by hand outside its module and its fixtures.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from triton_doctor.alerts.definitions import alerts
from triton_doctor.catalogue import all_rules
from triton_doctor.invocation import Alerting
from triton_doctor.triton.server_model import THRESHOLDS

BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"
ALERTS_BEGIN, ALERTS_END = "<!-- alerts:begin -->", "<!-- alerts:end -->"
#: The last line of ``check`` on the demo repository, as the README's first example shows it.
SUMMARY = re.compile(r"^[✗✓] .* · \d+ rules.*$", re.MULTILINE)


def rules_table() -> str:
    rows = ["| id | name | severity | what |", "|---|---|---|---|"]
    rows += [f"| {r.id} | `{r.name}` | {r.severity} | {r.title} |" for r in all_rules()]
    return "\n".join(rows)


def rules_reference() -> str:
    parts = [
        "# triton-doctor rules",
        "",
        "Generated from the rules' own docstrings by `python -m triton_doctor.docs`; "
        "`triton-doctor explain <id>` prints the same text.",
        "",
    ]
    for candidate in all_rules():
        parts += [
            f"## {candidate.id} `{candidate.name}` ({candidate.severity})",
            "",
            f"**{candidate.title}**",
            "",
            candidate.doc,
            "",
        ]
    return "\n".join(parts)


def alerts_table() -> str:
    """What ``triton-doctor alerts`` writes with the default settings."""
    rows = ["| alert | reads | rule | severity | for |", "|---|---|---|---|---|"]
    rows += [f"| `{a.name}` | {'Triton' if a.group == 'metrics' else 'the exporter'} | "
             f"{a.rule or 'the finding'} | {a.severity or 'the finding'} | {a.hold} |"
             for a in alerts(THRESHOLDS, Alerting())]
    return "\n".join(rows)


def with_table(readme: str) -> str:
    """``readme`` with its generated tables, the rules and the alerts, made anew."""
    readme = _between(readme, BEGIN, END, rules_table())
    return _between(readme, ALERTS_BEGIN, ALERTS_END, alerts_table())


def _between(text: str, begin: str, end: str, inside: str) -> str:
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    return pattern.sub(lambda _: f"{begin}\n{inside}\n{end}", text)


def demo_summary(root: Path) -> str:
    """The summary line ``check`` prints on the bundled demo repository."""
    done = subprocess.run(
        [sys.executable, "-m", "triton_doctor", "check", "--color", "never",
         "fixtures/demo-repository"], cwd=root, capture_output=True, text=True, check=False)
    lines = done.stdout.rstrip().splitlines()
    if not lines or not SUMMARY.match(lines[-1]):
        raise SystemExit(f"check on the demo repository printed no summary: {done.stderr}")
    return lines[-1]


def with_summary(readme: str, summary: str) -> str:
    rewritten, found = SUMMARY.subn(lambda _: summary, readme, count=1)
    if not found:
        raise ValueError("README.md has no summary line of check to rewrite")
    return rewritten


def main(root: Path) -> None:
    readme = root / "README.md"
    readme.write_text(with_summary(with_table(readme.read_text()), demo_summary(root)))
    (root / "docs" / "rules.md").write_text(rules_reference())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
