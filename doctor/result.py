"""What a check judged: its findings, the rules skipped and why, the findings waived.

Apart from the engine that makes it, so that a run answered from the cache, and every report,
reads a Result without importing the engine, the views and the schema behind them.
"""

from __future__ import annotations

from collections.abc import Sequence

from triton_doctor.findings import Finding, Skipped
from triton_doctor.records import field, record


@record(frozen=True)
class Suppressed:
    finding: Finding
    reason: str


@record
class Result:
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    #: The ids of the rules run (those of a scope the Evidence has), in order.
    applied: list[str] = field(default_factory=list)
    models: int = 0
    #: ``--configs-only``: the models judged without the model file their backend opens.
    without_model_files: int = 0

    @property
    def rules_run(self) -> int:
        return len(self.applied)


def merged(results: Sequence[Result]) -> Result:
    """One Result of several judged apart (``check REPO REPO ...``), in their order."""
    total = Result()
    for result in results:
        total.findings += result.findings
        total.skipped += result.skipped
        total.suppressed += result.suppressed
        total.applied += result.applied
        total.models += result.models
        total.without_model_files += result.without_model_files
    return total
