"""Collect a running server again and again for ``watch``, without sleeping in between.

``check --url`` samples twice a window apart and sleeps between. ``watch`` polls every second
or so, so each poll takes one reading and pairs it with the reading of about one window ago:
rates cover a whole window from the second poll that is that old on. The server must not
be asked more than it needs: configs are asked again only for models whose version changed,
or every ``slow_every_s``; the container and /dev/shm (a scan of every process) are read at
that slower pace too. A source that fails is recorded in ``unavailable`` for that poll only,
so it shows again as soon as it answers.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from triton_doctor.checks import logs, metrics, server
from triton_doctor.checks.live import (
    LiveRequest,
    collect_surroundings,
    metrics_url_for,
    read_gpu,
    unreachable,
    with_trend,
)
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import hide_credentials
from triton_doctor.evidence import (
    Evidence,
    MetricsEvidence,
    MetricsScrape,
    ServerSample,
)
from triton_doctor.records import replace

#: Seconds between reads of the configs, the container and /dev/shm.
SLOW_EVERY_S = 10.0
#: The parts of a reading that rates and trends compare.
PARTS = ("sample", "scrape", "gpu")


class Poller:
    """One ``poll()`` = one reading of every source, judged against the reading a window ago."""

    def __init__(self, request: LiveRequest, clock: Callable[[], float] = time.monotonic,
                 slow_every_s: float = SLOW_EVERY_S, log_from_end: bool = False) -> None:
        self.request = request
        self.url = hide_credentials(request.url)
        self.metrics_url = request.metrics_url or metrics_url_for(self.url)
        self._clock = clock
        self._slow_every_s = slow_every_s
        #: Per part, the readings that had it, oldest first: the newest one a window old
        #: and those since (a part that stays missing keeps its last reading alone).
        self._readings: dict[str, deque[tuple[float, Any]]] = {part: deque() for part in PARTS}
        self._configs: dict[tuple[str, str], dict[str, Any]] = {}
        self._slow_at: float | None = None
        self._surroundings = Evidence()
        self._log = (logs.LogFollower(request.log_path, from_end=log_from_end)
                     if request.log_path else None)

    def poll(self) -> Evidence:
        """The Evidence now; never raises for a source that fails, it is marked unavailable."""
        now = self._clock()
        slow = self._slow_at is None or now - self._slow_at >= self._slow_every_s
        if slow:
            self._slow_at = now
            self._configs.clear()
        evidence = Evidence()
        reading = {"sample": self._sample(evidence), "scrape": self._scrape(evidence),
                   "gpu": read_gpu(evidence)}
        earlier = {part: self._earlier(part, now) for part in PARTS}
        for part, value in reading.items():
            if value is not None:
                self._readings[part].append((now, value))
        if evidence.server is not None:  # None exactly when the sample failed
            evidence.server.samples = [s for s in (earlier["sample"], reading["sample"]) if s]
        if reading["scrape"] is not None:
            evidence.metrics = MetricsEvidence(
                url=hide_credentials(self.metrics_url),
                scrapes=[s for s in (earlier["scrape"], reading["scrape"]) if s])
        if reading["gpu"] is not None:
            if earlier["gpu"] is not None:
                with_trend(reading["gpu"], earlier["gpu"])
            evidence.gpu = reading["gpu"]
        self._add_surroundings(evidence, slow)
        return evidence

    def _sample(self, evidence: Evidence) -> ServerSample | None:
        try:
            evidence.server = server.describe(self.url, self.request.timeout_s, self._configs)
            taken = server.sample(self.url, self.request.timeout_s)
        except SourceUnavailable as error:
            evidence.server = None
            unreachable(evidence, "server", str(error))
            return None
        for model in evidence.server.models:
            if model.config is not None:
                self._configs[(model.name, model.version)] = model.config
        return taken

    def _scrape(self, evidence: Evidence) -> MetricsScrape | None:
        try:
            return metrics.scrape(self.metrics_url, self.request.timeout_s)
        except SourceUnavailable as error:
            if self.request.metrics_url:
                unreachable(evidence, "metrics", str(error))
            else:
                evidence.unavailable["metrics"] = str(error)
            return None

    def _earlier(self, part: str, now: float) -> Any:
        """The newest reading of ``part`` at least a window old (else the oldest kept): a
        server that missed polls still has its rates from the reading before. What is older
        than that one is forgotten, so memory holds a window of polls, however long a part
        stays missing."""
        kept = self._readings[part]
        while len(kept) > 1 and kept[1][0] <= now - self.request.window_s:
            kept.popleft()
        return kept[0][1] if kept else None

    def _add_surroundings(self, evidence: Evidence, slow: bool) -> None:
        """Container, host and log: read at the slow pace and carried over in between."""
        if slow:
            self._surroundings = Evidence()
            # The log is read below, every poll: not at this pace.
            collect_surroundings(self._surroundings, replace(self.request, log_path=None),
                                 self.url)
        kept = self._surroundings
        evidence.container, evidence.host = kept.container, kept.host
        evidence.unavailable.update(
            {part: why for part, why in kept.unavailable.items() if part in ("container", "host")})
        self._add_log(evidence)

    def _add_log(self, evidence: Evidence) -> None:
        """The log every poll, without waiting on a pipe: it is what an incident is read from."""
        if self._log is not None:
            try:
                evidence.log = self._log.read()
            except SourceUnavailable as error:
                unreachable(evidence, "log", str(error))
        elif self._surroundings.log is not None:
            evidence.log = self._surroundings.log
        else:
            evidence.unavailable["log"] = self._surroundings.unavailable["log"]

