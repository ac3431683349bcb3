"""``check --url`` and ``snapshot`` as a user runs them: exit codes, snapshots, bad sources."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.helpers import PYTHON_MODEL, run_cli, write_model
from tests.server_harness import TritonServer

CONFIG = """
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
"""


@pytest.fixture(scope="module")
def server(triton_server: Callable[..., TritonServer],
           tmp_path_factory: pytest.TempPathFactory) -> TritonServer:
    repository = tmp_path_factory.mktemp("live-cli") / "models"
    write_model(repository, "echo", CONFIG, {"1/model.py": PYTHON_MODEL})
    write_model(repository, "broken", CONFIG.replace("[ 4 ] } ]\noutput", "[ 0 ] } ]\noutput"),
                {"1/model.py": PYTHON_MODEL})
    return triton_server(repository, "--exit-on-error=false", wait_for="/v2/health/live")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_server_exits_3_with_a_clear_message() -> None:
    port = _free_port()
    proc = run_cli("check", "--url", f"127.0.0.1:{port}", "--timeout", "2")
    assert proc.returncode == 3
    assert f"127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr


def test_hanging_server_exits_3_within_the_timeout(silent_port: int) -> None:
    started = time.monotonic()
    proc = run_cli("check", "--url", f"127.0.0.1:{silent_port}", "--timeout", "1")
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - started < 15
    assert "Traceback" not in proc.stderr


def test_metrics_url_asked_for_but_unreachable_exits_3(server: TritonServer) -> None:
    proc = run_cli("check", "--url", server.http_url, "--metrics-url",
                   f"http://127.0.0.1:{_free_port()}/metrics", "--window", "0.2")
    assert proc.returncode == 3 and "metrics" in proc.stderr.lower()


def test_metrics_url_written_as_host_and_port_scrapes_the_server(server: TritonServer,
                                                                   tmp_path: Path) -> None:
    """``--metrics-url 127.0.0.1:PORT``, no scheme and no path, as --url is written."""
    saved = tmp_path / "metrics.json"
    proc = run_cli("snapshot", "--url", server.http_url, "--metrics-url",
                   f"127.0.0.1:{server.metrics_port}", "--window", "0.2", "-o", str(saved))
    assert proc.returncode == 0, proc.stderr
    evidence = json.loads(saved.read_text())["evidence"]
    assert "metrics" not in evidence["unavailable"]
    assert evidence["metrics"]["url"] == server.metrics_url
    assert len(evidence["metrics"]["scrapes"]) == 2


def test_nothing_to_check_is_a_usage_error() -> None:
    proc = run_cli("check")
    assert proc.returncode == 2 and "--url" in proc.stderr


def test_live_check_reports_the_broken_model_and_exits_1(server: TritonServer) -> None:
    proc = run_cli("check", "--url", server.http_url, "--metrics-url", server.metrics_url,
                   "--window", "0.5", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    (finding,) = [f for f in report["findings"] if f["rule"] == "TD601"]
    assert finding["model"] == "broken" and finding["evidence"]["explained_by"] == "TD212"


def test_repository_and_server_together(server: TritonServer) -> None:
    """``check REPO --url``: static and live findings in one report, the server's refusal
    explained by the static finding on the same model, the release taken from the server."""
    proc = run_cli("check", str(server.repository), "--url", server.http_url, "--metrics-url",
                   server.metrics_url, "--window", "0.5", "--format", "json")
    report = json.loads(proc.stdout)
    rules = {(f["rule"], f["model"]) for f in report["findings"]}
    assert {("TD212", "broken"), ("TD601", "broken")} <= rules
    (live,) = [f for f in report["findings"] if f["rule"] == "TD601"]
    assert live["evidence"]["explained_by"] == "TD212"
    assert set(report["target"]) == {"repository", "server"}


def test_snapshot_round_trip_judges_the_same(server: TritonServer, tmp_path: Path) -> None:
    saved = tmp_path / "incident.json"
    url = server.http_url.replace("http://", "http://oncall:s3cret@")
    proc = run_cli("snapshot", "--url", url, "--metrics-url", server.metrics_url,
                   "--window", "0.5", "-o", str(saved))
    assert proc.returncode == 0, proc.stderr
    text = saved.read_text()
    assert "s3cret" not in text and "oncall" not in text
    data = json.loads(text)
    assert data["schema"] == "triton-doctor/snapshot/v1"
    assert len(data["evidence"]["server"]["samples"]) == 2
    again = run_cli("check", "--snapshot", str(saved), "--format", "json")
    assert again.returncode == 1
    rules = {(f["rule"], f["model"]) for f in json.loads(again.stdout)["findings"]}
    assert ("TD601", "broken") in rules


@pytest.mark.parametrize("content", ["not json", '{"schema": "other/v9"}', '{"schema": 1}'])
def test_a_bad_snapshot_is_a_usage_error(tmp_path: Path, content: str) -> None:
    saved = tmp_path / "bad.json"
    saved.write_text(content)
    proc = run_cli("check", "--snapshot", str(saved))
    assert proc.returncode == 2 and str(saved) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_snapshot_cannot_be_combined_with_a_url(tmp_path: Path) -> None:
    proc = run_cli("check", "--snapshot", str(tmp_path / "x.json"), "--url", "localhost:1")
    assert proc.returncode == 2 and "alone" in proc.stderr


class _Fake(BaseHTTPRequestHandler):
    """A server that answers like a broken Triton (or a proxy in front of one)."""

    routes: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def _answer(self) -> None:
        status, body = self.routes.get(self.path, self.routes.get("*", (404, b"")))
        if status == 0:  # drop the connection without answering
            self.close_connection = True
            self.connection.close()
            return
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


Fake = Callable[[dict[str, tuple[int, bytes]]], str]


@pytest.fixture
def fake() -> Iterator[Fake]:
    servers: list[ThreadingHTTPServer] = []

    def start(routes: dict[str, tuple[int, bytes]]) -> str:
        handler = type("Handler", (_Fake,), {"routes": routes})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


LIVE_OK = {"/v2/health/live": (200, b""), "/v2/health/ready": (200, b""),
           "/v2": (200, b'{"name":"triton","version":"2.51.0","extensions":[]}'),
           "/v2/repository/index": (200, b"[]"), "/v2/models/stats": (200, b'{"model_stats":[]}'),
           "/v2/systemsharedmemory/status": (200, b"[]")}
METRICS_OK = b"# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.5\n"


def _live_check(url: str, metrics: str) -> subprocess.CompletedProcess[str]:
    return run_cli("check", "--url", url, "--metrics-url", metrics, "--window", "0.2",
                   "--timeout", "2", "--format", "json")


def _td602(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [f["message"] for f in json.loads(proc.stdout)["findings"] if f["rule"] == "TD602"]


def test_server_answering_500_is_reported_not_crashed_on(fake: Fake) -> None:
    url = fake({"/v2/health/live": (200, b""), "*": (500, b'{"error":"internal"}')})
    proc = _live_check(url, fake({"/metrics": (200, METRICS_OK)}) + "/metrics")
    assert proc.returncode == 1
    assert any("500" in message for message in _td602(proc))


def test_invalid_json_from_the_server_is_reported(fake: Fake) -> None:
    routes = dict(LIVE_OK)
    routes["/v2/repository/index"] = (200, b"<html>not json</html>")
    proc = _live_check(fake(routes), fake({"/metrics": (200, METRICS_OK)}) + "/metrics")
    assert proc.returncode == 0
    assert any("/v2/repository/index" in message for message in _td602(proc))


def test_garbage_lines_on_the_metrics_page_are_counted(fake: Fake) -> None:
    page = METRICS_OK + b"<<< garbage >>>\n\x00\x01 not a metric\n" + METRICS_OK
    proc = _live_check(fake(LIVE_OK), fake({"/metrics": (200, page)}) + "/metrics")
    assert proc.returncode == 0
    assert any("2 lines" in message for message in _td602(proc))


def test_connection_dropped_mid_run_gives_partial_evidence(fake: Fake) -> None:
    routes = dict(LIVE_OK)
    routes["/v2/models/stats"] = (0, b"")
    proc = _live_check(fake(routes), fake({"/metrics": (200, METRICS_OK)}) + "/metrics")
    assert proc.returncode in (1, 3), proc.stderr
    assert "Traceback" not in proc.stderr


def test_snapshot_captured_on_a_real_h200_is_judged() -> None:
    """Evidence triton-doctor's own collector gathered on a real GPU filled to 95 %."""
    saved = Path(__file__).resolve().parent.parent / "fixtures" / "recorded" / "device"
    proc = run_cli("check", "--snapshot", str(saved / "h200-gpu-pressure.snapshot.json"),
                   "--format", "json", "--select", "TD7")
    report = json.loads(proc.stdout)
    assert [f["rule"] for f in report["findings"]] == ["TD701"]
    assert proc.returncode == 0  # a warning: below --fail-on error
