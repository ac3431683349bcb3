"""Docs are generated from the rules' docstrings: the committed copies must be current."""

from __future__ import annotations

from triton_doctor import docs

from tests.helpers import DEMO, ROOT, run_cli


def test_readme_rules_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    assert docs.with_table(readme) == readme, "run: python -m triton_doctor.docs"


def test_rules_reference_is_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == docs.rules_reference()


def test_readme_demo_summary_is_current() -> None:
    summary = run_cli("check", str(DEMO)).stdout.rstrip().splitlines()[-1]
    assert summary in (ROOT / "README.md").read_text()
