"""The server URL the user gives, read once, the way users write it.

``http://triton:8000``, ``triton:8000``, ``triton``, ``https://triton/base``,
``http://[::1]:8000`` and ``user:pass@triton`` all name a server. Every part of the doctor that
needs its host or port reads it through :func:`split_url`, so an IPv6 host keeps the brackets
it needs in a URL and a URL without a port means the same port everywhere (Triton's 8000, see
DEFAULT_PORTS; the whole URLs ``checks.fetch`` requests follow HTTP's, see HTTP_PORTS).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from triton_doctor.records import record

#: The ports tritonserver listens on unless told otherwise.
TRITON_HTTP_PORT = 8000
TRITON_GRPC_PORT = 8001
TRITON_METRICS_PORT = 8002
#: The port a URL without one means per HTTP: what ``checks.fetch`` connects to, and compares
#: a redirect's origin by (a Location ``http://host/`` is port 80), since the URLs it gets are
#: whole ones: built with a port, given as --metrics-url, or sent back by a server.
HTTP_PORTS = {"http": 80, "https": 443}
#: The port a server URL the *user* writes without one means (--url, read by split_url):
#: Triton's HTTP port; an https URL means a TLS proxy in front (443), since tritonserver's HTTP
#: endpoint has no TLS of its own. Other schemes (which the server collector refuses) fall
#: back to Triton's HTTP port.
DEFAULT_PORTS = {**HTTP_PORTS, "http": TRITON_HTTP_PORT}
NOT_A_URL = "expected a server URL like http://localhost:8000"
BAD_PORT = "the port is not a number from 0 to 65535"
#: ``user:password@`` at the start of a URL's authority (up to its last ``@``), by text alone.
_USERINFO = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.-]*:)?//)?[^/?#]*@")


def hide_credentials(url: str) -> str:
    """``url`` without ``user:password@`` (up to the authority's last ``@``), otherwise as
    written: the one way the doctor drops credentials, from messages, from what it saves and
    from the server URL it passes on. By text, so that it works on a URL that does not parse
    too (the one an error message is about)."""
    return _USERINFO.sub(lambda match: match.group(1) or "", url, count=1)


def _unparsed(url: str, problem: str) -> str:
    """The error for a URL that does not parse. A password holding ``/``, ``?`` or ``#`` ends
    the authority early (``user:pa/ss@host`` reads as host "user", port "pa"), so the parse
    cannot tell where credentials stop: everything up to the last ``@`` is left out."""
    shown = hide_credentials(url)
    scheme, separator, rest = shown.rpartition("://")
    if "@" not in rest:
        return f"{shown!r}: {problem}"
    shown = f"{scheme}{separator}…@{rest.rpartition('@')[2]}"
    return (f"{shown!r}: {problem}; if the part "
            "before '@' is a user and password, percent-encode its '/', '?' and '#' (%2F, %3F, "
            "%23)")


@record(frozen=True)
class ServerUrl:
    """The parts of a server URL; credentials are kept only as the user name, to refuse them."""

    #: Lowercase; ``http`` when the URL was written without one.
    scheme: str
    #: Lowercase; an IPv6 address in brackets (``[::1]``); empty when the URL names no host.
    host: str
    #: The port the URL writes, None when it writes none.
    given_port: int | None
    path: str
    query: str
    fragment: str
    username: str | None

    @property
    def port(self) -> int:
        """The port the URL means: the one written (unless 0), else the scheme's default."""
        return self.given_port or DEFAULT_PORTS.get(self.scheme, TRITON_HTTP_PORT)

    @property
    def hostname(self) -> str:
        """The host without IPv6 brackets, as the resolver takes it."""
        return self.host[1:-1] if self.host.startswith("[") else self.host


def split_url(url: str) -> ServerUrl:
    """The parts of ``url`` (``http://`` assumed when it has no scheme); raises ValueError when
    its brackets do not close or its port is not a number from 0 to 65535."""
    text = url.strip()
    try:
        parts = urlsplit(text if "://" in text else f"http://{text}")
        hostname = parts.hostname or ""
    except ValueError:  # "Invalid IPv6 URL": a bracket without its pair
        raise ValueError(_unparsed(url, NOT_A_URL)) from None
    try:
        port = parts.port
    except ValueError:
        raise ValueError(_unparsed(url, BAD_PORT)) from None
    host = f"[{hostname}]" if ":" in hostname else hostname
    return ServerUrl(parts.scheme, host, port, parts.path, parts.query, parts.fragment,
                     parts.username)


def metrics_endpoint(url: str) -> str:
    """A ``--metrics-url`` written as ``--url`` is (``triton:8002``, ``http://triton:8002``, a
    whole URL) as the URL to scrape: ``http://`` when it names no scheme, Triton's metrics port
    when an http URL names none, ``/metrics`` when it names no path. Raises ValueError as
    :func:`split_url` does, and for a URL without a host or of another scheme than HTTP's."""
    parts = split_url(url)
    if not parts.host or parts.scheme not in HTTP_PORTS:
        raise ValueError(_unparsed(url, "expected a metrics URL like http://localhost:8002 "
                                        "(http or https, with a host)"))
    text = url.strip()
    whole = urlsplit(text if "://" in text else f"http://{text}")
    netloc = whole.netloc
    if parts.given_port is None and parts.scheme == "http":
        netloc += f":{TRITON_METRICS_PORT}"
    path = whole.path if whole.path not in ("", "/") else "/metrics"
    return urlunsplit((whole.scheme.lower(), netloc, path, whole.query, ""))


def prometheus_base(url: str) -> str:
    """A ``--prometheus`` URL as the base its API paths are added to: ``http://`` when it names
    no scheme, its path kept (Mimir's ``/prometheus``), no query or fragment. Raises ValueError
    as :func:`split_url` does, and for a URL without a host or of another scheme than HTTP's;
    the message never holds its credentials."""
    parts = split_url(url)
    if not parts.host or parts.scheme not in HTTP_PORTS or parts.query or parts.fragment:
        raise ValueError(_unparsed(url, "expected the engine's base URL like "
                                        "http://prometheus:9090 (http or https, with a host)"))
    text = url.strip()
    whole = urlsplit(text if "://" in text else f"http://{text}")
    return urlunsplit((whole.scheme.lower(), whole.netloc, whole.path.rstrip("/"), "", ""))
