"""Broken model files through the real CLI: a TD301 finding that names the file, exit code 1,
no traceback, and the repository left exactly as it was (the readers only read)."""

from __future__ import annotations

import io
import json
import os
import pickle
import random
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GOOD_CONFIG,
    ROOT,
    run_cli,
    run_cli_without_dac_override,
    tree_state,
    write_model,
)

RESNET = ROOT / "fixtures" / "rules" / "TD306" / "pass" / "resnet50"
ONNX_BYTES = (RESNET / "1" / "model.onnx").read_bytes()
ONNX_CONFIG = (RESNET / "config.pbtxt").read_text()
TORCH_CONFIG = """
backend: "pytorch"
max_batch_size: 8
input [
  { name: "a" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "b" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }
"""
PLAN_CONFIG = """
platform: "tensorrt_plan"
max_batch_size: 8
input [ { name: "images" data_type: TYPE_FP16 dims: [ 3, 640, 640 ] } ]
output [ { name: "output0" data_type: TYPE_FP16 dims: [ 84, 8400 ] } ]
instance_group [ { kind: KIND_GPU count: 1 } ]
dynamic_batching { }
"""
LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 102400000\n"
)


def _zip_without_code() -> bytes:
    """A zip of data files, as a checkpoint or a torch.save state_dict is: not TorchScript."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("checkpoint/data.pkl", pickle.dumps({"epoch": 3}, protocol=2))
        archive.writestr("checkpoint/version", "3\n")
    return buffer.getvalue()


def _write_bytes(relative: str, data: bytes) -> Callable[[Path], None]:
    def write(model: Path) -> None:
        path = model / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return write


def _empty_model_onnx_dir(model: Path) -> None:
    """model.onnx as a directory holding only the weights: the model file was not copied."""
    (model / "1" / "model.onnx").mkdir(parents=True)
    (model / "1" / "model.onnx" / "model.onnx.data").write_bytes(bytes(64))


def _dangling_link(relative: str) -> Callable[[Path], None]:
    """The model file is a symbolic link to a path that does not exist (an unmounted volume)."""
    def write(model: Path) -> None:
        path = model / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(model / "weights" / "gone" / path.name)
    return write


#: id -> (config, how to write the broken file, the file the finding must name, words in it).
CASES: dict[str, tuple[str, Callable[[Path], None], str, str]] = {
    **{
        f"onnx-cut-at-{cut}": (ONNX_CONFIG, _write_bytes("1/model.onnx", ONNX_BYTES[:cut]),
                                "1/model.onnx", words)
        for cut, words in ((1, "not an ONNX model"), (2, "has no graph"), (40, "truncated"),
                           (len(ONNX_BYTES) // 2, "truncated"),
                           (len(ONNX_BYTES) - 1, "truncated"))
    },
    "zip-not-torchscript": (TORCH_CONFIG, _write_bytes("1/model.pt", _zip_without_code()),
                            "1/model.pt", "not TorchScript"),
    "pickle-as-model-pt": (TORCH_CONFIG,
                           _write_bytes("1/model.pt", pickle.dumps({"w": [0.5] * 8}, protocol=4)),
                           "1/model.pt", "pickle"),
    "random-bytes-as-plan": (PLAN_CONFIG,
                             _write_bytes("1/model.plan", random.Random(3).randbytes(4096)),
                             "1/model.plan", "not a TensorRT plan"),
    "lfs-pointer-as-onnx": (ONNX_CONFIG, _write_bytes("1/model.onnx", LFS_POINTER.encode()),
                            "1/model.onnx", "Git LFS pointer"),
    "model-py-syntax-error": (
        GOOD_CONFIG,
        _write_bytes("1/model.py", b"class TritonPythonModel:\n    def execute(self, requests)\n"),
        "1/model.py", "line 2",
    ),
    "model-onnx-dir-without-model": (ONNX_CONFIG, _empty_model_onnx_dir, "1/model.onnx",
                                     "directory without a model.onnx"),
    **{
        f"dangling-link-as-{name}": (config, _dangling_link(relative), relative,
                                     "cannot be read: does not exist (dangling symbolic link?)")
        for name, config, relative in (("onnx", ONNX_CONFIG, "1/model.onnx"),
                                       ("model-pt", TORCH_CONFIG, "1/model.pt"),
                                       ("plan", PLAN_CONFIG, "1/model.plan"),
                                       ("model-py", GOOD_CONFIG, "1/model.py"))
    },
}


def _check(repo: Path, run: Callable[..., subprocess.CompletedProcess[str]] = run_cli,
           ) -> list[dict[str, Any]]:
    """TD301's findings; the run must exit 1 without a traceback and leave ``repo`` as it was."""
    before = tree_state(repo)
    text = run("check", str(repo))
    proc = run("check", "--format", "json", str(repo))
    assert tree_state(repo) == before
    for done in (text, proc):
        assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
    return [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "TD301"]


@pytest.mark.parametrize("case", list(CASES))
def test_broken_model_file(tmp_path: Path, case: str) -> None:
    config, write, relative, words = CASES[case]
    model = write_model(tmp_path, "model_x", config, files={})
    write(model)
    (finding,) = _check(tmp_path)
    assert finding["severity"] == "error"
    assert finding["message"].startswith(relative), finding["message"]
    assert words in finding["message"], finding["message"]
    assert finding["location"]["path"] == f"{model}/{relative}"



@pytest.mark.parametrize(("config", "relative"), [(ONNX_CONFIG, "1/model.onnx"),
                                                   (TORCH_CONFIG, "1/model.pt"),
                                                   (PLAN_CONFIG, "1/model.plan")],
                         ids=["onnx", "torchscript", "plan"])
def test_unreadable_model_file(tmp_path: Path, config: str, relative: str) -> None:
    model = write_model(tmp_path, "model_x", config, files={})
    _write_bytes(relative, ONNX_BYTES)(model)
    os.chmod(model / relative, 0o000)
    run = run_cli_without_dac_override if os.geteuid() == 0 else run_cli
    try:
        (finding,) = _check(tmp_path, run)
    finally:
        os.chmod(model / relative, 0o644)
    assert finding["message"] == f"{relative} cannot be read: permission denied"
