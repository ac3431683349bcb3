"""Docs are generated from the rules' docstrings: the committed copies must be current."""

from __future__ import annotations

import re

from triton_doctor import docs
from triton_doctor.catalogue import all_rules

from tests.helpers import ROOT


def test_readme_rules_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text()
    assert docs.with_table(readme) == readme, "run: python -m triton_doctor.docs"


def test_rules_reference_is_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == docs.rules_reference()


def test_readme_demo_summary_is_current() -> None:
    summary = docs.demo_summary(ROOT)
    readme = (ROOT / "README.md").read_text()
    assert summary in readme, "run: python -m triton_doctor.docs"
    assert docs.with_summary(readme, summary) == readme


def test_docs_rewrite_the_summary_line_only() -> None:
    readme = "intro\n```\n$ triton-doctor check demo\n✗ 1 error in 1 model · 3 rules\n```\n"
    rewritten = docs.with_summary(readme, "✓ 0 errors in 1 model · 4 rules")
    assert rewritten == readme.replace("✗ 1 error in 1 model · 3 rules",
                                       "✓ 0 errors in 1 model · 4 rules")


def test_readme_shows_the_alerting_configurations_the_end_to_end_test_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    examples = sorted((ROOT / "docs" / "alerting").iterdir())
    assert [path.name for path in examples] == ["alertmanager.yml", "prometheus.yml",
                                                "triton-doctor.tmpl"]
    for path in examples:
        assert f"\n{path.read_text()}```\n" in readme, f"README.md: paste {path} as it is"


def test_each_rules_anchor_is_the_id_its_heading_gets_in_docs_rules_md() -> None:
    """GitHub's and GitLab's heading ids: lowercase, punctuation but - dropped, spaces to -."""
    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / "rules.md").read_text(), re.MULTILINE)
    slugs = [re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings]
    assert slugs == [rule.anchor for rule in all_rules()]
    assert all(rule.section("Fix") for rule in all_rules())
