"""A path one level off the repository is named (TD117); a directory without a model is a
usage error (exit 2), never a clean report."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DEMO, GOOD_CONFIG, check_json, run_cli, write_model


def _hints(report: dict[str, object]) -> list[dict[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return [f for f in findings if f["rule"] == "TD117"]


def test_a_folder_above_the_repository_names_it(tmp_path: Path) -> None:
    write_model(tmp_path / "model_repository", "good", GOOD_CONFIG)
    (hint,) = _hints(check_json(tmp_path))
    assert f"triton-doctor check {tmp_path}/model_repository" in hint["fix"]
    assert "good" in hint["message"]


def test_a_model_directory_names_its_repository(tmp_path: Path) -> None:
    model = write_model(tmp_path, "good", GOOD_CONFIG)
    (hint,) = _hints(check_json(model))
    assert f"triton-doctor check {tmp_path}`" in hint["fix"]
    assert "is a model directory" in hint["message"]


def test_a_repository_is_not_hinted_at(tmp_path: Path) -> None:
    assert not _hints(check_json(DEMO))
    write_model(tmp_path, "only", GOOD_CONFIG)  # one model: its versions are not models
    assert not _hints(check_json(tmp_path))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_directory_without_a_model_is_a_usage_error(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "README.md").write_text("models are fetched at deploy time\n")
    proc = run_cli("check", "--format", fmt, str(tmp_path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{tmp_path}: no model directory in it" in proc.stderr
    assert "Traceback" not in proc.stderr
