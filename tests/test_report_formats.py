"""The reports CI platforms read: SARIF against the OASIS schema, GitHub workflow commands that
a repository's text cannot forge, GitLab Code Quality, and JUnit XML."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from triton_doctor.report.github import message_escaped, property_escaped
from triton_doctor.report.junit import xml_text

from tests.helpers import DEMO, ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
INCIDENT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"
MODEL_FILES = ("*.onnx", "*.plan", "*.pt", "model.py")


def report(fmt: str, *args: str, fail_on: str = "error") -> tuple[int, str]:
    proc = run_cli("check", "--format", fmt, "--fail-on", fail_on, *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


def sarif_results(*args: str) -> list[dict[str, Any]]:
    code, out = report("sarif", *args)
    assert code == 1
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    (run,) = document["runs"]
    return list(run["results"])


def configs_only(tmp_path: Path) -> Path:
    """The demo as a checkout without its model files (kept in LFS or a model store)."""
    repo = tmp_path / "checkout"
    shutil.copytree(DEMO, repo, symlinks=True)
    for pattern in MODEL_FILES:
        for path in repo.rglob(pattern):
            path.unlink()
    return repo


@pytest.mark.parametrize("target", ["demo", "snapshot", "configs-only"])
def test_sarif_is_valid_and_every_result_sits_on_a_relative_file_line(
        target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = {"demo": (str(DEMO),), "snapshot": ("--snapshot", str(INCIDENT)),
            "configs-only": (str(configs_only(tmp_path)),)}[target]
    results = sarif_results(*args)
    assert results
    for result in results:
        if target == "snapshot":  # a server without a repository: its model, no file
            for location in result.get("locations", []):
                assert location["logicalLocations"][0]["name"]
            continue
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["region"]["startLine"] >= 1
        artifact = physical["artifactLocation"]
        if target == "demo":
            assert artifact["uriBaseId"] == "%SRCROOT%"
            assert artifact["uri"].startswith("fixtures/demo-repository/")
        else:  # outside the working directory: an absolute file URI
            assert artifact["uri"].startswith("file:///") and "uriBaseId" not in artifact


def test_sarif_points_a_directory_finding_at_its_config_and_encodes_uris(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "my models"
    shutil.copytree(DEMO, repo, symlinks=True)
    monkeypatch.chdir(tmp_path)
    by_rule = {r["ruleId"]: r for r in sarif_results("my models")}
    misread = by_rule["TD106"]["locations"][0]["physicalLocation"]  # the 1_backup/ directory
    assert misread["artifactLocation"]["uri"] == "my%20models/detector_trt/config.pbtxt"
    assert misread["region"]["startLine"] == 1
    help_ = json.loads(report("sarif", "my models")[1])["runs"][0]["tool"]["driver"]["rules"][0]
    assert help_["help"]["markdown"].startswith("What it checks")


def test_sarif_lists_waived_findings_as_suppressed_by_where_the_waiver_is(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO, repo, symlinks=True)
    ranker = repo / "ranker" / "config.pbtxt"
    ranker.write_text("# triton-doctor: ignore[TD225] batches fill fast\n" + ranker.read_text())
    settings = tmp_path / "settings.toml"
    settings.write_text('[[waive]]\nrules = ["TD224"]\nmodels = ["reranker_cpu"]\n'
                        'reason = "clients batch"\n')
    results = sarif_results(str(repo), "--config", str(settings))
    kinds = {r["ruleId"]: r["suppressions"][0] for r in results if "suppressions" in r}
    assert kinds["TD225"]["kind"] == "inSource"
    assert kinds["TD225"]["justification"].startswith("batches fill fast")
    assert kinds["TD224"] == {"kind": "external", "justification": "clients batch (" +
                              kinds["TD224"]["justification"].split(" (", 1)[1]}


COMMAND = re.compile(r"::(error|warning|notice) ((?:file|line|title)=[^:,\r\n]*)"
                     r"(,(?:file|line|title)=[^:,\r\n]*)*::[^\r\n]*")


def test_github_annotations_one_per_finding_and_no_repository_text_forges_one(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO, repo, symlinks=True)
    (repo / "evil,title=x::error file=a::boom%0Aline").mkdir()
    code, out = report("github", str(repo))
    findings = json.loads(report("json", str(repo))[1])["findings"]
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(findings)
    for line in lines:
        assert COMMAND.fullmatch(line), line
    assert sum(line.startswith("::warning") for line in lines) == sum(
        f["severity"] == "warning" for f in findings)
    assert any("evil%2Ctitle=x%3A%3Aerror file=a%3A%3Aboom%250Aline" in line for line in lines)


def test_github_escaping() -> None:
    assert message_escaped("50%\r\nnext::x") == "50%25%0D%0Anext::x"
    assert property_escaped("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


def test_gitlab_code_quality(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out = report("gitlab", str(DEMO))
    issues = json.loads(out)
    assert code == 1
    assert len(issues) == len(json.loads(report("json", str(DEMO))[1])["findings"])
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    for issue in issues:
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["check_name"].startswith("TD") and issue["description"]
        assert (ROOT / issue["location"]["path"]).exists()
        assert issue["location"]["lines"]["begin"] >= 1
    assert {"critical", "major"} <= {issue["severity"] for issue in issues}


def test_junit_a_suite_per_repository_a_case_per_model(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DEMO, repo, symlinks=True)
    (repo / 'odd <&"\x01> model').mkdir()
    (repo / "xml forbids \ufffe").mkdir()  # printable() keeps it; XML 1.0 cannot hold it
    findings = json.loads(report("json", str(repo))[1])["findings"]
    for fail_on in ("error", "warning"):
        code, out = report("junit", str(repo), fail_on=fail_on)
        assert code == 1
        root = ElementTree.fromstring(out.encode())
        assert root.tag == "testsuites"
        (suite,) = root.findall("testsuite")
        assert suite.get("name") == str(repo)
        cases = suite.findall("testcase")
        models = {xml_text(f["model"] or "(repository)") for f in findings}
        assert models <= {case.get("name") for case in cases}
        failing = {xml_text(f["model"] or "(repository)") for f in findings
                   if fail_on == "warning" or f["severity"] == "error"}
        assert {case.get("name") for case in cases if case.find("failure") is not None} \
            == failing
        assert suite.get("failures") == str(len(failing))
        assert suite.get("tests") == str(len(cases))
    assert any(case.get("name") == "odd <&\"\\x01> model" for case in cases)
    assert any(case.get("name") == "xml forbids \\ufffe" for case in cases)


def test_sarif_lists_baselined_findings_as_suppressed_externally(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    run_cli("check", "--write-baseline", str(baseline), str(DEMO))
    code, out = report("sarif", "--baseline", str(baseline), str(DEMO))
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    results = document["runs"][0]["results"]
    assert code == 0 and results
    for result in results:
        (suppression,) = result["suppressions"]
        assert suppression == {"kind": "external",
                               "justification": f"known, in the baseline {baseline}"}
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def test_files_are_named_from_the_checkout_whatever_the_working_directory(
        tmp_path: Path) -> None:
    """Code scanning reads paths against the checkout's root: a run from a subdirectory (or
    from outside) names the same files."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(DEMO, tmp_path / "deploy" / "models")
    def uris(cwd: Path, target: str) -> set[str]:
        proc = subprocess.run([sys.executable, "-m", "triton_doctor", "check", target,
                               "--format", "sarif", "--exit-zero"], cwd=cwd,
                              capture_output=True, text=True, check=False, timeout=60)
        results = json.loads(proc.stdout)["runs"][0]["results"]
        return {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in results}
    inside = uris(tmp_path / "deploy" / "models", ".")
    assert inside == uris(ROOT, str(tmp_path / "deploy" / "models"))
    assert inside and all(uri.startswith("deploy/models/") for uri in inside)
