"""``triton-doctor config`` against the configurations the real server printed.

The server's qa suite records, for each auto-complete case, what ``GET /v2/models/<m>/config``
returned on a one-GPU machine; the output of ``config`` must equal one of them (compared as
parsed ModelConfig messages, since ONNX Runtime lists autofilled tensors in hash order).
Skipped when ../shared (the conformance suite) is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format
from triton_doctor.triton import model_config

from tests.helpers import ROOT, run_cli

SUITE = ROOT.parent / "shared" / "conformance" / "server-qa"
CASES_FILE = SUITE / "cases.json"


def _cases() -> list[dict[str, Any]]:
    if not CASES_FILE.is_file():
        return []
    cases = json.loads(CASES_FILE.read_text())["cases"]
    return [
        case for case in cases
        if case["group"] == "autofill_noplatform_success" and not case["missing_external_files"]
    ]


def _materialize(case: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the case's repository with the empty directories git dropped restored."""
    relative = case["materialized"]
    repository = tmp_path / "models"
    shutil.copytree(SUITE / relative, repository)
    for directory in json.loads((SUITE / "empty_dirs.json").read_text()):
        if directory.startswith(relative + "/"):
            (repository / directory[len(relative) + 1:]).mkdir(parents=True, exist_ok=True)
    return repository


def _parse(text: str) -> Any:
    config = model_config.new_config()
    text_format.Parse(text, config)
    config.ClearField("runtime")  # the server prints runtime: "", which is the unset value
    return config


@pytest.mark.skipif(not CASES_FILE.is_file(), reason="../shared conformance suite not present")
@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["id"])
def test_config_equals_a_server_answer(case: dict[str, Any], tmp_path: Path) -> None:
    repository = _materialize(case, tmp_path)
    expected_dir = SUITE / "expected" / case["id"]
    answers: dict[str, list[Any]] = {}
    for path in expected_dir.rglob("expected*"):
        # expected files sit in a folder named after the model, or directly in the case's
        # folder when the case has a single model named like the case.
        model = path.parent.name if path.parent != expected_dir else case["id"].split("/")[-1]
        answers.setdefault(model, []).append(_parse(path.read_text()))
    assert answers
    for model, expected in answers.items():
        proc = run_cli("config", str(repository / model))
        assert proc.returncode == 0, proc.stderr
        got = _parse(proc.stdout)
        assert any(got == answer for answer in expected), (
            f"{model}: got\n{proc.stdout}\nexpected one of {len(expected)}, the first:\n"
            f"{text_format.MessageToString(expected[0])}"
        )
