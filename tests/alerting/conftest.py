"""promtool, which judges the rules files: Debian's ``prometheus`` package has it (CI installs
it). A developer machine without it skips these tests; CI fails them."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        _missing("promtool not found: apt-get install prometheus (Debian's package has it)")
    return found
