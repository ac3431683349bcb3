"""``check`` over several repositories, into a file, quietly, with statistics (issue 13)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import GOOD_CONFIG, ROOT, run_cli, write_model

SCHEMA = json.loads((ROOT / "doctor" / "schema" / "report.schema.json").read_text())
BROKEN = ROOT / "fixtures" / "rules" / "TD201" / "fail"  # one TD201 error
STRAYS = ROOT / "fixtures" / "rules" / "TD101" / "fail"  # TD101 twice, TD301, a TD105 info
BAD_CONFIG = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")


def _clean(tmp_path: Path) -> Path:
    repo = tmp_path / "clean"
    write_model(repo, "good", GOOD_CONFIG)
    return repo


def test_several_repositories_make_one_json_report_summed_per_repository(
        tmp_path: Path) -> None:
    clean = _clean(tmp_path)
    proc = run_cli("check", "--format", "json", str(BROKEN), str(clean), str(STRAYS))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.validate(report, SCHEMA)
    assert report["target"]["repositories"] == [str(BROKEN), str(clean), str(STRAYS)]
    assert "repository" not in report["target"]
    each = report["summary"]["repositories"]
    assert [(r["path"], r["error"], r["info"]) for r in each] == [
        (str(BROKEN), 1, 0), (str(clean), 0, 0), (str(STRAYS), 3, 1)]
    assert report["summary"]["error"] == 4 and report["summary"]["models"] == sum(
        r["models"] for r in each)
    assert {f["location"]["path"].split("/")[-3] for f in report["findings"]
            if f["rule"] == "TD201"} == {"fail"}


def test_one_repository_keeps_its_target_and_gets_its_summary(tmp_path: Path) -> None:
    report = json.loads(run_cli("check", "--format", "json", str(_clean(tmp_path))).stdout)
    jsonschema.validate(report, SCHEMA)
    assert report["target"]["repository"] == str(tmp_path / "clean")
    assert [r["path"] for r in report["summary"]["repositories"]] == [str(tmp_path / "clean")]
    assert "statistics" not in report


def test_several_repositories_in_text_each_summed_then_the_total(tmp_path: Path) -> None:
    proc = run_cli("check", str(BROKEN), str(_clean(tmp_path)))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == f"repository: {BROKEN}"
    assert f"repository: {tmp_path / 'clean'}" in lines
    assert lines[-1].startswith("✗ 2 repositories: 1 error, 0 warnings, 0 info in 1 of 2 models")
    assert sum(line.startswith(("✗ 1 error", "✓ 0 errors")) for line in lines) == 2


@pytest.mark.parametrize("extra", [("--url", "localhost:1"), ("--tui",)])
def test_several_repositories_take_no_server_nor_ui(tmp_path: Path, extra: tuple[str]) -> None:
    proc = run_cli("check", str(BROKEN), str(_clean(tmp_path)), *extra)
    assert proc.returncode == 2 and "take one" in proc.stderr and not proc.stdout


def test_output_file_holds_the_report_and_stdout_stays_empty(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    out.write_text("old")
    proc = run_cli("check", "--format", "json", "-o", str(out), str(BROKEN))
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert json.loads(out.read_text())["summary"]["exit_code"] == 1
    assert os.listdir(tmp_path) == ["report.json"]  # no temporary file left beside it


@pytest.mark.parametrize("where", ["missing/report.txt", "."])
def test_an_unwritable_output_file_is_a_usage_error(tmp_path: Path, where: str) -> None:
    proc = run_cli("check", "--output-file", str(tmp_path / where), str(BROKEN))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_quiet_shows_only_what_fails_and_nothing_when_clean(tmp_path: Path) -> None:
    proc = run_cli("check", "--quiet", str(STRAYS))
    assert proc.returncode == 1
    assert "TD101" in proc.stdout and "TD105" not in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("✗ 3 errors, 0 warnings, 1 info")
    assert run_cli("check", "-q", "--fail-on", "warning", str(BROKEN), str(_clean(tmp_path))
                   ).stdout.count("repository: ") == 1
    clean = run_cli("check", "-q", "--statistics", str(tmp_path / "clean"))
    assert clean.returncode == 0 and clean.stdout == ""


def test_quiet_is_for_the_text_report() -> None:
    proc = run_cli("check", "--quiet", "--format", "json", str(BROKEN))
    assert proc.returncode == 2 and "--quiet" in proc.stderr


def test_statistics_count_findings_per_rule_most_first() -> None:
    report = json.loads(run_cli("check", "--format", "json", "--statistics", str(STRAYS),
                                str(BROKEN)).stdout)
    jsonschema.validate(report, SCHEMA)
    assert list(report["statistics"].items())[:2] == [
        ("TD101", {"name": "stray-directory", "severity": "error", "count": 2}),
        ("TD105", {"name": "version-dir-ignored", "severity": "info", "count": 1})]
    table = run_cli("check", "--statistics", str(STRAYS)).stdout.split("statistics:\n")[1]
    assert table.splitlines()[1].split() == ["2", "TD101", "stray-directory", "error"]
    quiet = run_cli("check", "-q", "--statistics", str(STRAYS)).stdout
    assert "TD105" not in quiet.split("statistics:")[1]


def test_a_repository_named_twice_is_checked_once(tmp_path: Path) -> None:
    write_model(tmp_path / "repo", "m", BAD_CONFIG)
    once = run_cli("check", str(tmp_path / "repo"))
    twice = run_cli("check", str(tmp_path / "repo"), str(tmp_path / "repo") + "/")
    assert once.stdout == twice.stdout and once.returncode == twice.returncode == 1


def test_report_and_baseline_never_replace_each_other_or_the_repository(tmp_path: Path) -> None:
    write_model(tmp_path / "repo", "m", BAD_CONFIG)
    same = run_cli("check", str(tmp_path / "repo"), "-o", str(tmp_path / "x.json"),
                   "--write-baseline", str(tmp_path / "x.json"))
    config = tmp_path / "repo" / "m" / "config.pbtxt"
    before = config.read_text()
    onto = run_cli("check", str(tmp_path / "repo"), "-o", str(config))
    assert (same.returncode, onto.returncode) == (2, 2)
    assert config.read_text() == before and not (tmp_path / "x.json").exists()


def test_models_of_the_same_name_in_two_repositories_count_twice(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_model(tmp_path / name, "m", BAD_CONFIG)
    proc = run_cli("check", str(tmp_path / "a"), str(tmp_path / "b"))
    assert "in 2 of 2 models" in proc.stdout.splitlines()[-1], proc.stdout
