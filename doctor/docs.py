"""Rule documentation generated from the registry, so nothing is written twice.

``python -m triton_doctor.docs`` rewrites the rules table in README.md and docs/rules.md.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from triton_doctor.catalogue import all_rules

BEGIN, END = "<!-- rules:begin -->", "<!-- rules:end -->"


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


def main(root: Path) -> None:
    readme = root / "README.md"
    readme.write_text(with_table(readme.read_text()))
    (root / "docs" / "rules.md").write_text(rules_reference())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
