"""One server's checks, on the interval, in a thread of its own: a server that hangs delays
only its own checks, each bounded by --timeout per request. A fleet (``--prometheus``) is one
checker too: each check is one read of the engine, as ``check --prometheus`` makes it.

Each check reads every source once (no retry: a dead server is asked again at the next
interval, not in a storm) and is judged by the same rules as ``check`` and ``watch``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from triton_doctor.checks.collect import (
    FleetPoller,
    LivePoller,
    TargetError,
    reread_repository,
    server_address,
)
from triton_doctor.commands import say
from triton_doctor.evidence import Evidence
from triton_doctor.exporter.series import FLEET_SOURCES, SOURCES, Ledger, judged, outcomes
from triton_doctor.invocation import Invocation
from triton_doctor.report.json_report import finding_dict

#: Seconds between reads of the repository from disk: a deploy that changes it is judged
#: within this, and a thousand models are not walked at every check.
REPOSITORY_EVERY_S = 60.0


class Checker:
    """Checks one server (``invocation.sources.url``), or a fleet through its engine
    (``invocation.sources.fleet``: the engine's address is the instance), and records each in
    the ledger."""

    def __init__(self, invocation: Invocation, base: Evidence, ledger: Ledger,
                 clock: Callable[[], float] = time.monotonic) -> None:
        sources = invocation.sources
        self.invocation = invocation
        self._ledger = ledger
        self._poller: LivePoller | FleetPoller
        if sources.fleet:
            self.instance = server_address(sources.fleet.url)
            self._poller = FleetPoller(invocation, base)
            self.sources = FLEET_SOURCES
        else:
            self.instance = server_address(sources.url or "")
            # A log file is followed from its end: what it held before the exporter started
            # was judged (and alerted on) then, not again at every restart.
            self._poller = LivePoller(invocation, base, log_from_end=True)
            self.sources = SOURCES
        self._clock = clock
        self._read_at = clock()
        self._base = base
        self._said = ""
        #: The sources whose loss is an alert, as they are for `check`: those the user named.
        self.required = ["prometheus"] if sources.fleet else [
            "server", *(["metrics"] if sources.metrics_url else []),
            *(["log"] if sources.log else [])]
        #: The latest check's findings in full (messages, values, fixes), for /findings.
        self.report: dict[str, Any] = {"instance": self.instance, "findings": []}

    def check(self) -> None:
        """One check; never raises: a defect is recorded as a failed check and said (once
        while it repeats)."""
        started = self._clock()
        problem = self._fresh_repository(started)
        try:
            evidence = self._poller.poll()
            result = self.invocation.judge(evidence)
        except TargetError as error:  # a fleet's selector refused or matching nothing (yet)
            self._failed(started, str(error), answered=True)
            return
        except Exception as error:  # a long-running exporter outlives a defect in one check
            self._failed(started, f"internal error ({type(error).__name__}: {error}); please "
                         "report it")
            return
        duration = self._clock() - started
        ran, skipped = outcomes(result)
        unjudged = self.invocation.sources.fleet is not None and _replicas_unjudged(evidence)
        self._ledger.record(judged(self.instance, evidence, result, duration, self.required,
                                   whole=problem is None, log_counted=bool(
                                       self.invocation.sources.log), sources=self.sources),
                            time.time(), ran, skipped, replicas_unjudged=unjudged)
        found = [finding_dict(f) for f in result.findings]
        if unjudged:
            new = {(f["fingerprint"], f.get("instance")) for f in found}
            found += [f for f in self.report["findings"] if "instance" in f
                      and (f["fingerprint"], f["instance"]) not in new]
        self.report = {"instance": self.instance, "checked_at": time.time(),
                       "duration_s": round(duration, 3), "unreachable": evidence.unreachable,
                       "findings": found}
        if problem:
            self.report["failed"] = problem
        self._said_once(problem or "")

    def _failed(self, started: float, why: str, *, answered: bool = False) -> None:
        """A check that judged nothing: said (once while it repeats), its last judgement kept
        served, and ``why`` on /findings; ``answered``: the sources were read."""
        self._said_once(why)
        self._ledger.failed(self.instance, self._clock() - started, self.required,
                            self.sources, answered=answered)
        self.report = {**self.report, "failed": why}

    def run(self, stop: threading.Event, interval_s: float) -> None:
        """Check at once, then every ``interval_s`` from the start of the last check (at once
        after a check that took longer), until ``stop`` is set."""
        while not stop.is_set():
            started = self._clock()
            self.check()
            stop.wait(max(0.0, interval_s - (self._clock() - started)))

    def _fresh_repository(self, now: float) -> str | None:
        """Read the repository again when it is due; why it could not be, if so (the last one
        read is judged meanwhile, and the server checked all the same)."""
        if self._base.repository is None or now - self._read_at < REPOSITORY_EVERY_S:
            return None
        self._read_at = now
        try:
            self._base = reread_repository(self.invocation, self._base)
        except (TargetError, ValueError) as error:
            return f"the repository could not be read again: {error}"
        self._poller.repository = self._base.repository
        return None

    def _said_once(self, why: str) -> None:
        """``why`` on stderr when it is new; "" when the check is whole again."""
        if why and why != self._said:
            say(f"{self.instance}: the check failed: {why}")
        self._said = why


def _replicas_unjudged(evidence: Evidence) -> bool:
    """Whether the fleet's replicas went without a full judgement: the engine was out of reach,
    or queries failed (a check in flight while the engine goes away, or one timing out). Their
    findings are then kept, not cleared for want of an answer. A replica's own API failing
    (--ask-replicas) is not this: it says nothing of the others' findings."""
    fleet = evidence.fleet
    return fleet is None or bool(fleet.errors)
