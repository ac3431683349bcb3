"""Baselines: known findings recorded once, then listed but not counted; fixed ones reported;
fingerprints that survive line moves and the repository's spelling."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers import GOOD_CONFIG, ROOT, run_cli, write_model

SCHEMA = json.loads((ROOT / "doctor" / "schema" / "report.schema.json").read_text())
BAD_DIMS = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
#: A model whose finding's message names the repository's path (TD113).
ESCAPING = ROOT / "fixtures" / "rules" / "TD113" / "fail" / "identity_fp32"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two models with an error each, one without."""
    root = tmp_path / "repo"
    write_model(root, "bad_dims", BAD_DIMS)
    shutil.copytree(ESCAPING, root / "identity_fp32")
    write_model(root, "good", GOOD_CONFIG)
    return root


def check(repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("check", "--format", "json", *args, str(repo))
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_written_baseline_holds_the_findings_back(repo: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    code, report = check(repo, "--write-baseline", str(baseline))
    assert code == 0 and report["findings"] == [] and len(report["baselined"]) == 2
    written = json.loads(baseline.read_text())
    assert written["schema"] == "triton-doctor/baseline/v1"
    assert [e["fingerprint"] for e in written["findings"]] == sorted(
        f["fingerprint"] for f in report["baselined"])
    code, report = check(repo, "--baseline", str(baseline))
    assert code == 0, report
    assert (len(report["baselined"]), report["findings"], report["fixed"]) == (2, [], [])
    jsonschema.validate(report, SCHEMA)
    check(repo, "--write-baseline", str(baseline))
    assert baseline.read_text() == json.dumps(written, indent=1) + "\n"  # stable


def test_fixed_and_new_findings(repo: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    check(repo, "--write-baseline", str(baseline))
    (repo / "bad_dims" / "config.pbtxt").write_text(GOOD_CONFIG)
    write_model(repo, "new_bad", BAD_DIMS)
    code, report = check(repo, "--baseline", str(baseline))
    assert code == 1
    assert [(f["rule"], f["model"]) for f in report["findings"]] == [("TD212", "new_bad")]
    assert [(f["rule"], f["model"]) for f in report["baselined"]] == [
        ("TD113", "identity_fp32")]
    assert [(f["rule"], f["model"]) for f in report["fixed"]] == [("TD212", "bad_dims")]
    jsonschema.validate(report, SCHEMA)
    text = run_cli("check", "--baseline", str(baseline), str(repo)).stdout
    assert "baselined: 1 known finding" in text
    assert "  [baselined] TD113 identity_fp32: " in text
    assert "fixed: 1 baselined finding no longer found: TD212 bad_dims" in text


def test_moved_lines_stay_baselined(repo: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    check(repo, "--write-baseline", str(baseline))
    for model in ("bad_dims", "identity_fp32"):
        config = repo / model / "config.pbtxt"
        config.write_text("\n\n\n# moved\n" + config.read_text())
    code, report = check(repo, "--baseline", str(baseline))
    assert (code, len(report["baselined"]), report["fixed"]) == (0, 2, [])


def test_the_repository_spelling_does_not_change_fingerprints(repo: Path) -> None:
    """Relative, absolute, with "./" or a trailing "/": TD113's message names the path."""
    spellings = [(repo.parent, "repo"), (repo.parent, "./repo/"), (repo, "."),
                 (repo.parent, f"../{repo.parent.name}/./repo"), (Path("/"), str(repo))]
    fingerprints = {tuple(_fingerprints(cwd, spelling)) for cwd, spelling in spellings}
    assert len(fingerprints) == 1 and len(fingerprints.pop()) == 2


def _fingerprints(cwd: Path, spelling: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "triton_doctor", "check", "--format", "json",
                           spelling], cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.stdout, proc.stderr
    return sorted(f["fingerprint"] for f in json.loads(proc.stdout)["findings"])


@pytest.mark.parametrize("content", [None, "not json", '{"schema": "other"}',
                                     '{"schema": "triton-doctor/baseline/v1", "findings": [1]}'])
def test_a_bad_baseline_is_a_usage_error_naming_it(repo: Path, tmp_path: Path,
                                                   content: str | None) -> None:
    baseline = tmp_path / "baseline.json"
    if content is not None:
        baseline.write_text(content)
    proc = run_cli("check", "--baseline", str(baseline), str(repo))
    assert proc.returncode == 2 and proc.stdout == ""
    assert str(baseline) in proc.stderr and "Traceback" not in proc.stderr


def test_settings_name_the_baseline_beside_them(repo: Path, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".triton-doctor.toml").write_text('baseline = "known.json"\n')
    check(repo, "--write-baseline", str(tmp_path / "known.json"))
    code, report = check(repo)
    assert (code, len(report["baselined"])) == (0, 2)


def test_a_baseline_holds_back_only_its_own_repositorys_findings(repo: Path,
                                                                  tmp_path: Path) -> None:
    """Fingerprints leave the repository out: a second repository with the same findings,
    checked in the same run, is not held back by the first one's baseline."""
    twin = tmp_path / "twin"
    shutil.copytree(repo, twin)
    baseline = tmp_path / "baseline.json"
    check(repo, "--write-baseline", str(baseline))
    assert {e["repository"] for e in json.loads(baseline.read_text())["findings"]} == {"repo"}
    proc = run_cli("check", "--format", "json", "--baseline", str(baseline), str(repo),
                   str(twin))
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and len(report["baselined"]) == 2
    assert {f["model"] for f in report["findings"]} == {"bad_dims", "identity_fp32"}
    assert report["fixed"] == []


def test_fixed_is_said_only_of_repositories_checked(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write_model(other, "good", GOOD_CONFIG)
    baseline = tmp_path / "baseline.json"
    check(repo, "--write-baseline", str(baseline))
    code, report = check(other, "--baseline", str(baseline))
    assert (code, report["fixed"], report["baselined"]) == (0, [], [])
