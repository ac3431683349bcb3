"""One bounded HTTP request, shared by the server collector and the metrics scrape.

:func:`fetch` gives the status, headers and body of an answer, or raises a :class:`Failure`
that says what went wrong in types, not words: each caller words it for its own user.
:func:`causes` walks what ``requests`` wraps, to find the OSError underneath.

``requests`` is imported inside the functions: ``check`` without ``--url`` must not pay for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests

#: The most one ``read1`` asks for; it returns what one wait for data brings, however little.
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Answer:
    """An HTTP answer read whole; ``headers`` is requests' case-insensitive mapping."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class Failure(Exception):
    """The request got no whole answer; the subclass says why."""


class TooLarge(Failure):
    """The body was over the cap: ``size`` bytes declared by Content-Length, or read so far."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class TooSlow(Failure):
    """Bytes kept coming, but the whole body was not there by the deadline; ``size`` were."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class TimedOut(Failure):
    """One wait ran past the timeout: for the connection (``connecting``) or for data."""

    def __init__(self, connecting: bool) -> None:
        super().__init__("connecting" if connecting else "waiting for data")
        self.connecting = connecting


class ClientError(Failure):
    """``requests`` raised something else; ``error`` is what (an invalid URL, say)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class ConnectionFailed(ClientError):
    """The connection failed or broke: refused, host not found, reset, cut short, not HTTP,
    TLS. :func:`causes` of ``error`` holds the OSError that says which."""


def open_session() -> requests.Session:
    """A session that talks to the server directly: an HTTP_PROXY from the environment, meant
    for the internet, would swallow in-cluster calls (and no .netrc credentials go out)."""
    import requests

    session = requests.Session()
    session.trust_env = False
    return session


def fetch(session: requests.Session, url: str, *, timeout: float, max_bytes: int,
          method: str = "GET", headers: Mapping[str, str] | None = None,
          follow_redirects: bool = False) -> Answer:
    """One request, never retried, bounded three ways: ``timeout`` for the connection and for
    each wait for data, ``timeout`` again for the whole request (a server that sends a byte at a
    time cannot hold the caller), and ``max_bytes`` for the body, refused at once when its
    Content-Length says it is over. A POST goes out with an empty body.

    Raises a :class:`Failure` subclass rather than any of requests' or urllib3's errors.
    """
    import requests
    import urllib3.exceptions

    deadline = time.monotonic() + timeout
    try:
        with session.request(
            method, url, data=b"" if method == "POST" else None, headers=headers,
            timeout=(timeout, timeout), stream=True, allow_redirects=follow_redirects,
        ) as response:
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise TooLarge(int(declared))
            body = bytearray()
            # read1, not iter_content: its reads wait for a whole block, however slowly the
            # bytes come, and the deadline would only be checked after each block.
            while chunk := response.raw.read1(CHUNK_BYTES, decode_content=True):
                body += chunk
                if len(body) > max_bytes:
                    raise TooLarge(len(body))
                if time.monotonic() > deadline:
                    raise TooSlow(len(body))
            return Answer(response.status_code, response.headers, bytes(body))
    except requests.exceptions.ConnectTimeout as error:
        raise TimedOut(connecting=True) from error
    except (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError) as error:
        raise TimedOut(connecting=False) from error
    except (requests.exceptions.ConnectionError, urllib3.exceptions.HTTPError) as error:
        raise ConnectionFailed(error) from error
    except requests.exceptions.RequestException as error:
        raise ClientError(error) from error


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and everything it wraps, nearest first: requests wraps urllib3's errors, which
    wrap the OSError, through ``__cause__``, ``__context__``, ``reason`` and ``args``."""
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
