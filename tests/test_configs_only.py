"""``check --configs-only``: a checkout of configurations without their model files (git without
the weights) is judged on its layout and configs, and a run without the flag says to use it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.evidence import Evidence, from_jsonable, to_jsonable
from triton_doctor.invocation import Invocation

from tests.helpers import DEMO, ROOT, check_json, run_cli

SCHEMA = json.loads((ROOT / "doctor" / "schema" / "report.schema.json").read_text())
MODEL_FILES = ("model.onnx", "model.py", "model.plan")
FILE_RULES = {"TD104", "TD108"}


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """The demo repository as git would hold it without its model files: they are deleted,
    and the version directories they leave empty go with them."""
    repo = tmp_path / "demo"
    shutil.copytree(DEMO, repo)
    for path in list(repo.rglob("*")):
        if path.name in MODEL_FILES:
            path.unlink()
    for path in sorted(repo.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return repo


def _rules(report: dict[str, Any]) -> set[str]:
    return {f["rule"] for f in report["findings"]}


def test_configs_only_reports_config_errors_and_no_missing_model_file(configs: Path) -> None:
    report = check_json(configs, "--configs-only")
    jsonschema.validate(report, SCHEMA)
    rules = _rules(report)
    assert not rules & FILE_RULES
    assert {"TD103", "TD203", "TD212"} <= rules  # the demo's config errors are still found
    assert "TD116" not in rules
    assert report["summary"]["without_model_files"] == 8
    assert report["summary"]["error"] > 0


def test_without_the_flag_one_hint_names_it(configs: Path) -> None:
    report = check_json(configs)
    hints = [f for f in report["findings"] if f["rule"] == "TD116"]
    assert len(hints) == 1 and "--configs-only" in hints[0]["fix"]
    assert hints[0]["model"] is None
    assert FILE_RULES & _rules(report)
    assert report["summary"]["without_model_files"] == 0


def test_a_repository_with_its_model_files_gets_no_hint() -> None:
    assert "TD116" not in _rules(check_json(DEMO))


def test_the_text_summary_counts_the_models_judged_without_files(configs: Path) -> None:
    proc = run_cli("check", "--configs-only", str(configs))
    assert proc.returncode == 1, proc.stderr
    assert "8 models judged without model files" in proc.stdout.splitlines()[-1]
    assert "judged without" not in run_cli("check", str(configs)).stdout


def test_the_settings_file_can_say_configs_only(configs: Path) -> None:
    settings = configs / ".triton-doctor.toml"
    settings.write_text(settings.read_text() + "configs-only = true\n")
    assert not _rules(check_json(configs)) & FILE_RULES
    settings.write_text('configs-only = "yes"\n')
    proc = run_cli("check", str(configs))
    assert proc.returncode == 2
    assert "configs-only must be true or false" in proc.stderr and str(settings) in proc.stderr


def test_configs_only_survives_a_snapshot(configs: Path) -> None:
    args = build_parser().parse_args(["check", str(configs), "--configs-only"])
    evidence = collect(Invocation.from_args(args))
    assert evidence.options.configs_only
    saved = from_jsonable(Evidence, json.loads(json.dumps(to_jsonable(evidence))))
    assert saved.options.configs_only
