"""A rule's findings on its failing fixture, pinned in ``fixtures/rules/<ID>/fail/findings.txt``.

Firing is not enough: a changed message, line, field or fix must fail a test and show up in
review, as pylint's functional ``.txt`` files and ruff's snapshots do. One block per finding,
in a stable order: a header ``<rule> <severity>``, then a ``key: value`` line for each of
model, version, path, line, field, message, triton_message and fix that is set. The lines of
a value of several lines (a config block in a fix) stay under its first line. Paths are
relative to the fixture's repository and the repository in text is ``<repo>``, so the file
reads the same wherever the test copied the fixture. Text goes through ``printable``, as the
text report shows it. The server ignores plain files at the repository root, so the file
changes no finding of any rule.

After a deliberate change, read the new findings and store them:

    TD_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_rule_fixtures.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest
from triton_doctor.findings import Finding
from triton_doctor.printable import printable

NAME = "findings.txt"
UPDATE = os.environ.get("TD_UPDATE_SNAPSHOTS") == "1"
HOW_TO_UPDATE = "TD_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_rule_fixtures.py"
REPOSITORY = "<repo>"
LABEL = len("triton_message: ")


def _relative(path: str, repository: str) -> str:
    if path == repository:
        return "."
    return path.removeprefix(repository + "/")


def _fields(finding: Finding, repository: str) -> list[tuple[str, object]]:
    where = finding.location
    text = {
        "message": finding.message,
        "triton_message": finding.triton_message,
        "fix": finding.fix,
    }
    return [
        ("model", finding.model),
        ("version", finding.version),
        ("path", where.path and _relative(where.path, repository)),
        ("line", where.line),
        ("field", where.field),
        *((key, value and value.replace(repository, REPOSITORY)) for key, value in text.items()),
    ]


def _block(finding: Finding, repository: str) -> list[str]:
    lines = [f"{finding.rule} {finding.severity}"]
    for key, value in _fields(finding, repository):
        if value is None:
            continue
        first, *rest = printable(str(value), keep_newlines=True).split("\n")
        lines.append(f"  {key + ':':<{LABEL}}{first}")
        lines.extend(" " * (2 + LABEL) + line for line in rest)
    return lines


def render(rule_id: str, findings: list[Finding], repository: Path) -> str:
    """The text pinned for ``findings`` of ``rule_id`` on the fixture at ``repository``."""
    blocks = sorted("\n".join(_block(f, str(repository))) for f in findings)
    header = (f"# {rule_id}'s findings on this repository, compared exactly by "
              f"tests/test_rule_fixtures.py.\n# To rewrite them: {HOW_TO_UPDATE}\n")
    return "\n\n".join([header.rstrip("\n"), *blocks]) + "\n"


def assert_pinned(stored: Path, actual: str) -> None:
    """``actual`` is what ``stored`` holds; under TD_UPDATE_SNAPSHOTS=1 it is stored instead."""
    if UPDATE:
        stored.write_text(actual, encoding="utf-8")
        return
    if not stored.exists():
        pytest.fail(f"{stored} is missing; to write it: {HOW_TO_UPDATE}", pytrace=False)
    expected = stored.read_text(encoding="utf-8")
    if actual == expected:
        return
    changed = "\n".join(difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "pinned", "found now", lineterm=""))
    pytest.fail(f"the findings differ from {stored}.\nIf the change is intended, store it: "
                f"{HOW_TO_UPDATE}\n{changed}", pytrace=False)
