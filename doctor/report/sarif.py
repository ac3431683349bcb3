"""SARIF 2.1.0, for code-scanning dashboards (GitHub, GitLab) that annotate config.pbtxt lines."""

from __future__ import annotations

import json
import os
from typing import Any

from triton_doctor import __version__
from triton_doctor.engine import Result
from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import json_printable
from triton_doctor.registry import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.doc.split("\n\n")[0]},
        "help": {"text": rule.doc},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
    }


def _result(finding: Finding, index: dict[str, int], base: str) -> dict[str, Any]:
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
    if finding.location.path:
        uri = os.path.relpath(finding.location.path, base).replace(os.sep, "/")
        physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
        if finding.location.line:
            physical["region"] = {"startLine": finding.location.line}
        entry["locations"] = [{"physicalLocation": physical}]
    return entry


def render(result: Result, rules: list[Rule], base: str) -> str:
    """Paths are made relative to ``base`` (the working directory), as code scanning expects."""
    index = {rule.id: position for position, rule in enumerate(rules)}
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
                "results": [_result(f, index, base) for f in result.findings],
            }
        ],
    }
    return json_printable(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
