"""One bounded HTTP request, shared by the server collector and the metrics scrape.

:func:`fetch` gives the status, headers and body of an answer, or raises a :class:`Failure`
that says what went wrong in types, not words: each caller words it for its own user.
:func:`causes` walks what a failure wraps, to find the OSError underneath.

One deadline bounds the whole exchange: connecting, sending, the status line, the headers, the
body and any redirect followed. ``requests`` (and urllib3 under it) set a timeout per wait for
data, so a server that sends its headers a byte at a time held the caller forever; here every
wait is given only the time left (:class:`_Bounded`), on ``http.client``'s own parser. The TLS
handshake gets the time the connect left. ``socket.getaddrinfo`` takes no timeout (a resolver
that does not answer holds it ~30 s), so the name is looked up in a daemon thread that is
waited for only until the deadline, then abandoned to end on its own (:func:`_resolve`).
"""

from __future__ import annotations

import base64
import http.client
import io
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.client import BadStatusLine, IncompleteRead, RemoteDisconnected
from typing import Any
from urllib.parse import SplitResult, unquote, urljoin, urlsplit

from triton_doctor.checks.urls import HTTP_PORTS, hide_credentials
from triton_doctor.records import record

#: The most one ``read1`` asks for; it returns what one wait for data brings, however little.
CHUNK_BYTES = 64 * 1024
#: The statuses whose Location a GET may follow.
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: What ``socket.getaddrinfo`` gives: (family, type, proto, canonical name, address).
_Addresses = Sequence[tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]]


@record(frozen=True)
class Answer:
    """An HTTP answer read whole; ``headers`` by lowercase name."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    #: The URL that answered, without credentials, when a redirect was followed; else "".
    redirected_to: str = ""


class Failure(Exception):
    """The request got no whole answer; the subclass says why."""


class TooLarge(Failure):
    """The body was over the cap: ``size`` bytes declared by Content-Length, or read so far."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class TooSlow(Failure):
    """The answer had begun, but the whole body was not there by the deadline; ``size`` were."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class TimedOut(Failure):
    """The deadline passed while connecting (``connecting``), or before the status and headers
    were all in, however slowly they kept coming."""

    def __init__(self, connecting: bool) -> None:
        super().__init__("connecting" if connecting else "waiting for the answer")
        self.connecting = connecting


class Redirected(Failure):
    """A redirect that was not followed: to ``location`` (without credentials) on another
    scheme, host or port, or one past the most followed (``too_many``)."""

    def __init__(self, location: str, too_many: bool) -> None:
        super().__init__(location)
        self.location = location
        self.too_many = too_many


class ClientError(Failure):
    """The request could not be made; ``error`` is why (a URL that is not http(s), say)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class ConnectionFailed(ClientError):
    """The connection failed or broke: refused, host not found, reset, cut short, not HTTP,
    TLS. :func:`causes` of ``error`` holds the OSError that says which."""


