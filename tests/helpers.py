"""Shared test helpers: run the real CLI in a subprocess, and write small repositories."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo-repository"

PYTHON_MODEL = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


def memory_limit(memory_bytes: int) -> Callable[[], None]:
    """A subprocess's ``preexec_fn`` that bounds its address space: a run past the limit fails
    instead of swapping (for inputs whose defect was memory)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return limit


def run_cli(*args: str, timeout: float = 60,
            memory_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, bounded in time and, with ``memory_bytes``, in address space."""
    return subprocess.run(
        [sys.executable, "-m", "triton_doctor", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
        preexec_fn=memory_limit(memory_bytes) if memory_bytes else None,
    )


def tree_state(root: Path) -> dict[bytes, str]:
    """Every path below ``root`` (as bytes: names need not be UTF-8), not following links:
    its mode (type and permissions), a regular file's modification time and digest (a large
    one's size) or a link's target, so that a test can assert a run changed nothing (not even
    rewrote a file with the same bytes), special files included."""
    state = {}
    for current, dirs, files in os.walk(bytes(root), followlinks=False):
        for name in dirs + files:
            path = os.path.join(current, name)
            info = os.lstat(path)
            content = ""
            if stat.S_ISLNK(info.st_mode):
                content = os.fsdecode(os.readlink(path))
            elif stat.S_ISREG(info.st_mode) and info.st_size > 2**20:
                content = f"size:{info.st_size} mtime:{info.st_mtime_ns}"
            elif stat.S_ISREG(info.st_mode):
                try:
                    with open(path, "rb") as handle:
                        content = hashlib.sha256(handle.read()).hexdigest()
                except PermissionError:
                    content = "unreadable"
                content += f" mtime:{info.st_mtime_ns}"
            state[path] = f"{info.st_mode:o} {content}"
    return state


def check_json(repo: Path | str, *args: str) -> dict[str, Any]:
    proc = run_cli("check", "--format", "json", "--exit-zero", *args, str(repo))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def write_model(repo: Path, name: str, config: str | None, files: dict[str, str] | None = None,
                ) -> Path:
    """A model directory; by default a Python model with ``1/model.py``."""
    model = repo / name
    model.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (model / "config.pbtxt").write_text(config)
    for relative, text in (files if files is not None else {"1/model.py": PYTHON_MODEL}).items():
        path = model / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return model


GOOD_CONFIG = """
backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 100 }
"""


def python_without_dac_override(*args: str) -> subprocess.CompletedProcess[str]:
    """Python run as root without the capabilities that read through permission bits, so
    that unreadable files are unreadable to it too (as any other user, plainly)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is needed to drop root's permission override")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    return subprocess.run(
        [*prefix, sys.executable, *args],
        capture_output=True, text=True, timeout=60, check=False,
    )


def run_cli_without_dac_override(*args: str) -> subprocess.CompletedProcess[str]:
    return python_without_dac_override("-m", "triton_doctor", *args)
