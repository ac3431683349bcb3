"""checks.fetch on its own: the typed failures of one bounded request, and the cause walker.

The words users see are pinned by the callers' tests (test_server_collector, test_metrics).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from triton_doctor.checks.fetch import (
    Answer,
    ClientError,
    ConnectionFailed,
    Redirected,
    TimedOut,
    TooLarge,
    TooSlow,
    causes,
    fetch,
)


@contextlib.contextmanager
def one_answer(head: bytes, body: bytes = b"", drip_s: float = 0.0) -> Iterator[str]:
    """A server that answers one request with ``head`` then ``body`` (a byte every ``drip_s``
    when given); yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(head)
                for i in range(len(body)) if drip_s else [0]:
                    if done.wait(drip_s):
                        return
                    conn.sendall(body[i:i + 1] if drip_s else body)
                done.wait(5)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/x"
    finally:
        done.set()
        listener.close()
        thread.join(5)


def _fetch(url: str, max_bytes: int = 1 << 20, timeout: float = 1.0) -> Answer:
    return fetch(url, timeout=timeout, max_bytes=max_bytes)


def test_answer_has_status_headers_body() -> None:
    with one_answer(b"HTTP/1.1 503 No\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n",
                    b"hi") as url:
        answer = _fetch(url)
    assert (answer.status, answer.headers["content-type"], answer.body) == (503, "text/plain",
                                                                            b"hi")


def test_the_environment_proxy_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with one_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", b"ok") as url:
        assert _fetch(url).body == b"ok"


def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    with one_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n") as url, \
            pytest.raises(TooLarge) as raised:
        _fetch(url, max_bytes=999)
    assert raised.value.size == 1000


def test_a_body_over_the_cap_is_refused() -> None:
    with one_answer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"x" * 100) as url, \
            pytest.raises(TooLarge) as raised:
        _fetch(url, max_bytes=10)
    assert raised.value.size == 100


def test_a_trickle_is_bounded_as_a_whole() -> None:
    started = time.monotonic()
    with one_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"y" * 100,
                    drip_s=0.1) as url, pytest.raises(TooSlow) as raised:
        _fetch(url, timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert 0 < raised.value.size < 100


def test_headers_a_byte_at_a_time_are_bounded_as_a_whole() -> None:
    started = time.monotonic()
    with one_answer(b"", b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100, drip_s=0.05) as url, \
            pytest.raises(TimedOut) as raised:
        _fetch(url, timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert not raised.value.connecting


def test_silence_times_out_after_connecting() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener, pytest.raises(TimedOut) as raised:
        _fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/", timeout=0.3)
    assert not raised.value.connecting


def test_refused_and_invalid() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConnectionFailed) as raised:
        _fetch(f"http://127.0.0.1:{port}/")
    assert any(isinstance(c, ConnectionRefusedError) for c in causes(raised.value.error))
    with pytest.raises(ClientError) as invalid:
        _fetch("not-a-url")
    assert not isinstance(invalid.value, ConnectionFailed)


def test_causes_nearest_first_each_once() -> None:
    root = ConnectionResetError("reset")
    middle = OSError("middle", root)
    top = RuntimeError("top")
    top.__cause__ = middle
    top.reason = root  # type: ignore[attr-defined]
    root.__context__ = top  # a cycle
    assert list(causes(top)) == [top, middle, root]


@pytest.fixture
def slow_connect(monkeypatch: pytest.MonkeyPatch) -> float:
    """Every TCP connect takes 0.6 s more, as across a slow network; returns the delay."""
    delay, real = 0.6, socket.socket.connect

    def connect(sock: socket.socket, address: tuple[str, int]) -> None:
        time.sleep(delay)
        real(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return delay


def test_a_tls_handshake_never_answered_ends_at_the_deadline(slow_connect: float) -> None:
    """The handshake gets only the time the connect left, not a fresh timeout of its own."""
    with socket.create_server(("127.0.0.1", 0)) as listener, pytest.raises(TimedOut) as raised:
        started = time.monotonic()
        _fetch(f"https://127.0.0.1:{listener.getsockname()[1]}/", timeout=1.0)
    assert time.monotonic() - started < 1.3
    assert raised.value.connecting


def test_a_resolver_that_hangs_ends_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """getaddrinfo has no timeout (DNS can take ~30 s): fetch stops waiting at the deadline."""
    answered = threading.Event()

    def hanging(*args: object, **kwargs: object) -> object:
        answered.wait(5)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    started = time.monotonic()
    try:
        with pytest.raises(TimedOut) as raised:
            _fetch("http://triton.invalid:8000/", timeout=0.5)
    finally:
        answered.set()
    assert time.monotonic() - started < 1.0
    assert raised.value.connecting


def test_a_resolver_failure_is_still_a_connection_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    with pytest.raises(ConnectionFailed) as raised:
        _fetch("http://triton.invalid:8000/")
    assert any(isinstance(c, socket.gaierror) for c in causes(raised.value.error))


@contextlib.contextmanager
def redirecting(location: str) -> Iterator[str]:
    """A server whose /from redirects to ``location`` (``{port}`` its own) and whose /to
    answers 200; yields the URL of /from."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    asked = conn.recv(65536)
                    head = (f"HTTP/1.1 302 Found\r\nLocation: {location.format(port=port)}\r\n"
                            if asked.startswith(b"GET /from ") else "HTTP/1.1 200 OK\r\n")
                    conn.sendall(head.encode() + b"Content-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/from"
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("location", ["/to", "HTTP://127.0.0.1:{port}/to"])
def test_a_redirect_to_the_same_origin_is_followed(location: str) -> None:
    with redirecting(location) as url:
        answer = fetch(url, timeout=2, max_bytes=100, max_redirects=1)
    assert answer.status == 200 and answer.redirected_to.endswith("/to")


@pytest.mark.parametrize("location", ["http://127.0.0.1/to", "https://127.0.0.1:{port}/to"])
def test_a_location_without_the_port_is_another_origin(location: str) -> None:
    """A Location written without a port means HTTP's default (80), not the port it came from
    nor Triton's 8000: the credentials would go to another server."""
    with redirecting(location) as url, pytest.raises(Redirected) as raised:
        fetch(url, timeout=2, max_bytes=100, max_redirects=1)
    port = url.split(":")[2].split("/")[0]
    assert not raised.value.too_many
    assert raised.value.location == location.format(port=port)
