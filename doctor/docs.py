"""Rule documentation generated from the registry, so nothing is written twice.

``python -m triton_doctor.docs`` rewrites the rules table in README.md, the demo's summary line
at its top (which counts the rules) and docs/rules.md: a new rule needs nothing written by hand
outside its module and its fixtures.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from triton_doctor.catalogue import all_rules

BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"
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


def with_table(readme: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    return pattern.sub(lambda _: f"{BEGIN}\n{rules_table()}\n{END}", readme)


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
