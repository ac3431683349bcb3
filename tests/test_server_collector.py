"""The live collectors: the server's HTTP API (a real tritonserver 2.51, and small misbehaving
HTTP servers on loopback) and the server log."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from triton_doctor.checks.logs import from_container, read_log
from triton_doctor.checks.server import describe, normalize_url, sample
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import ContainerEvidence

from tests.conftest import StartServer
from tests.helpers import python_without_dac_override
from tests.server_harness import TritonServer

TIMEOUT = 1.0

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 8
input [
  {{ name: "INPUT0" data_type: {dtype} dims: [ 4 ] }},
  {{ name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
output [ {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }} ]
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

MODEL_PY = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        {init}

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", a + b)
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""


def _model(root: Path, name: str, dtype: str = "TYPE_FP32", init: str = "pass") -> None:
    (root / name / "1").mkdir(parents=True)
    (root / name / "config.pbtxt").write_text(CONFIG.format(name=name, dtype=dtype))
    (root / name / "1" / "model.py").write_text(MODEL_PY.format(init=init))


@pytest.fixture(scope="module")
def server(triton_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> TritonServer:
    """A server that stays up with one good model, one that fails to load, one poll failure."""
    repo = tmp_path_factory.mktemp("live-repo")
    _model(repo, "good")
    _model(repo, "init_raises", init='raise RuntimeError("boom in initialize")')
    _model(repo, "bad_dtype", dtype="TYPE_FLOAT32")
    # Not ready (two models failed), so wait for live.
    return triton_server(repo, "--exit-on-error=false", wait_for="/v2/health/live")


def test_describe_real_server(server: TritonServer) -> None:
    evidence = describe(server.http_url, TIMEOUT * 10)
    assert evidence.url == server.http_url
    assert evidence.live and not evidence.ready
    assert evidence.version == "2.51.0"
    assert "statistics" in evidence.extensions
    assert evidence.errors == {}
    models = {m.name: m for m in evidence.models}
    assert set(models) == {"good", "init_raises", "bad_dtype"}
    good = models["good"]
    assert (good.version, good.state, good.reason) == ("1", "READY", "")
    assert good.config is not None and good.config["max_batch_size"] == 8
    assert [i["name"] for i in good.config["input"]] == ["INPUT0", "INPUT1"]
    failed = models["init_raises"]
    assert failed.state == "UNAVAILABLE" and failed.config is None
    assert "RuntimeError: boom in initialize" in failed.reason
    # A directory that failed the repository poll: listed by name only, reason in the log.
    assert (models["bad_dtype"].state, models["bad_dtype"].reason) == ("", "")


def _infer(server: TritonServer, rows: int) -> None:
    data = [[1.0, 2.0, 3.0, 4.0]] * rows
    request = {"inputs": [
        {"name": name, "shape": [rows, 4], "datatype": "FP32", "data": data}
        for name in ("INPUT0", "INPUT1")
    ]}
    status, body = server.post("/v2/models/good/infer", json.dumps(request).encode())
    assert status == 200, body


def test_sample_counts_inferences(server: TritonServer) -> None:
    before = {s.name: s for s in sample(server.http_url, TIMEOUT * 10).stats}
    for rows in (1, 3, 3):
        _infer(server, rows)
    taken = sample(server.http_url, TIMEOUT * 10)
    assert taken.errors == {}
    assert abs(taken.at - time.time()) < 10
    stats = {s.name: s for s in taken.stats}
    good, earlier = stats["good"], before["good"]
    assert good.version == "1"
    assert good.success_count - earlier.success_count == 3
    assert good.inference_count - earlier.inference_count == 7
    assert good.execution_count - earlier.execution_count == 3
    assert good.fail_count == 0
    assert good.success_ns > good.compute_infer_ns > 0
    assert good.batch_executions["3"] - earlier.batch_executions.get("3", 0) == 2
    assert good.batch_executions["1"] - earlier.batch_executions.get("1", 0) == 1


def test_sample_sees_system_shared_memory(server: TritonServer) -> None:
    key = f"tdoctor-test-{uuid.uuid4().hex[:8]}"
    region = f"region-{key}"
    shm = Path("/dev/shm") / key
    shm.write_bytes(b"\0" * 64)
    try:
        body = json.dumps({"key": f"/{key}", "offset": 0, "byte_size": 64}).encode()
        status, answer = server.post(f"/v2/systemsharedmemory/region/{region}/register", body)
        assert status == 200, answer
        try:
            regions = {r.name: r for r in sample(server.http_url, TIMEOUT * 10).system_shm}
            assert regions[region].key == f"/{key}"
            assert regions[region].byte_size == 64
        finally:
            server.post(f"/v2/systemsharedmemory/region/{region}/unregister", b"")
        names = [r.name for r in sample(server.http_url, TIMEOUT * 10).system_shm]
        assert region not in names
    finally:
        shm.unlink()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://localhost:8000", ("localhost:8000", "http")),
        ("localhost:8001", ("localhost:8001", "http")),
        ("triton", ("triton:8000", "http")),
        ("HTTPS://triton.example.com", ("triton.example.com:443", "https")),
        ("https://triton:8443/base/", ("triton:8443/base", "https")),
        ("http://[::1]:9000", ("[::1]:9000", "http")),
        (" 10.0.0.5 ", ("10.0.0.5:8000", "http")),
    ],
)
def test_normalize_url(given: str, expected: tuple[str, str]) -> None:
    assert normalize_url(given) == expected


@pytest.mark.parametrize("given", ["grpc://triton:8001", "http://triton:port", "http://:8000",
                                   "http://triton:8000?x=1"])
def test_normalize_url_refuses(given: str) -> None:
    with pytest.raises(ValueError, match=r"URL|port"):
        normalize_url(given)


# Misbehaving servers on loopback --------------------------------------------------------------

Handler = Callable[[socket.socket], None]


@contextlib.contextmanager
def raw_server(handle: Handler) -> Iterator[str]:
    """A TCP server that gives every connection to ``handle`` in a thread; yields its URL.

    Closing the server closes the connections under their handlers, which then fail quietly.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[socket.socket] = []

    def serve(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            handle(conn)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                connections.append(conn)
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


def read_request(conn: socket.socket) -> str:
    """The request line of the next request on ``conn`` ("" once the client closed)."""
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return ""
            data += chunk
    return data.split(b"\r\n", 1)[0].decode("latin-1")


@contextlib.contextmanager
def http_server(routes: dict[str, tuple[int, bytes]], default: tuple[int, bytes] = (404, b""),
                ) -> Iterator[str]:
    """An HTTP server answering "METHOD /path" from ``routes``; yields its URL."""

    class Answer(BaseHTTPRequestHandler):
        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            status, body = routes.get(f"{self.command} {self.path}", default)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


HEALTHY: dict[str, tuple[int, bytes]] = {
    "GET /v2/health/live": (200, b""),
    "GET /v2/health/ready": (200, b""),
    "GET /v2": (200, b'{"name":"triton","version":"2.51.0","extensions":["statistics"]}'),
    "POST /v2/repository/index": (200, b'[{"name":"m","version":"1","state":"READY"}]'),
    "GET /v2/models/m/config": (200, b'{"name":"m","max_batch_size":4}'),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_fake_healthy_server() -> None:
    with http_server(HEALTHY) as url:
        evidence = describe(url, TIMEOUT)
    assert evidence.errors == {}
    assert (evidence.live, evidence.ready, evidence.version) == (True, True, "2.51.0")
    assert evidence.models[0].config == {"name": "m", "max_batch_size": 4}


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SourceUnavailable) as raised:
        describe(url, TIMEOUT)
    message = str(raised.value)
    assert message.startswith(f"cannot reach tritonserver at {url}: connection refused")
    assert "HTTP port (default 8000)" in message


def test_host_not_found() -> None:
    with pytest.raises(SourceUnavailable, match=r"at http://no-such-host\.invalid:8000: host"):
        describe("no-such-host.invalid", TIMEOUT)


def test_hanging_server_times_out() -> None:
    with raw_server(lambda conn: None) as url:
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=re.escape(f"at {url}: no answer within 1 s")):
            describe(url, TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + 1


def test_garbage_bytes() -> None:
    def garbage(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(b"\x00\x00\x12\x04\x00\x00\x00\x00\x00garbage")  # like an HTTP/2 port
        conn.close()

    with raw_server(garbage) as url, pytest.raises(SourceUnavailable) as raised:
        describe(url, TIMEOUT)
    assert f"at {url}: the answer is not HTTP;" in str(raised.value)


def test_not_the_http_api() -> None:
    with http_server({}) as url, pytest.raises(SourceUnavailable, match="HTTP 404") as raised:
        describe(url, TIMEOUT)
    assert url in str(raised.value)


def test_500_everywhere() -> None:
    with http_server({}, default=(500, b"upstream broke")) as url:
        evidence = describe(url, TIMEOUT)
        taken = sample(url, TIMEOUT)
    assert not evidence.live and not evidence.ready and evidence.models == []
    assert evidence.errors == {
        "GET /v2/health/live": "HTTP 500: 'upstream broke'",
        "GET /v2/health/ready": "HTTP 500: 'upstream broke'",
        "GET /v2": "HTTP 500: 'upstream broke'",
        "POST /v2/repository/index": "HTTP 500: 'upstream broke'",
    }
    assert taken.stats == [] and set(taken.errors) == {
        "GET /v2/models/stats", "GET /v2/systemsharedmemory/status"}


def test_triton_error_body_is_quoted() -> None:
    error = b'{"error":"Request for unknown model: \'m\' has no available versions"}'
    with http_server({**HEALTHY, "GET /v2/models/m/config": (404, error)}) as url:
        evidence = describe(url, TIMEOUT)
    assert evidence.errors == {"GET /v2/models/m/config":
                               "HTTP 404: Request for unknown model: 'm' has no available versions"}
    assert evidence.models[0].state == "READY" and evidence.models[0].config is None


@pytest.mark.parametrize("endpoint", ["GET /v2", "POST /v2/repository/index"])
def test_invalid_json(endpoint: str) -> None:
    with http_server({**HEALTHY, endpoint: (200, b"{not json")}) as url:
        evidence = describe(url, TIMEOUT)
    assert list(evidence.errors) == [endpoint]
    assert evidence.errors[endpoint].startswith("invalid JSON (")
    assert "'{not json'" in evidence.errors[endpoint]
    # The rest is still collected.
    assert evidence.live and evidence.ready
    assert (evidence.version == "2.51.0") == (endpoint != "GET /v2")
    assert bool(evidence.models) == (endpoint != "POST /v2/repository/index")


def test_wrong_json_shapes() -> None:
    routes = {**HEALTHY, "GET /v2": (200, b'["triton"]'),
              "POST /v2/repository/index": (200, b'[{"name":"m","state":"READY"},{"state":1}]'),
              "GET /v2/models/m/config": (200, b"[]"),
              "GET /v2/models/stats": (200, b'{"model_stats":[{"name":"m","version":"1",'
                                            b'"inference_count":"x","batch_stats":7}]}'),
              "GET /v2/systemsharedmemory/status": (200, b'{"regions":[]}')}
    with http_server(routes) as url:
        evidence = describe(url, TIMEOUT)
        taken = sample(url, TIMEOUT)
    assert set(evidence.errors) == {"GET /v2", "POST /v2/repository/index",
                                    "GET /v2/models/m/config"}
    assert all(e.startswith("unexpected answer: ") for e in evidence.errors.values())
    assert [m.name for m in evidence.models] == ["m"]
    assert [(s.name, s.inference_count, s.batch_executions) for s in taken.stats] == [("m", 0, {})]
    assert list(taken.errors) == ["GET /v2/systemsharedmemory/status"]


def _hang(conn: socket.socket) -> None:
    pass


def _drip(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    for _ in range(100):
        conn.sendall(b" ")
        time.sleep(0.2)


def _cut(conn: socket.socket) -> None:
    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{"name"')
    conn.close()


@pytest.mark.parametrize(
    ("misbehave", "why"),
    [
        (_hang, "no answer within 1 s"),
        (_drip, "the answer took over 1 s"),
        (_cut, "the connection closed in the middle of the answer"),
    ],
)
def test_index_misbehaves(misbehave: Handler, why: str) -> None:
    """Recorded with its endpoint, within the timeout; the calls before it still count."""

    def handle(conn: socket.socket) -> None:
        while line := read_request(conn):
            if line.startswith("POST /v2/repository/index"):
                misbehave(conn)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    with raw_server(handle) as url:
        started = time.monotonic()
        evidence = describe(url, TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + 1
    assert evidence.live and evidence.ready
    assert evidence.errors == {"GET /v2": "unexpected answer: '{}'",
                               "POST /v2/repository/index": why}


def test_configs_stop_after_one_hang() -> None:
    """A server that stops answering costs one timeout, not one per READY model."""
    index = json.dumps([{"name": f"m{i}", "version": "1", "state": "READY"} for i in range(5)])

    def handle(conn: socket.socket) -> None:
        while line := read_request(conn):
            if "/config" in line:
                return
            body = index.encode() if "index" in line else b'{"version":"2.51.0"}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    with raw_server(handle) as url:
        started = time.monotonic()
        evidence = describe(url, TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + 1
    assert evidence.errors["GET /v2/models/m0/config"] == "no answer within 1 s"
    assert evidence.errors["GET /v2/models/m4/config"] == (
        "not asked: GET /v2/models/m0/config got no answer")
    assert [m.config for m in evidence.models] == [None] * 5


def test_refused_mid_run() -> None:
    """The server answers the first call, then closes every connection without an answer."""

    def handle(conn: socket.socket) -> None:
        while line := read_request(conn):
            if not line.startswith("GET /v2/health/live "):
                conn.close()
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    with raw_server(handle) as url:
        evidence = describe(url, TIMEOUT)
    assert evidence.live and not evidence.ready
    assert evidence.errors == dict.fromkeys(
        ("GET /v2/health/ready", "GET /v2", "POST /v2/repository/index"),
        "the connection closed without an answer")


def test_sample_unreachable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SourceUnavailable, match=re.escape(f"cannot reach tritonserver at {url}")):
        sample(url, TIMEOUT)


# The server log ---------------------------------------------------------------------------------


def test_read_log_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"I1129 line {i}\r\n" for i in range(100_000)))
    evidence = read_log(str(log), max_lines=3)
    assert evidence.source == str(log)
    assert evidence.lines == ["I1129 line 99997", "I1129 line 99998", "I1129 line 99999"]
    assert len(read_log(str(log)).lines) == 2000


def test_read_log_short_and_unterminated(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"\0" * 5000 + b"first\nsecond \xff")  # a copytruncate hole, a bad byte
    assert read_log(str(log)).lines == ["first", "second \ufffd"]
    log.write_bytes(b"")
    assert read_log(str(log)).lines == []


def test_read_log_from_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("w") as pipe:
            pipe.write("".join(f"line {i}\n" for i in range(10)))

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.1)  # the writer opens first, as with <(kubectl logs ...)
    try:
        assert read_log(str(fifo), max_lines=2).lines == ["line 8", "line 9"]
    finally:
        writer.join(timeout=5)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "a directory"),
        (lambda p: p.write_bytes(bytes(range(256)) * 100), "binary data"),
        (lambda p: p.write_bytes(b"\x1f\x8b\x08\x00rest"), "gzip-compressed"),
    ],
)
def test_read_log_refuses(tmp_path: Path, make: Callable[[Path], object], why: str) -> None:
    path = tmp_path / "server.log"
    make(path)
    with pytest.raises(SourceUnavailable, match=re.escape(f"cannot read the log {path}: {why}")):
        read_log(str(path))


def test_read_log_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("x\n")
    path.chmod(0)
    code = ("from triton_doctor.catalogue import all_rules\nall_rules()\n"
            "from triton_doctor.checks.logs import read_log\n"
            "from triton_doctor.checks.unavailable import SourceUnavailable\n"
            f"try:\n    read_log({str(path)!r})\n"
            "except SourceUnavailable as error:\n    print(error)\n")
    done = python_without_dac_override("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"cannot read the log {path}: permission denied"


def test_from_container() -> None:
    container = ContainerEvidence(id="0123456789abcdef", log_tail=["a", "b"])
    assert from_container(container).lines == ["a", "b"]
    assert from_container(container).source == "container 0123456789ab"
    named = ContainerEvidence(id="0123456789abcdef", name="triton")
    assert from_container(named).source == "container triton"
