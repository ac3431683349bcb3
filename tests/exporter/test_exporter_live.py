"""``triton-doctor exporter`` as a process, against a real tritonserver: what it serves while
a model fails to load and another is swamped, a server that goes away and comes back, a
server that hangs, and the flags it refuses."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.monitoring_harness import Exporter, get, series, wait_until
from tests.python_models import ECHO_PY, INCIDENT, UNBATCHED, Load, infer, wait_ready, write_models
from tests.server_harness import TritonServer


def _firing(exporter: Exporter) -> set[tuple[str, str]]:
    return {(labels["rule"], labels["model"])
            for labels, value in series(exporter.metrics(), "triton_doctor_finding") if value}


def _value(exporter: Exporter, name: str, **labels: str) -> float | None:
    for found, value in series(exporter.metrics(), name):
        if labels.items() <= found.items():
            return value
    return None


@pytest.fixture(scope="module")
def incident(triton_server: Callable[..., TritonServer],
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TritonServer, Path]]:
    """A server with ``broken`` refused and eight clients on ``slow``."""
    repository = write_models(tmp_path_factory.mktemp("exporter") / "models", INCIDENT)
    server = triton_server(repository, "--exit-on-error=false", wait_for="/v2/health/live")
    wait_ready(server.http_url, "slow")
    load = Load()
    load.clients(8, lambda i: infer(server.http_url, "slow", 1.0, batched=False))
    yield server, repository
    load.end()


def test_the_exporter_serves_what_fires_with_its_fix_one_link_away(
        incident: tuple[TritonServer, Path], tmp_path: Path) -> None:
    server, repository = incident
    exporter = Exporter("--url", server.http_url, "--metrics-url", server.metrics_url,
                        "--interval", "1", "--window", "2", str(repository), workdir=tmp_path)
    try:
        firing = wait_until(lambda: (found := _firing(exporter)) >= {
            ("TD601", "broken"), ("TD611", "slow"), ("TD212", "broken")} and found,
            60, "TD601 on broken and TD611 on slow")
        assert ("TD611", "broken") not in firing
        instance = server.http_url.removeprefix("http://")
        assert _value(exporter, "triton_doctor_check_success", instance=instance) == 1
        assert _value(exporter, "triton_doctor_source_up", source="server") == 1
        assert _value(exporter, "triton_doctor_source_up", source="metrics") == 1
        assert _value(exporter, "triton_doctor_rule_runs_total", rule="TD611") >= 1
        info = {labels["rule"]: labels for labels, _ in
                series(exporter.metrics(), "triton_doctor_rule_info")}
        docs = info["TD611"]["docs"]
        assert docs == f"{exporter.url}/rules/TD611"
        page = get(docs).decode()
        assert page.startswith("TD611 queue-backlog (warning)") and "Fix:" in page

        report = json.loads(get(exporter.url + "/findings"))["servers"][0]
        assert report["instance"] == instance
        slow = next(f for f in report["findings"] if f["rule"] == "TD611")
        assert "pending" in slow["message"] and "instance_group" in slow["fix"]
        assert exporter.stop() == 0  # SIGTERM ends it cleanly
    finally:
        exporter.stop()


def test_a_server_that_goes_away_is_marked_down_and_recovers_when_it_comes_back(
        triton_server: Callable[..., TritonServer], tmp_path: Path) -> None:
    repository = write_models(tmp_path / "models", {"echo": (UNBATCHED, ECHO_PY)})
    server = triton_server(repository)
    exporter = Exporter("--url", server.http_url, "--interval", "0.5", "--timeout", "1",
                        workdir=tmp_path)
    try:
        wait_until(lambda: _value(exporter, "triton_doctor_source_up", source="server") == 1,
                   30, "the server read")
        server.stop()
        wait_until(lambda: ("TD603", "") in _firing(exporter), 30, "TD603 once it is gone")
        assert _value(exporter, "triton_doctor_source_up", source="server") == 0
        assert _value(exporter, "triton_doctor_check_success") == 1  # the check said so
        server.restart()
        wait_until(lambda: _value(exporter, "triton_doctor_source_up", source="server") == 1,
                   60, "the server read again")
        assert ("TD603", "") not in _firing(exporter)
        assert exporter.process.poll() is None
    finally:
        exporter.stop()


@pytest.fixture
def counted_silent_port() -> Iterator[tuple[int, list[float]]]:
    """A port that accepts connections and never answers; the times it accepted them."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    accepted: list[float] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
                accepted.append(time.monotonic())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1], accepted
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def test_a_hung_server_is_asked_once_per_check_and_scrapes_do_not_wait_on_it(
        counted_silent_port: tuple[int, list[float]], tmp_path: Path) -> None:
    port, accepted = counted_silent_port
    exporter = Exporter("--url", f"127.0.0.1:{port}", "--metrics-url", f"127.0.0.1:{port}",
                        "--interval", "0.5", "--timeout", "0.4", workdir=tmp_path)
    try:
        wait_until(lambda: (_value(exporter, "triton_doctor_checks_total") or 0) >= 6, 30,
                   "six checks")
        slowest = 0.0
        for _ in range(20):  # scrapes while a check waits on the hung server
            started = time.monotonic()
            page = exporter.metrics()
            slowest = max(slowest, time.monotonic() - started)
        checks = next(value for _, value in series(page, "triton_doctor_checks_total"))
        # One connection per source per check (the server, then its metrics), never retried.
        assert len(accepted) <= 2 * checks + 2, (len(accepted), checks)
        assert ("TD603", "") in {(labels["rule"], labels["model"]) for labels, _ in
                                 series(page, "triton_doctor_finding")}
        # A scrape reads the last check: it never waits out a request to the server.
        assert slowest < 0.4, f"a scrape took {slowest * 1000:.0f} ms"
    finally:
        exporter.stop()


