"""Hostile and broken input: a clear message naming the path, the right exit code, no
traceback, and nothing written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    GOOD_CONFIG,
    check_json,
    run_cli,
    run_cli_without_dac_override,
    tree_state,
    write_model,
)


def _assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert needle in proc.stderr + proc.stdout


@pytest.mark.parametrize(
    "content",
    [
        bytes(range(256)) * 4,  # binary garbage
        b'name: "caf\xe9"\nbackend: "python"\n',  # invalid UTF-8
        b"",  # an empty file: the server auto-completes from it
    ],
    ids=["binary", "invalid-utf8", "empty"],
)
def test_config_contents(tmp_path: Path, content: bytes) -> None:
    model = write_model(tmp_path, "m", None)
    (model / "config.pbtxt").write_bytes(content)
    before = tree_state(tmp_path)
    for fmt in ("text", "json"):
        proc = run_cli("check", "--format", fmt, str(tmp_path))
        assert "Traceback" not in proc.stderr
        assert proc.returncode in (0, 1)
    report = check_json(tmp_path)
    if content:
        (finding,) = [f for f in report["findings"] if f["rule"] in ("TD201", "TD204")]
        assert finding["severity"] == "error"
        assert str(model / "config.pbtxt") in finding["message"] + (finding["triton_message"] or "")
    else:
        assert not [f for f in report["findings"] if f["severity"] == "error"]
    assert tree_state(tmp_path) == before


def test_fifty_megabyte_config(tmp_path: Path) -> None:
    model = write_model(tmp_path, "big", None)
    with open(model / "config.pbtxt", "w") as handle:
        line = 'parameters { key: "k" value: { string_value: "' + "x" * 200 + '" } }\n'
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            handle.write(line)
    proc = run_cli("check", "--format", "json", str(tmp_path))
    _assert_clean_failure(proc, 1, "MB")
    assert "config.pbtxt" in proc.stdout


def test_symlink_loop_in_repository(tmp_path: Path) -> None:
    write_model(tmp_path, "good", GOOD_CONFIG)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    proc = run_cli("check", str(tmp_path))
    _assert_clean_failure(proc, 1, "symbolic link loop")
    assert "loop" in proc.stdout


def test_repository_that_is_a_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "repo").symlink_to(tmp_path / "repo")
    _assert_clean_failure(run_cli("check", str(tmp_path / "repo")), 2, str(tmp_path / "repo"))


def test_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    _assert_clean_failure(run_cli("check", str(missing)), 2, f"{missing}: no such directory")


def test_file_instead_of_directory(tmp_path: Path) -> None:
    config = tmp_path / "config.pbtxt"
    config.write_text(GOOD_CONFIG)
    _assert_clean_failure(run_cli("check", str(config)), 2, "not a directory")


def test_config_that_is_a_directory(tmp_path: Path) -> None:
    model = write_model(tmp_path, "m", None)
    (model / "config.pbtxt").mkdir()
    proc = run_cli("check", "--format", "json", str(tmp_path))
    _assert_clean_failure(proc, 1, "is a directory")



def _run_unprivileged(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli_without_dac_override(*args) if os.geteuid() == 0 else run_cli(*args)


def test_unreadable_model_directory(tmp_path: Path) -> None:
    write_model(tmp_path, "good", GOOD_CONFIG)
    locked = write_model(tmp_path, "locked", GOOD_CONFIG)
    os.chmod(locked, 0o000)
    try:
        proc = _run_unprivileged("check", str(tmp_path))
    finally:
        os.chmod(locked, 0o755)
    _assert_clean_failure(proc, 1, "permission denied")
    assert "locked" in proc.stdout


def test_unreadable_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    os.chmod(repo, 0o000)
    try:
        proc = _run_unprivileged("check", str(repo))
    finally:
        os.chmod(repo, 0o755)
    _assert_clean_failure(proc, 2, str(repo))


def test_unreadable_config_file(tmp_path: Path) -> None:
    model = write_model(tmp_path, "m", GOOD_CONFIG)
    os.chmod(model / "config.pbtxt", 0o000)
    try:
        proc = _run_unprivileged("check", "--format", "json", str(tmp_path))
    finally:
        os.chmod(model / "config.pbtxt", 0o644)
    _assert_clean_failure(proc, 1, "Permission denied")
