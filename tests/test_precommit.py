"""The pre-commit hook as a team adopts it: the real ``pre-commit`` installs this project from
its checkout into a fresh environment and runs the hook on a repository's changed configs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from triton_doctor import precommit

from tests.helpers import GOOD_CONFIG, ROOT, write_model

BAD_CONFIG = GOOD_CONFIG.replace("max_batch_size: 8", "max_batch_size: ${max_batch_size}")
# What pip prints when no package index can be reached (pre-commit keeps it in its log).
OFFLINE = ("No matching distribution found", "Failed to establish a new connection",
           "Could not fetch URL", "Temporary failure in name resolution")


def test_configs_map_to_their_repositories_once() -> None:
    options, files = precommit.split([
        "--fail-on", "warning", "models/a/config.pbtxt", "models/b/configs/prod.pbtxt",
        "config.pbtxt",
    ])
    assert options == ["--fail-on", "warning"]
    assert [precommit.repository_of(file) for file in files] == ["models", "models", ".."]


def test_the_changed_repositories_are_checked_in_one_run(tmp_path: Path) -> None:
    write_model(tmp_path / "good", "m", GOOD_CONFIG)
    write_model(tmp_path / "bad", "m", BAD_CONFIG)
    good, bad = (str(tmp_path / name / "m" / "config.pbtxt") for name in ("good", "bad"))
    assert precommit.main([good]) == 0
    assert precommit.main([good, bad]) == 1
    assert precommit.main(["--exit-zero", good, bad]) == 0
    assert precommit.main([]) == 0


def _try_repo(work: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo`` of this checkout (its uncommitted changes to tracked files too)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["PRE_COMMIT_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "triton-doctor",
         "--files", "models/classifier/config.pbtxt", "--color", "never"],
        cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    log = home / "pre-commit.log"
    if log.exists() and any(words in log.read_text() for words in OFFLINE):
        pytest.skip("pre-commit could not install triton-doctor: pip reaches no package index")
    return proc


def test_pre_commit_hook_fails_on_a_bad_config_then_passes_once_fixed(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("pre-commit try-repo needs this project as a git checkout")
    work = tmp_path / "work"
    write_model(work / "models", "classifier", BAD_CONFIG)
    subprocess.run(["git", "init", "-q", str(work)], check=True)

    failed = _try_repo(work, tmp_path / "home")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "triton-doctor" in failed.stdout and "Failed" in failed.stdout
    assert "TD202" in failed.stdout and "${max_batch_size}" in failed.stdout

    (work / "models" / "classifier" / "config.pbtxt").write_text(GOOD_CONFIG)
    passed = _try_repo(work, tmp_path / "home")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
