"""Which earlier reading each poll of ``watch`` pairs with, when sources come and go.

The collectors are replaced by functions that answer from a script (which part is up at
which poll): what is tested is the Poller's bookkeeping, not the server (tests/live does that).
"""

from __future__ import annotations

import pytest
from triton_doctor.checks import gpu, poll
from triton_doctor.checks.live import LiveRequest
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import Evidence, MetricsScrape, ServerEvidence, ServerSample


class Script:
    """A clock and collectors that answer for poll ``n`` at time ``n`` seconds."""

    def __init__(self, server_down_at: set[int]) -> None:
        self.now = 0.0
        self.down = server_down_at

    def clock(self) -> float:
        return self.now

    def describe(self, url: str, timeout: float, known: object = None) -> ServerEvidence:
        if int(self.now) in self.down:
            raise SourceUnavailable("refused")
        return ServerEvidence(url=url)

    def sample(self, url: str, timeout: float) -> ServerSample:
        return ServerSample(at=self.now)

    def scrape(self, url: str, timeout: float) -> MetricsScrape:
        return MetricsScrape(at=self.now)


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Script:
    script = Script(server_down_at={1})
    monkeypatch.setattr(poll.server, "describe", script.describe)
    monkeypatch.setattr(poll.server, "sample", script.sample)
    monkeypatch.setattr(poll.metrics, "scrape", script.scrape)
    monkeypatch.setattr(gpu, "collect_gpu", _no_gpu)
    monkeypatch.setattr(poll, "collect_surroundings", _nothing_around)
    return script


def _no_gpu() -> None:
    raise SourceUnavailable("no NVML here")


def _nothing_around(evidence: Evidence, request: LiveRequest, url: str) -> None:
    evidence.unavailable["container"] = "no Docker here"
    evidence.unavailable["log"] = "no --log FILE given and no container found"


def _sample_times(poller: poll.Poller, script: Script, at: float) -> list[float]:
    script.now = at
    evidence = poller.poll()
    return [s.at for s in evidence.server.samples] if evidence.server else []


def test_a_missed_server_reading_pairs_with_the_one_before(script: Script) -> None:
    poller = poll.Poller(LiveRequest("localhost:8000", window_s=1.5), clock=script.clock)
    assert _sample_times(poller, script, 0) == [0]
    assert _sample_times(poller, script, 1) == []  # the server is down at t=1
    assert _sample_times(poller, script, 2) == [0, 2]
    # t=1.5 and older: t=1 has no sample, so t=0's is the newest a window old.
    assert _sample_times(poller, script, 3) == [0, 3]
    assert _sample_times(poller, script, 4) == [2, 4]


def test_readings_are_forgotten_once_a_newer_one_is_a_window_old(script: Script) -> None:
    script.down = set()
    poller = poll.Poller(LiveRequest("localhost:8000", window_s=2), clock=script.clock)
    for second in range(10):
        times = _sample_times(poller, script, second)
    assert times == [7, 9]
    assert sum(len(kept) for kept in poller._readings.values()) <= 6


def test_a_part_that_stays_missing_does_not_keep_the_others_readings(script: Script) -> None:
    """The server's API failing for an hour while its metrics answer: the metrics pages of
    that hour are not all kept for the server's old sample."""
    script.down = set(range(1, 3600))
    poller = poll.Poller(LiveRequest("localhost:8000", window_s=2), clock=script.clock)
    for second in range(3600):
        _sample_times(poller, script, second)
    assert len(poller._readings["scrape"]) <= 3
    assert [at for at, _ in poller._readings["sample"]] == [0]
