"""Docs are generated from the rules' docstrings: the committed copies must be current."""

from __future__ import annotations

from triton_doctor import docs

from tests.helpers import ROOT


def test_readme_rules_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    assert docs.with_table(readme) == readme, "run: python -m triton_doctor.docs"


def test_rules_reference_is_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == docs.rules_reference()
