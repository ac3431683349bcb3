"""Debian's Prometheus for the fleet tests (scripts/test.sh installs it). A developer machine
without it skips the tests that need it; with ``CI`` set they fail instead, as everywhere else
a real part is missing."""

from __future__ import annotations

import pytest

from tests.conftest import _missing
from tests.monitoring_harness import binary


@pytest.fixture(scope="session")
def prometheus() -> str:
    """The path of the ``prometheus`` binary."""
    found = binary("prometheus")
    if found is None:
        _missing("prometheus not found: apt-get install prometheus (scripts/test.sh does)")
    return found
