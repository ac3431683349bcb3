"""Hostile HTTP peers (issue 10, item 3, secrets and the metrics budget): a server that drips
its headers, redirects that loop, crawl or leave for another port, a metrics page of millions
of lines, and credentials in a URL. Each peer is a real local server on an ephemeral port; the
CLI runs in a subprocess, bounded in time (and memory where the defect was memory)."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from triton_doctor import snapshot
from triton_doctor.checks.live import LiveRequest
from triton_doctor.checks.poll import Poller

from tests.helpers import GOOD_CONFIG, run_cli, tree_state, write_model

#: Seconds a CLI run may take at most before the test gives up on it.
LIMIT = 30
SECRET = "s3cret"
#: Past --timeout, what a run may take: starting Python, and the other calls on a busy machine.
MARGIN = 7.0

Handler = Callable[[socket.socket, str, bytes, threading.Event], None]


@contextlib.contextmanager
def serve(handle: Handler) -> Iterator[int]:
    """A server on 127.0.0.1 giving each request to ``handle(conn, path, head, stop)``, in a
    thread of its own; ``stop`` is set on exit so that slow handlers end. Yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def one(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            path = head.split(b" ", 2)[1].decode("latin-1")
            handle(conn, path, head, stop)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=one, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        acceptor.join(5)
        listener.close()
        for thread in threads:
            thread.join(5)


def reply(conn: socket.socket, status: int, body: bytes = b"",
          headers: dict[str, str] | None = None) -> None:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    conn.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)


#: What a healthy tritonserver with no models answers.
TRITON = {"/v2/health/live": b"", "/v2/health/ready": b"",
          "/v2": b'{"name":"triton","version":"2.51.0","extensions":[]}',
          "/v2/repository/index": b"[]", "/v2/models/stats": b'{"model_stats":[]}',
          "/v2/systemsharedmemory/status": b"[]"}
PAGE = b"# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization 0.5\n"


