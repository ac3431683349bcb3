"""The Poller that ``watch`` reads through, against a real tritonserver.

Nothing of the server's API is faked: the server answers for real, traffic is real requests,
a stopped server is a killed process. Only our own HTTP client's ``_Api.call`` is wrapped, to
count what each poll asks. The window is half a second, so the tests take seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from triton_doctor.checks import server as server_api
from triton_doctor.checks.live import LiveRequest
from triton_doctor.checks.poll import Poller
from triton_doctor.triton.metrics_model import MetricsView
from triton_doctor.triton.server_model import LiveView

import tests.server_harness
from tests.python_models import ADD_PY, infer, kill, wait_ready, write_repository
from tests.server_harness import TritonServer

WINDOW = 0.5
MODELS = {"healthy_add": ADD_PY, "versioned": ADD_PY}
Calls = list[tuple[str, str]]


@pytest.fixture(scope="module")
def server(triton_server: Callable[..., TritonServer],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    """Explicit model control, so a test can load a new version of ``versioned``."""
    repository = write_repository(tmp_path_factory.mktemp("poller") / "models", MODELS)
    started = triton_server(repository, "--model-control-mode=explicit", "--load-model=*")
    yield started
    kill(started)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    """Every (method, path) our client asks of the server, in order."""
    seen: Calls = []
    real = server_api._Api.call

    def counting(api: server_api._Api, method: str, path: str) -> tuple[int, bytes]:
        seen.append((method, path))
        answer: tuple[int, bytes] = real(api, method, path)
        return answer

    monkeypatch.setattr(server_api._Api, "call", counting)
    yield seen


def _poller(server: TritonServer, window_s: float = WINDOW,
            clock: Callable[[], float] = time.monotonic, slow_every_s: float = 10.0) -> Poller:
    request = LiveRequest(server.http_url, server.metrics_url, window_s=window_s, timeout_s=2.0)
    return Poller(request, clock=clock, slow_every_s=slow_every_s)


def _configs_asked(calls: Calls) -> list[str]:
    return [path for _, path in calls if path.endswith("/config")]


def test_first_poll_has_one_sample_and_no_rates(server: TritonServer) -> None:
    evidence = _poller(server).poll()
    assert "server" not in evidence.unavailable and "metrics" not in evidence.unavailable
    assert evidence.server is not None and evidence.metrics is not None
    assert evidence.server.version == "2.51.0"
    assert {m.name: m.state for m in evidence.server.models} == {
        "healthy_add": "READY", "versioned": "READY"}
    assert all(m.config and m.config["name"] == m.name for m in evidence.server.models)
    assert len(evidence.server.samples) == 1
    assert len(evidence.metrics.scrapes) == 1
    assert LiveView(evidence).rates == []


def test_rates_cover_the_traffic_sent_within_the_window(server: TritonServer) -> None:
    poller = _poller(server)
    started = time.monotonic()
    first = poller.poll()
    assert first.server is not None
    sent = 12
    assert [infer(server.http_url) for _ in range(sent)] == [200] * sent
    time.sleep(max(0.0, started + WINDOW + 0.05 - time.monotonic()))
    evidence = poller.poll()
    assert evidence.server is not None and evidence.metrics is not None
    before, after = evidence.server.samples
    assert before is first.server.samples[0]  # the only reading, and a window old
    assert after.at - before.at >= WINDOW
    rates = {r.model: r for r in LiveView(evidence).rates}
    add = rates["healthy_add"]
    assert (add.requests, add.inferences, add.failures) == (sent, sent, 0)
    assert add.requests_per_s == pytest.approx(sent / (after.at - before.at))
    assert 1 <= add.executions <= sent
    assert rates["versioned"].requests == 0
    assert len(evidence.metrics.scrapes) == 2
    assert MetricsView(evidence.metrics).delta("nv_inference_request_success",
                                               model="healthy_add") == sent


def test_polls_faster_than_the_window_pair_with_the_newest_reading_a_window_old(
        server: TritonServer) -> None:
    times: list[float] = []

    def clock() -> float:  # the real clock, remembered: each poll reads it once
        times.append(time.monotonic())
        return times[-1]

    poller = _poller(server, clock=clock)
    polls = [poller.poll()]
    assert infer(server.http_url) == 200
    ended = time.monotonic() + 3 * WINDOW
    while time.monotonic() < ended or len(polls) <= 10:  # a loaded machine polls slower
        time.sleep(0.1)
        polls.append(poller.poll())
    assert len(times) == len(polls)
    samples = []
    for evidence in polls:
        assert evidence.server is not None
        samples.append(evidence.server.samples[-1])
    for index, evidence in enumerate(polls[1:], start=1):
        assert evidence.server is not None
        old_enough = [j for j in range(index) if times[index] - times[j] >= WINDOW]
        expected = old_enough[-1] if old_enough else 0
        earlier, now = evidence.server.samples
        assert now is samples[index]
        assert earlier is samples[expected], (index, expected, times)
    last = polls[-1].server
    assert last is not None
    # Paired with the newest reading a window old: the span exceeds the window by less
    # than the longest pause between two polls.
    longest_pause = max(later - sooner for sooner, later in pairwise(times))
    assert WINDOW <= last.samples[-1].at - last.samples[0].at < WINDOW + longest_pause + 0.1
    # The request went out more than a window ago: it has slid out of the rates.
    rates = {r.model: r for r in LiveView(polls[-1]).rates}
    assert rates["healthy_add"].requests == 0


def test_configs_are_asked_once_then_on_a_new_version_or_the_slow_pace(
        server: TritonServer, calls: Calls) -> None:
    now = [1000.0]
    poller = _poller(server, clock=lambda: now[0], slow_every_s=10.0)
    poller.poll()
    assert sorted(_configs_asked(calls)) == ["/v2/models/healthy_add/config",
                                             "/v2/models/versioned/config"]
    per_poll = []
    for _ in range(3):
        now[0] += 1.0
        calls.clear()
        evidence = poller.poll()
        assert _configs_asked(calls) == []
        per_poll.append(sorted(calls))
        assert evidence.server is not None
        assert all(m.config for m in evidence.server.models if m.state == "READY")
    assert per_poll[0] == per_poll[1] == per_poll[2]
    # Nothing per model in a steady poll: its cost does not grow with the repository.
    assert not [path for _, path in per_poll[0] if path.startswith("/v2/models/")
                and path != "/v2/models/stats"], per_poll[0]

    version = server.served_repository / "versioned" / "2"
    version.mkdir()
    (version / "model.py").write_text(ADD_PY)
    loaded = server.load("versioned")
    assert loaded.ok, loaded.error
    now[0] += 1.0
    calls.clear()
    evidence = poller.poll()
    assert _configs_asked(calls) == ["/v2/models/versioned/config"]
    assert evidence.server is not None
    assert {(m.name, m.version) for m in evidence.server.models if m.state == "READY"} == {
        ("healthy_add", "1"), ("versioned", "2")}

    now[0] += 10.0
    calls.clear()
    poller.poll()
    assert sorted(_configs_asked(calls)) == ["/v2/models/healthy_add/config",
                                             "/v2/models/versioned/config"]


def test_a_killed_server_is_unavailable_and_one_on_the_same_port_recovers(
        triton_server: Callable[..., TritonServer], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    repository = write_repository(tmp_path / "models", {"healthy_add": ADD_PY})
    first = triton_server(repository)
    wait_ready(first.http_url, "healthy_add")
    # A long window: the reading from before the kill stays the one rates are taken against.
    poller = _poller(first, window_s=60.0)
    assert [infer(first.http_url) for _ in range(5)] == [200] * 5
    before = poller.poll()
    assert before.server is not None and "server" not in before.unavailable

    kill(first)
    started = time.monotonic()
    down = poller.poll()
    assert time.monotonic() - started < 2.0
    assert down.server is None
    assert "connection refused" in down.unavailable["server"]
    assert "metrics" in down.unavailable

    ports = iter([first.http_port, first.metrics_port])
    monkeypatch.setattr(tests.server_harness, "_free_port", lambda: next(ports))
    again = triton_server(repository)
    request.addfinalizer(lambda: kill(again))
    assert (again.http_port, again.metrics_port) == (first.http_port, first.metrics_port)
    wait_ready(again.http_url, "healthy_add")
    assert infer(again.http_url) == 200
    back = poller.poll()
    assert "server" not in back.unavailable and "metrics" not in back.unavailable
    assert back.server is not None
    assert [(m.name, m.state) for m in back.server.models] == [("healthy_add", "READY")]
    assert back.server.models[0].config is not None
    # Paired with the old server's reading: its counters went back, which is no rate at all
    # rather than a negative one.
    assert len(back.server.samples) == 2
    assert back.server.samples[0] is before.server.samples[0]
    assert [r.model for r in LiveView(back).rates] == []