def test_servers_are_checked_apart_so_a_hung_one_does_not_hold_back_another(
        triton_server: Callable[..., TritonServer], tmp_path: Path,
        counted_silent_port: tuple[int, list[float]]) -> None:
    repository = write_models(tmp_path / "models", {"echo": (UNBATCHED, ECHO_PY)})
    server = triton_server(repository)
    hung = f"127.0.0.1:{counted_silent_port[0]}"
    exporter = Exporter("--url", server.http_url, "--url", hung, "--url", f"http://{hung}/",
                        "--interval", "0.5", "--timeout", "2", workdir=tmp_path)
    try:
        live = server.http_url.removeprefix("http://")
        wait_until(lambda: (_value(exporter, "triton_doctor_checks_total", instance=live)
                            or 0) >= 10, 30, "ten checks of the live server")
        page = exporter.metrics()
        checks = {labels["instance"]: value
                  for labels, value in series(page, "triton_doctor_checks_total")}
        assert set(checks) == {live, hung}  # the hung server named twice is checked once
        assert checks[hung] <= 4, checks  # each of its checks waits out --timeout
        up = {labels["instance"]: value for labels, value in
              series(page, "triton_doctor_source_up") if labels["source"] == "server"}
        assert up == {live: 1, hung: 0}
    finally:
        exporter.stop()


@pytest.mark.parametrize(("args", "said"), [
    (["--url", "a:8000", "--url", "b:8000", "--log", "x.log"], "--log belong(s) to one server"),
    (["--url", "ftp://a"], "must be http:// or https://"),
    (["--url", "a:8000", "--listen", "nowhere"], "give HOST:PORT or :PORT"),
    (["--url", "a:8000", "--log", "-"], "not standard input"),
])
def test_flags_that_make_no_exporter_are_refused_at_once(args: list[str], said: str) -> None:
    listen = [] if "--listen" in args else ["--listen", "127.0.0.1:0"]
    proc = subprocess.run([sys.executable, "-m", "triton_doctor", "exporter", *args, *listen],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr


def test_an_address_in_use_is_refused_naming_it() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "triton_doctor", "exporter", "--url",
                               "127.0.0.1:1", "--listen", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in proc.stderr


def test_lines_a_log_rule_matches_are_counted_as_they_are_written(tmp_path: Path) -> None:
    """An old crash the log held when the exporter started is not counted (it would page at
    every restart); one written while it runs is."""
    crash = (Path(__file__).parents[2] / "fixtures" / "logs" /
             "server_crash_signal11.log").read_text()
    log = tmp_path / "server.log"
    log.write_text(crash)
    with socket.create_server(("127.0.0.1", 0)) as closed:  # a port where nothing listens
        dead = f"127.0.0.1:{closed.getsockname()[1]}"
    exporter = Exporter("--url", dead, "--log", str(log), "--interval", "0.5", "--timeout",
                        "0.5", workdir=tmp_path)
    try:
        wait_until(lambda: _value(exporter, "triton_doctor_source_up", source="log") == 1, 30,
                   "the log read")
        assert series(exporter.metrics(), "triton_doctor_log_lines_total") == []
        with log.open("a") as appended:
            appended.write(crash)
        counted = wait_until(lambda: _value(exporter, "triton_doctor_log_lines_total",
                                            rule="TD811"), 30, "the crash counted")
        assert counted >= 1
        assert ("TD811", "") not in _firing(exporter)  # a line, not a state that clears
        assert ("TD603", "") in _firing(exporter)
    finally:
        exporter.stop()
