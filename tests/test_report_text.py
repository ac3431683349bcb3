"""The text report's per-model header: the model's directory, found right under the root."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_doctor.findings import Finding, Location, Severity
from triton_doctor.report import text
from triton_doctor.result import Result

from tests.helpers import GOOD_CONFIG, run_cli, write_model

ONNX_CONFIG = """
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""
#: Batching without the dynamic batcher: a finding on the model's config.pbtxt.
CONFIG_FINDING = GOOD_CONFIG.replace("dynamic_batching { max_queue_delay_microseconds: 100 }", "")


def headers(out: str) -> dict[str, str]:
    """Each model's header line: model name -> the directory it shows."""
    return {
        line.split("  ", 1)[0]: line.split("  ", 1)[1] if "  " in line else ""
        for line in out.splitlines()
        if line and not line.startswith(" ") and not line.startswith(("✗", "✓"))
    }


def broken_onnx(repo: Path, name: str) -> None:
    """A model whose only finding is on its model file, ``<name>/1/model.onnx``."""
    write_model(repo, name, ONNX_CONFIG, {"1/model.onnx": "garbage\n"})


@pytest.mark.parametrize("name", ["model", "m", "1"])
def test_header_is_the_directory_under_the_root_when_the_name_recurs_below(
    tmp_path: Path, name: str
) -> None:
    # "model" and "m" begin the file name model.onnx; "1" is also the version directory
    repo = tmp_path / "repo"
    broken_onnx(repo, name)
    out = run_cli("check", str(repo)).stdout
    assert headers(out)[name] == f"{repo}/{name}", out
    assert "TD301 model-file-unusable  1/model.onnx" in out


def test_header_when_the_root_contains_the_model_name(tmp_path: Path) -> None:
    repo = tmp_path / "model" / "repo"
    broken_onnx(repo, "model")
    write_model(repo, "other", CONFIG_FINDING)
    out = run_cli("check", str(repo)).stdout
    assert headers(out) == {"model": f"{repo}/model", "other": f"{repo}/other"}, out
    assert "TD301 model-file-unusable  1/model.onnx" in out


def test_header_with_a_named_config(tmp_path: Path) -> None:
    # --model-config-name reads configs/<name>.pbtxt: its directory's parent is the model's
    repo = tmp_path / "repo"
    write_model(repo, "configs", None, {"configs/h100.pbtxt": CONFIG_FINDING,
                                        "1/model.py": "class TritonPythonModel: pass\n"})
    out = run_cli("check", "--model-config-name", "h100", str(repo)).stdout
    assert headers(out)["configs"] == f"{repo}/configs", out
    assert "configs/h100.pbtxt:" in out


def finding(model: str | None, path: str | None, rule: str = "TD301") -> Finding:
    return Finding(
        rule=rule, name="some-rule", severity=Severity.ERROR, title="t", model=model,
        version=None, location=Location(path), message="m", triton_message=None, fix=None,
        evidence={},
    )


def test_the_repository_given_decides_even_where_the_paths_cannot() -> None:
    # one model, no config finding, and the root holds a component named as the model
    result = Result(findings=[finding("model", "/srv/model/repo/model/1/model.onnx")], models=1)
    out = text.render(result, repository="/srv/model/repo")
    assert headers(out)["model"] == "/srv/model/repo/model"
    assert "TD301 some-rule  1/model.onnx" in out


def test_a_repository_at_the_filesystem_root() -> None:
    result = Result(findings=[finding("m", "/m/1/model.onnx")], models=1)
    assert headers(text.render(result, repository="/"))["m"] == "/m"


def test_no_path_no_directory() -> None:
    result = Result(findings=[finding("m", None, "TD601")], models=1)
    assert headers(text.render(result, repository="/srv/repo"))["m"] == ""
