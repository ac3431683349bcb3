"""GitHub Actions workflow commands: one annotation per finding on its file line.

A repository under review chooses its directory names and config text, so nothing it wrote may
end a command early or start one of its own: the message escapes ``%``, CR and LF (the runner
decodes them back), and the properties escape ``:`` and ``,`` too. Terminal controls are
shown as escapes, as in the text report.
"""

from __future__ import annotations

from collections.abc import Sequence

from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import printable
from triton_doctor.report.places import Part, Places, relative

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def message_escaped(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def property_escaped(text: str) -> str:
    return message_escaped(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(finding: Finding, places: Places, base: str) -> str:
    properties = []
    place = places.of(finding)
    if place is not None:
        path, line = place
        properties += [f"file={property_escaped(printable(relative(path, base)))}",
                       f"line={line}"]
    title = f"{finding.rule} {finding.name}" + (f" ({finding.model})" if finding.model else "")
    properties.append(f"title={property_escaped(printable(title))}")
    lines = [finding.message]
    if finding.triton_message:
        lines.append(f"Triton: {finding.triton_message}")
    if finding.fix:
        lines.append(f"Fix: {finding.fix}")
    text = "\n".join(printable(line, keep_newlines=True) for line in lines)
    return f"::{COMMAND[finding.severity]} {','.join(properties)}::{message_escaped(text)}\n"


def render(parts: Sequence[Part], base: str) -> str:
    annotations = []
    for evidence, result in parts:
        places = Places(evidence)
        annotations += [_annotation(f, places, base) for f in result.findings]
    return "".join(annotations)
