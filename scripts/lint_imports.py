#!/usr/bin/env python3
"""Check the import contracts of pyproject.toml ([tool.importlinter]) with import-linter.

The wheel maps three top-level folders (doctor/, checks/, rules/) into one package,
``triton_doctor``; import-linter finds a package's modules by walking its one folder, so it is
shown a folder that holds all three: a temporary ``triton_doctor/`` of symbolic links.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(folders: dict[str, Path], *options: str) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on the package made of ``folders`` ("doctor", "checks", "rules")."""
    with tempfile.TemporaryDirectory(prefix="lint-imports-") as shadow:
        package = Path(shadow) / "triton_doctor"
        package.mkdir()
        for entry in folders["doctor"].iterdir():
            (package / entry.name).symlink_to(entry)
        for name in ("checks", "rules"):
            (package / name).symlink_to(folders[name])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [shadow, *filter(None, [os.environ.get("PYTHONPATH")])])}
        # import-linter's console script, run by this interpreter wherever scripts are installed.
        command = [sys.executable, "-c", "import sys; from importlinter.cli import "
                   "lint_imports_command; sys.exit(lint_imports_command())", "--no-cache",
                   "--no-logo", "--config", str(ROOT / "pyproject.toml"), *options]
        return subprocess.run(command, env=env, cwd=shadow, check=False, text=True,
                              capture_output=True)


def main() -> int:
    done = lint_imports({name: ROOT / name for name in ("doctor", "checks", "rules")},
                        *sys.argv[1:])
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
