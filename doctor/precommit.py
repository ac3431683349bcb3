"""The pre-commit hook (``.pre-commit-hooks.yaml``): pre-commit hands over the changed
config.pbtxt files, but rules judge a model against its repository (ensembles, shared names), so
the distinct repositories they belong to are checked whole, in one run of the same ``check``
command (one report, one baseline, one exit code)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from triton_doctor import cli


def repository_of(config: str) -> str:
    """The model repository holding a model's ``config.pbtxt`` or ``configs/NAME.pbtxt``: the
    directory above the model directory."""
    ups = 3 if Path(config).parent.name == "configs" else 2
    return os.path.normpath(os.path.join(config, *[os.pardir] * ups))


def split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The hook's ``args`` (check options) and the file names pre-commit appends after them."""
    arguments = list(argv)
    cut = len(arguments)
    while cut > 0 and arguments[cut - 1].endswith(".pbtxt"):
        cut -= 1
    return arguments[:cut], arguments[cut:]


def main(argv: Sequence[str] | None = None) -> int:
    """``check`` over the repositories of the changed files, with its exit code."""
    options, files = split(sys.argv[1:] if argv is None else argv)
    repositories = sorted({repository_of(file) for file in files})
    return cli.main(["check", *repositories, *options]) if repositories else 0


if __name__ == "__main__":
    sys.exit(main())