def fetch(url: str, *, timeout: float, max_bytes: int, method: str = "GET",
          headers: Mapping[str, str] | None = None, max_redirects: int = 0) -> Answer:
    """One request, never retried, bounded two ways: ``timeout`` for the whole exchange
    (redirects included), and ``max_bytes`` for the body, refused at once when its
    Content-Length says it is over. A POST goes out with an empty body.

    A GET follows up to ``max_redirects`` redirects, only to the same scheme, host and port:
    the credentials in ``url`` go nowhere else. A URL without a port means HTTP's (80, or 443
    for https: ``urls.HTTP_PORTS``), not Triton's 8000 as a --url the user writes does: the
    server collector gives the port it means, and a Location is read as HTTP says. A redirect
    elsewhere, or one too many, raises :class:`Redirected`; with ``max_redirects`` 0 a
    redirect is the answer.
    """
    deadline = time.monotonic() + timeout
    try:
        parts = urlsplit(url)
        origin = _origin(parts)
    except ValueError as error:
        raise ClientError(error) from None
    sent = {"User-Agent": "triton-doctor", **(headers or {})}
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        sent["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    current, followed = url, 0
    while True:
        answer = _exchange(urlsplit(current), method, sent, deadline, max_bytes)
        location = answer.headers.get("location")
        if method != "GET" or answer.status not in REDIRECTS or not location or not max_redirects:
            shown = hide_credentials(current) if followed else ""
            return Answer(answer.status, answer.headers, answer.body, shown)
        current = urljoin(current, location.strip())
        try:
            elsewhere = _origin(urlsplit(current)) != origin
        except ValueError:
            elsewhere = True
        if elsewhere or followed == max_redirects:
            raise Redirected(hide_credentials(current), too_many=not elsewhere)
        followed += 1


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL, the port it means when it writes none (or 0);
    ValueError for any other. Both where to connect and what a redirect is compared by."""
    scheme = parts.scheme.lower()
    if scheme not in HTTP_PORTS or not parts.hostname:
        raise ValueError(f"{hide_credentials(parts.geturl())!r} is not an http:// or https:// "
                         "URL with a host")
    return scheme, parts.hostname, parts.port or HTTP_PORTS[scheme]


def _exchange(parts: SplitResult, method: str, headers: Mapping[str, str], deadline: float,
              max_bytes: int) -> Answer:
    """One request on a fresh connection, closed after; every wait bounded by ``deadline``."""
    scheme, host, port = _origin(parts)
    sock: socket.socket | None = None
    try:
        try:
            sock = _connect(host, port, deadline)
            if scheme == "https":
                sock.settimeout(_left(deadline))
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except TimeoutError as error:
            raise TimedOut(connecting=True) from error
        connection = http.client.HTTPConnection(host, port)
        connection.sock = _Bounded(sock, deadline)  # type: ignore[assignment]
        path = parts.path or "/"
        try:
            connection.request(method, f"{path}?{parts.query}" if parts.query else path,
                               body=b"" if method == "POST" else None, headers=dict(headers))
            response = connection.getresponse()
        except TimeoutError as error:
            raise TimedOut(connecting=False) from error
        declared = response.getheader("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise TooLarge(int(declared))
        body = bytearray()
        try:
            while chunk := response.read1(CHUNK_BYTES):
                body += chunk
                if len(body) > max_bytes:
                    raise TooLarge(len(body))
        except TimeoutError as error:
            raise TooSlow(len(body)) from error
        if response.length:  # the connection closed before Content-Length bytes came
            raise http.client.IncompleteRead(bytes(body), response.length)
        names = {name.lower(): value for name, value in response.getheaders()}
        return Answer(response.status, names, bytes(body))
    except (ValueError, http.client.InvalidURL) as error:  # a host the resolver cannot take
        raise ClientError(error) from error
    except (OSError, http.client.HTTPException) as error:
        raise ConnectionFailed(error) from error
    finally:
        if sock is not None:
            sock.close()


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    """A TCP connection to the first address of ``host`` that takes one before the deadline."""
    error: OSError = OSError(f"{host} has no address")
    for family, kind, proto, _, address in _resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(_left(deadline))
            sock.connect(address)
        except TimeoutError:
            sock.close()
            raise
        except OSError as failed:
            sock.close()
            error = failed
        else:
            return sock
    raise error


def _resolve(host: str, port: int, deadline: float) -> _Addresses:
    """``socket.getaddrinfo`` for a stream socket, waited for until the deadline (TimeoutError
    then): it has no timeout of its own, so it runs in a daemon thread that is left behind to
    finish by itself when the deadline passes first."""
    found: list[_Addresses | Exception] = []

    def look_up() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except Exception as error:  # gaierror, or UnicodeError for a label too long
            found.append(error)

    left = _left(deadline)
    worker = threading.Thread(target=look_up, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(left)
    if not found:
        raise TimeoutError(f"looking up {host} took past the deadline")
    if isinstance(result := found[0], Exception):
        raise result
    return result


def _left(deadline: float) -> float:
    """Seconds to the deadline; TimeoutError once it has passed (a timeout of 0 would not
    wait at all, and None would wait forever)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


class _Bounded:
    """The part of a socket ``http.client`` uses, each send and receive given only the time
    left to the deadline. ``fetch`` closes the socket itself, once the answer is read."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(_left(self._deadline))
        self._sock.sendall(data)  # since 3.5 the timeout bounds the whole sendall

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))

    def close(self) -> None:
        """Left to ``fetch``: the response may still be reading."""


class _Reader(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self._sock.settimeout(_left(self._deadline))
        return self._sock.recv_into(buffer)


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and everything it wraps, nearest first, through ``__cause__``,
    ``__context__``, ``reason`` and ``args``."""
    seen = {id(error)}
    queue = [error]
    for current in queue:
        yield current
        wrapped = (current.__cause__, current.__context__, getattr(current, "reason", None),
                   *current.args)
        for item in wrapped:
            if isinstance(item, BaseException) and id(item) not in seen:
                seen.add(id(item))
                queue.append(item)


def failure_words(failure: Failure, timeout: float, max_bytes: int) -> str:
    """Why a request got no answer, in words: the OSError or HTTPException under ``failure``;
    ``timeout`` and ``max_bytes`` are the bounds it was given."""
    if isinstance(failure, TooLarge):
        return f"an answer over {max_bytes >> 20} MiB"
    if isinstance(failure, TooSlow):
        return f"the answer took over {timeout:g} s"
    if isinstance(failure, TimedOut):
        return f"no answer within {timeout:g} s"
    error = failure.error if isinstance(failure, ClientError) else failure
    for cause in causes(error):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({cause.strerror})"
        if isinstance(cause, (RemoteDisconnected, ConnectionResetError)):
            return "the connection closed without an answer"
        if isinstance(cause, IncompleteRead):
            return "the connection closed in the middle of the answer"
        if isinstance(cause, BadStatusLine):
            return "the answer is not HTTP"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
    return str(error)
