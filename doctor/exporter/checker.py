"""One server's checks, on the interval, in a thread of its own: a server that hangs delays
only its own checks, each bounded by --timeout per request.

Each check reads every source once (no retry: a dead server is asked again at the next
interval, not in a storm) and is judged by the same rules as ``check`` and ``watch``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from triton_doctor.checks.collect import (
    LivePoller,
    TargetError,
    reread_repository,
    server_address,
)
from triton_doctor.commands import say
from triton_doctor.evidence import Evidence
from triton_doctor.exporter.series import Ledger, judged, outcomes
from triton_doctor.invocation import Invocation
from triton_doctor.report.json_report import finding_dict

#: Seconds between reads of the repository from disk: a deploy that changes it is judged
#: within this, and a thousand models are not walked at every check.
REPOSITORY_EVERY_S = 60.0


class Checker:
    """Checks one server (``invocation.sources.url``) and records each in the ledger."""

    def __init__(self, invocation: Invocation, base: Evidence, ledger: Ledger,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.invocation = invocation
        self.instance = server_address(invocation.sources.url or "")
        self._ledger = ledger
        self._poller = LivePoller(invocation, base)
        self._clock = clock
        self._read_at = clock()
        self._base = base
        self.required = ["server", "metrics", *(["log"] if invocation.sources.log else [])]
        #: The latest check's findings in full (messages, values, fixes), for /findings.
        self.report: dict[str, Any] = {"instance": self.instance, "findings": []}

    def check(self) -> None:
        """One check; never raises: a defect is recorded as a failed check and said."""
        started = self._clock()
        try:
            self._fresh_repository(started)
            evidence = self._poller.poll()
            result = self.invocation.judge(evidence)
        except TargetError as error:
            self._failed(started, str(error))
            return
        except Exception as error:  # a long-running exporter outlives a defect in one check
            self._failed(started, f"internal error ({type(error).__name__}: {error}); please "
                         "report it")
            return
        duration = self._clock() - started
        ran, skipped = outcomes(result, self.invocation.rules)
        self._ledger.record(judged(self.instance, evidence, result, duration, self.required),
                            time.time(), ran, skipped)
        self.report = {"instance": self.instance, "checked_at": time.time(),
                       "duration_s": round(duration, 3), "unreachable": evidence.unreachable,
                       "findings": [finding_dict(f) for f in result.findings]}

    def run(self, stop: threading.Event, interval_s: float) -> None:
        """Check at once, then every ``interval_s`` from the start of the last check (at once
        after a check that took longer), until ``stop`` is set."""
        while not stop.is_set():
            started = self._clock()
            self.check()
            stop.wait(max(0.0, interval_s - (self._clock() - started)))

    def _fresh_repository(self, now: float) -> None:
        if self._base.repository is None or now - self._read_at < REPOSITORY_EVERY_S:
            return
        self._base = reread_repository(self.invocation, self._base)
        self._poller.repository = self._base.repository
        self._read_at = now

    def _failed(self, started: float, why: str) -> None:
        say(f"{self.instance}: the check failed: {why}")
        self._ledger.failed(self.instance, self._clock() - started, self.required)
        self.report = {**self.report, "failed": why}
