"""Triton's own qa model-config suite (../shared/conformance), scored by its tool.

A user's clone has no ../shared: then this skips. Every case whose model files are in the
suite must pass (the skipped ones reference files the suite does not ship: TensorRT engines
built by the qa scripts, and the like); no case the server loads may get an error.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

TOOL = ROOT.parent / "shared" / "tools" / "conformance.py"


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    if not TOOL.exists():
        pytest.skip("the shared conformance suite is not beside this checkout")
    out = tmp_path_factory.mktemp("conformance") / "results.json"
    doctor = f"{sys.executable} -m triton_doctor"
    subprocess.run([sys.executable, str(TOOL), "--doctor", doctor, "--json", str(out)],
                   capture_output=True, text=True, timeout=900, check=False)
    return {case["id"]: case for case in json.loads(out.read_text())}


def test_every_case_with_its_files_passes(verdicts: dict[str, dict[str, str]]) -> None:
    failing = {cid: c["why"] for cid, c in verdicts.items() if c["verdict"] == "fail"}
    assert not failing


def test_no_false_error_on_cases_the_server_loads(verdicts: dict[str, dict[str, str]]) -> None:
    cases = TOOL.parent.parent / "conformance" / "server-qa" / "cases.json"
    suite = json.loads(cases.read_text())
    loads = {c["id"] for c in suite["cases"] if c["expected_outcome"].startswith("loads")}
    false_errors = {cid: verdicts[cid]["why"] for cid in loads
                    if verdicts[cid]["verdict"] == "fail"}
    assert not false_errors


def test_suite_is_not_empty(verdicts: dict[str, dict[str, str]]) -> None:
    assert sum(c["verdict"] == "pass" for c in verdicts.values()) >= 160
