"""JUnit XML, which every CI renders as tests: a suite per repository, a case per model, a
failure listing the model's findings at or above ``--fail-on`` (those below are in its
system-out). Findings of no model are the case ``(repository)``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence

from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import printable
from triton_doctor.report.places import Part, Places, label, relative

NO_MODEL = "(repository)"
#: What XML 1.0 cannot hold at all, even escaped (printable() lets U+FFFE, U+FFFF through).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: str) -> str:
    """``value`` shown as printable() shows it, and whatever XML forbids as a \\uXXXX escape."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", printable(value))


def _line(finding: Finding, places: Places, base: str) -> str:
    place = places.of(finding)
    where = f"{relative(place[0], base)}:{place[1]}: " if place else ""
    return f"{where}{finding.rule} {finding.severity} {finding.name}: {finding.message}"


def _suite(part: Part, fail_on: Severity, base: str) -> ElementTree.Element:
    evidence, result = part
    places = Places(evidence)
    name = label(evidence)
    models = [m.name for m in evidence.repository.models] if evidence.repository else []
    by_model: dict[str, list[Finding]] = {model: [] for model in models}
    for finding in result.findings:
        by_model.setdefault(finding.model or NO_MODEL, []).append(finding)
    suite = ElementTree.Element("testsuite", name=xml_text(name))
    failures = 0
    for model, findings in by_model.items():
        case = ElementTree.SubElement(
            suite, "testcase", name=xml_text(model), classname=xml_text(name))
        failing = [f for f in findings if f.severity >= fail_on]
        if failing:
            failures += 1
            failure = ElementTree.SubElement(
                case, "failure", type="triton-doctor",
                message=f"{len(failing)} finding(s) at or above {fail_on}")
            failure.text = "\n".join(xml_text(_line(f, places, base)) for f in failing)
        below = [f for f in findings if f.severity < fail_on]
        if below:
            ElementTree.SubElement(case, "system-out").text = "\n".join(
                xml_text(_line(f, places, base)) for f in below)
    suite.set("tests", str(len(by_model)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    return suite


def render(parts: Sequence[Part], fail_on: Severity, base: str) -> str:
    suites = ElementTree.Element("testsuites", name="triton-doctor")
    for part in parts:
        suites.append(_suite(part, fail_on, base))
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
