"""The text report over the repositories of one ``check`` (one or several): each
repository's findings under its name and its own summary line, then the total (the JSON
report's summary of each is ``json_report.summaries``)."""

from __future__ import annotations

from collections.abc import Sequence

from triton_doctor.findings import Severity
from triton_doctor.printable import printable
from triton_doctor.report import text
from triton_doctor.report.json_report import Part
from triton_doctor.result import merged


def render(parts: Sequence[Part], colour: bool = False, settings: str | None = None,
           gpus: int | None = None, quiet_below: Severity | None = None) -> str:
    """``quiet_below`` (``--quiet``): only the findings at or above it, without the header
    lines, and nothing at all when none reaches it; the summary lines count them all."""
    total = merged([result for _, result in parts])
    total_parts = len(parts)
    if quiet_below is not None:
        if not any(f.severity >= quiet_below for f in total.findings):
            return ""
        parts = [(path, result) for path, result in parts
                 if any(f.severity >= quiet_below for f in result.findings)]
        settings, gpus = None, None
    lowest = quiet_below or Severity.INFO
    if total_parts == 1:
        path, result = parts[0]
        return text.render(result, colour, path, settings, gpus, lowest)
    out = text.header(settings, gpus)
    for path, result in parts:
        out += [f"repository: {printable(path or '')}",
                text.render(result, colour, path, lowest=lowest)]
    out.append(text.summary_line(total, colour, f"{total_parts} repositories: "))
    return "\n".join(out) + "\n"