def triton(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
    if path in TRITON:
        reply(conn, 200, TRITON[path])
    else:
        reply(conn, 404)


def page(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
    reply(conn, 200, PAGE)


def drip(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
    """A status line and headers a byte every 0.1 s: ~60 s in all, unless stopped."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 600:
        if stop.wait(0.1):
            return
        conn.sendall(bytes([byte]))


def _check(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``check ... --window 0.2 --format json`` and how long it took."""
    started = time.monotonic()
    proc = run_cli("check", "--window", "0.2", "--format", "json", *args, timeout=LIMIT)
    took = time.monotonic() - started
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc, took


def _td602(proc: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "TD602"]


# The whole exchange under one deadline ----------------------------------------------------


@pytest.mark.parametrize("slow", ["server", "metrics"])
def test_headers_sent_a_byte_at_a_time_end_at_the_timeout(slow: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "m", GOOD_CONFIG)
    before = tree_state(tmp_path)
    with serve(triton) as good, serve(drip) as dripping:
        server, metrics = (dripping, good) if slow == "server" else (good, dripping)
        proc, took = _check(str(repo), "--url", f"http://127.0.0.1:{server}", "--metrics-url",
                            f"http://127.0.0.1:{metrics}/metrics", "--timeout", "3")
    assert proc.returncode == 3, proc.stderr
    assert took < 3 + MARGIN
    assert f"127.0.0.1:{dripping}" in proc.stderr and "within 3 s" in proc.stderr
    assert tree_state(tmp_path) == before


def test_a_redirect_chain_shares_one_deadline() -> None:
    """Five answers of 2.5 s each: each within --timeout 3, the whole not."""

    def crawl(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        hop = int(path.rpartition("=")[2]) if "=" in path else 0
        if stop.wait(2.5):
            return
        if hop == 4:
            reply(conn, 200, PAGE)
        else:
            reply(conn, 302, headers={"Location": f"/metrics?hop={hop + 1}"})

    with serve(triton) as server, serve(crawl) as metrics:
        proc, took = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                            f"http://127.0.0.1:{metrics}/metrics", "--timeout", "3")
    assert proc.returncode == 3, proc.stderr
    assert took < 3 + MARGIN
    assert f"127.0.0.1:{metrics}/metrics" in proc.stderr and "3 s" in proc.stderr


def test_a_redirect_loop_stops_after_five() -> None:
    asked: list[str] = []

    def loop(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        asked.append(path)
        reply(conn, 307, headers={"Location": f"/metrics?n={len(asked)}"})

    with serve(triton) as server, serve(loop) as metrics:
        proc, _ = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                         f"http://127.0.0.1:{metrics}/metrics", "--timeout", "3")
    assert proc.returncode == 3, proc.stderr
    assert "redirected more than 5 times" in proc.stderr
    assert len(asked) == 6


def test_a_redirect_to_another_port_is_refused_and_named() -> None:
    asked: list[bytes] = []

    def elsewhere(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        asked.append(head)
        reply(conn, 200, PAGE)

    with serve(triton) as server, serve(elsewhere) as other:
        def away(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
            reply(conn, 302, headers={"Location": f"http://127.0.0.1:{other}/metrics"})

        with serve(away) as metrics:
            proc, _ = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                             f"http://oncall:{SECRET}@127.0.0.1:{metrics}/metrics")
    assert proc.returncode == 3, proc.stderr
    assert f"http://127.0.0.1:{metrics}/metrics" in proc.stderr
    assert f"http://127.0.0.1:{other}/metrics" in proc.stderr and "not followed" in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    assert asked == []


def test_a_redirect_on_the_same_port_is_followed_and_said() -> None:
    def moved(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        if path == "/metrics/":
            reply(conn, 200, PAGE)
        else:
            reply(conn, 301, headers={"Location": "/metrics/"})

    with serve(triton) as server, serve(moved) as metrics:
        proc, _ = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                         f"http://127.0.0.1:{metrics}/metrics")
    assert proc.returncode == 0, proc.stderr
    (note,) = [f for f in _td602(proc) if "redirected" in str(f["message"])]
    assert f"redirected to http://127.0.0.1:{metrics}/metrics/" in str(note["message"])
    assert note["severity"] == "info"


def test_a_server_redirect_is_reported_with_where_it_points() -> None:
    def proxy(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        if path == "/v2/health/live":
            reply(conn, 200)
        else:
            reply(conn, 302, headers={"Location": f"http://login.example{path}"})

    with serve(proxy) as server, serve(page) as metrics:
        proc, _ = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                         f"http://127.0.0.1:{metrics}/metrics")
    assert proc.returncode == 1, proc.stderr
    messages = [str(f["message"]) for f in _td602(proc)]
    assert any("/v2/health/ready" in m and "http://login.example/v2/health/ready" in m
               and "not followed" in m for m in messages), messages


# Credentials never written ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(("option", "url", "code"), [
    ("--metrics-url", "http://oncall:{secret}@127.0.0.1:{free}/metrics", 3),
    # A port that is no port is a usage error, said before anything is reached.
    ("--metrics-url", "http://oncall:{secret}@127.0.0.1:99999/metrics", 2),
    ("--url", "http://oncall:{secret}@[::1", 2),
    ("--url", "//oncall:{secret}@127.0.0.1:{free}", 2),  # no scheme: the secret parsed as a path
])
def test_a_password_in_a_url_stays_off_stderr(option: str, url: str, code: int) -> None:
    given = url.format(secret=SECRET, free=_free_port())
    with serve(triton) as server:
        args = ["--url", f"http://127.0.0.1:{server}", option, given]
        proc, _ = _check(*(args[2:] if option == "--url" else args))
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip() and SECRET not in proc.stderr + proc.stdout


def test_the_password_still_reaches_the_metrics_endpoint() -> None:
    expected = base64.b64encode(f"oncall:{SECRET}".encode()).decode()

    def guarded(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        if f"authorization: basic {expected}".lower().encode() in head.lower():
            reply(conn, 200, PAGE)
        else:
            reply(conn, 401, b"who are you?")

    with serve(triton) as server, serve(guarded) as metrics:
        proc, _ = _check("--url", f"http://127.0.0.1:{server}", "--metrics-url",
                         f"http://oncall:{SECRET}@127.0.0.1:{metrics}/metrics")
    assert proc.returncode == 0, proc.stderr


def test_a_snapshot_saved_from_watch_holds_no_password(tmp_path: Path) -> None:
    """What ``watch``'s ``s`` key saves: the Poller's Evidence, written by snapshot.write."""
    with serve(triton) as server:
        metrics = f"http://oncall:{SECRET}@127.0.0.1:{_free_port()}/metrics"
        evidence = Poller(LiveRequest(f"http://127.0.0.1:{server}", metrics, 0.2, 2)).poll()
    saved = tmp_path / "incident.json"
    snapshot.write(evidence, str(saved))
    text = saved.read_text()
    assert "metrics" in json.loads(text)["evidence"]["unavailable"]
    assert SECRET not in text and "oncall" not in text


# A metrics page of millions of lines --------------------------------------------------------

LINES = 5_000_000
#: The CLI's address space: the old parser needed ~3 GB for this page.
MEMORY = 1 << 30


def test_five_million_metric_lines_are_read_in_part_within_memory(tmp_path: Path) -> None:
    line = b"nv_a 1\n"
    block = line * 10_000

    def huge(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(line) * LINES}\r\n"
                     "Connection: close\r\n\r\n".encode())
        for _ in range(LINES // 10_000):
            if stop.is_set():
                return
            conn.sendall(block)

    repo = tmp_path / "repo"
    write_model(repo, "m", GOOD_CONFIG)
    write_model(repo, "broken", GOOD_CONFIG.replace("[ 4 ] } ]\noutput", "[ 0 ] } ]\noutput"))
    before = tree_state(tmp_path)
    with serve(triton) as server, serve(huge) as metrics:
        started = time.monotonic()
        proc = run_cli("check", str(repo), "--url", f"http://127.0.0.1:{server}", "--metrics-url",
                       f"http://127.0.0.1:{metrics}/metrics", "--window", "0.2", "--timeout", "20",
                       "--format", "json", timeout=120, memory_bytes=MEMORY)
        took = time.monotonic() - started
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert any(f["model"] == "broken" for f in report["findings"])  # the repository judged too
    (cut,) = [f for f in _td602(proc) if "unread_lines" in str(f["evidence"])]
    assert cut["evidence"] == {"unread_lines": LINES - 200_000}
    assert tree_state(tmp_path) == before
    print(f"5 M metric lines: {took:.1f} s")
