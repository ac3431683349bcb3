"""The layers of docs/architecture.md hold, and import-linter would catch a rule that broke them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lint_imports.py"


def _lint_imports() -> Callable[..., subprocess.CompletedProcess[str]]:
    """scripts/lint_imports.py's runner (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("lint_imports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runner: Callable[..., subprocess.CompletedProcess[str]] = module.lint_imports
    return runner


def _folders(rules: Path) -> dict[str, Path]:
    return {"doctor": ROOT / "doctor", "checks": ROOT / "checks", "rules": rules}


def test_contracts_are_kept() -> None:
    done = _lint_imports()(_folders(ROOT / "rules"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout


def test_a_rule_that_imports_a_collector_breaks_them(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("__pycache__"))
    (rules / "reads_the_disk.py").write_text(
        "from triton_doctor.checks.repository import collect_repository\n")
    done = _lint_imports()(_folders(rules))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Rules judge the Evidence: no collector, no engine, no I/O, no clock BROKEN" in " ".join(
        done.stdout.split())
    assert "triton_doctor.rules.reads_the_disk -> triton_doctor.checks.repository" in done.stdout
