"""One server's checks in the exporter, with the clock in the test's hands: the repository read
again when due, and a repository that can no longer be read."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.exporter.checker import REPOSITORY_EVERY_S, Checker
from triton_doctor.exporter.series import Ledger
from triton_doctor.invocation import Invocation

from tests.helpers import ROOT
from tests.monitoring_harness import series


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _page(ledger: Ledger) -> str:
    registry = CollectorRegistry()
    registry.register(ledger)
    return generate_latest(registry).decode()


def test_a_repository_that_cannot_be_read_again_fails_the_check_but_not_the_server_read(
        tmp_path: Path) -> None:
    repository = tmp_path / "models"
    shutil.copytree(ROOT / "fixtures" / "demo-repository" / "classifier",
                    repository / "classifier")
    with socket.create_server(("127.0.0.1", 0)) as closed:  # nothing listens there after
        url = f"127.0.0.1:{closed.getsockname()[1]}"
    invocation = Invocation.from_args(build_parser().parse_args(
        ["exporter", "--url", url, "--timeout", "0.5", str(repository)]))
    ledger, clock = Ledger(invocation.rules), Clock()
    checker = Checker(invocation, collect(invocation, live=False), ledger, clock)
    checker.check()
    assert "failed" not in checker.report
    assert series(_page(ledger), "triton_doctor_check_success")[0][1] == 1

    shutil.rmtree(repository)
    clock.now += REPOSITORY_EVERY_S
    checker.check()
    page = _page(ledger)
    assert "the repository could not be read again" in checker.report["failed"]
    assert series(page, "triton_doctor_check_success")[0][1] == 0
    # The server was still asked (it is down: TD603), with the repository read before.
    rules = {labels["rule"] for labels, _ in series(page, "triton_doctor_finding")}
    assert "TD603" in rules
    assert {f["model"] for f in checker.report["findings"]} >= {"classifier"}

    clock.now += 1  # not due again: the next check does not walk the missing directory
    checker.check()
    assert "failed" not in checker.report
    assert series(_page(ledger), "triton_doctor_check_success")[0][1] == 1
