"""SARIF 2.1.0, as GitHub code scanning reads it: every result on a file line, waived ones too.

Files are named relative to the checkout that holds the repository (its ``.git``; else the
working directory) under the base ``%SRCROOT%``, percent-encoded; a file outside it is an
absolute ``file:`` URI. A finding with no file (a server judged without a repository) has its
model as a logical location only.
Waived findings are results with a suppression: ``inSource`` for a waiver in config.pbtxt,
``external`` for the settings file and for a baseline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from triton_doctor import __version__
from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import json_printable
from triton_doctor.registry import Rule
from triton_doctor.report.places import Part, Places, relative

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SOURCE_ROOT = "%SRCROOT%"
#: How engine._apply_waivers ends the reason of a waiver written in config.pbtxt.
_INLINE = re.compile(r"\(config\.pbtxt:\d+\)$")


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.doc.split("\n\n")[0]},
        "help": {"text": rule.doc, "markdown": rule.doc},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
    }


def _location(path: str, line: int, base: str) -> dict[str, Any]:
    name = relative(path, base)
    artifact: dict[str, Any] = (
        {"uri": Path(name).as_uri()} if name.startswith("/")
        else {"uri": quote(name), "uriBaseId": SOURCE_ROOT})
    return {"physicalLocation": {"artifactLocation": artifact, "region": {"startLine": line}}}


def _result(finding: Finding, index: dict[str, int], places: Places, base: str) -> dict[str, Any]:
    text = finding.message
    if finding.triton_message:
        text += f"\nTriton: {finding.triton_message}"
    if finding.fix:
        text += f"\nFix: {finding.fix}"
    entry: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": LEVEL[finding.severity],
        "message": {"text": text},
        "partialFingerprints": {"tritonDoctor/v1": finding.fingerprint},
    }
    place = places.of(finding)
    if place is not None:
        entry["locations"] = [_location(place[0], place[1], base)]
    elif finding.model:
        entry["locations"] = [{"logicalLocations": [{"name": finding.model, "kind": "module"}]}]
    return entry


def _suppression(reason: str) -> dict[str, str]:
    kind = "inSource" if _INLINE.search(reason) else "external"
    return {"kind": kind, "justification": reason}


def _part_of(finding: Finding, parts: Sequence[Part]) -> Part:
    """The repository a baselined finding is in (the baseline lists them all together)."""
    path = finding.location.path or ""
    return next((part for part in parts if part[0].repository is not None
                 and path.startswith(part[0].repository.path + "/")), parts[0])


def render(parts: Sequence[Part], rules: list[Rule], base: str,
           baselined: Sequence[Finding] = (), baseline: str | None = None) -> str:
    """``parts``: each repository's Evidence and Result; files relative to ``base``.
    ``baselined``: the findings the ``baseline`` file holds back, reported as suppressed."""
    index = {rule.id: position for position, rule in enumerate(rules)}
    results = []
    for evidence, result in parts:
        places = Places(evidence)
        results += [_result(f, index, places, base) for f in result.findings]
        results += [{**_result(s.finding, index, places, base),
                     "suppressions": [_suppression(s.reason)]} for s in result.suppressed]
    known = {"kind": "external", "justification": f"known, in the baseline {baseline}"}
    for finding in baselined:
        places = Places(_part_of(finding, parts)[0])
        results.append({**_result(finding, index, places, base), "suppressions": [known]})
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "triton-doctor",
                        "version": __version__,
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {SOURCE_ROOT: {"uri": Path(base).as_uri().rstrip("/") + "/"}},
                "results": results,
            }
        ],
    }
    return json_printable(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
