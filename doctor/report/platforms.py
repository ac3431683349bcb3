"""The reports CI platforms read, by ``--format`` name: each is given every repository's
Evidence and Result, the rules run, the ``--fail-on`` severity and the working directory."""

from __future__ import annotations

from collections.abc import Sequence

from triton_doctor.findings import Finding, Severity
from triton_doctor.registry import Rule
from triton_doctor.report.places import Part


def render(
    name: str, parts: Sequence[Part], rules: list[Rule], fail_on: Severity, base: str,
    baselined: Sequence[Finding] = (), baseline: str | None = None,
) -> str:
    """``baselined``: the findings the ``baseline`` file holds back; SARIF lists them as
    suppressed, the others, like the text report, leave them out."""
    if name == "sarif":
        from triton_doctor.report import sarif

        return sarif.render(parts, rules, base, baselined, baseline)
    if name == "github":
        from triton_doctor.report import github

        return github.render(parts, base)
    if name == "gitlab":
        from triton_doctor.report import gitlab

        return gitlab.render(parts, base)
    if name == "junit":
        from triton_doctor.report import junit

        return junit.render(parts, fail_on, base)
    raise ValueError(f"no report called {name!r}")
