"""The server URL is read one way everywhere: IPv6 hosts keep their brackets, and a URL without
a port means the same port to every part of the doctor (8000 for http, 443 for https)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from triton_doctor.checks import container, live
from triton_doctor.checks.server import normalize_url
from triton_doctor.checks.urls import hide_credentials, split_url

from tests.helpers import run_cli


@pytest.mark.parametrize(
    ("given", "expected", "address"),
    [
        ("http://[::1]:8000", "http://[::1]:8000", "[::1]:8000"),
        ("[::1]:8000", "[::1]:8000", "[::1]:8000"),
        ("http://user:pass@[::1]:8000/base/", "http://[::1]:8000/base/", "[::1]:8000/base"),
        ("user:pass@[::1]:8000", "[::1]:8000", "[::1]:8000"),
        ("HTTPS://user:p@ss@[fd00::5]", "HTTPS://[fd00::5]", "[fd00::5]:443"),
        ("http://user:pass@triton:0", "http://triton:0", "triton:8000"),
        # Spaces around a pasted URL are not part of the host.
        (" 10.0.0.5:8000 ", " 10.0.0.5:8000 ", "10.0.0.5:8000"),
    ],
)
def test_hide_credentials_keeps_a_url_the_server_collector_reads(
        given: str, expected: str, address: str) -> None:
    """check and watch hand the server collector the URL without credentials."""
    assert hide_credentials(given) == expected
    assert normalize_url(hide_credentials(given))[0] == address


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://user:secret@[::1:8000", "http://[::1:8000"),  # does not parse
        ("//user:secret@triton:8000", "//triton:8000"),  # no scheme, read as a path
        ("http://user:secret@triton/a@b", "http://triton/a@b"),  # an @ past the authority
    ],
)
def test_hide_credentials_works_on_text_that_is_not_a_server_url(given: str,
                                                                 expected: str) -> None:
    assert hide_credentials(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://[::1]:8000", "http://[::1]:8002/metrics"),
        ("[::1]:8000", "http://[::1]:8002/metrics"),
        ("http://user:pass@[::1]:8000", "http://[::1]:8002/metrics"),
        ("http://[FE80::1%25eth0]:9000", "http://[fe80::1%25eth0]:8002/metrics"),
    ],
)
def test_metrics_url_is_on_the_same_ipv6_host(given: str, expected: str) -> None:
    assert live.metrics_url_for(given) == expected
    # The way check and watch use it: on the URL without credentials.
    assert live.metrics_url_for(hide_credentials(given)) == expected


@pytest.mark.parametrize(
    ("given", "port"),
    [
        ("https://triton.example.com", 443),
        ("HTTPS://triton", 443),
        ("https://[::1]", 443),
        ("https://user:pass@10.0.0.5/base", 443),
        ("triton", 8000),
        ("http://triton/", 8000),
        ("10.0.0.5", 8000),
        ("[::1]", 8000),
    ],
)
def test_a_url_without_a_port_means_the_same_port_everywhere(given: str, port: int) -> None:
    """The host scan (live._port), the container search (container._port) and the server
    collector (normalize_url) agree: 443 for https (a TLS proxy in front), else 8000."""
    assert live._port(given) == port
    assert container._port(given) == port
    credentials_stripped = hide_credentials(given)
    assert normalize_url(credentials_stripped)[0].split("/")[0].endswith(f":{port}")


@pytest.mark.parametrize("given", ["http://triton:port", "triton:70000", "http://[::1]:x"])
def test_a_bad_port_is_refused_in_the_server_collectors_words(given: str) -> None:
    for read in (live._port, normalize_url):
        with pytest.raises(ValueError, match="the port is not a number from 0 to 65535"):
            read(given)
    assert container._port(given) is None


@pytest.mark.parametrize("given", ["http://admin:s3cr/et@localhost:8000",
                                   "admin:s3cr#et@localhost:8000", "admin:s3cr?et@[::1]:8000"])
def test_a_password_that_cuts_the_url_short_is_not_echoed(given: str) -> None:
    """An unencoded '/', '#' or '?' in a password ends the authority before the '@' (the port
    reads as "s3cr"): the error cannot tell user and password apart, so it shows neither."""
    done = run_cli("check", "--url", given, "--timeout", "1")
    assert done.returncode == 2, done.stderr
    assert "s3cr" not in done.stderr and "admin" not in done.stderr
    assert "…@" in done.stderr and "percent-encode" in done.stderr


def test_an_unclosed_bracket_is_refused_as_not_a_url() -> None:
    with pytest.raises(ValueError, match=r"^'http://\[::1:8000': expected a server URL"):
        normalize_url("http://[::1:8000")


def test_split_url_parts() -> None:
    parts = split_url("HTTPS://Admin:Secret@[2001:DB8::1]:8443/base/?q#f")
    assert (parts.scheme, parts.host, parts.hostname, parts.given_port, parts.port) == (
        "https", "[2001:db8::1]", "2001:db8::1", 8443, 8443)
    assert (parts.path, parts.query, parts.fragment, parts.username) == (
        "/base/", "q", "f", "Admin")
    assert live.is_local("http://user:pass@[::1]:8000")


# check --url http://[::1]:PORT end to end, against a fake Triton listening on IPv6 ----------

ROUTES = {"/v2/health/live": b"", "/v2/health/ready": b"",
          "/v2": b'{"name":"triton","version":"2.51.0","extensions":[]}',
          "/v2/repository/index": b"[]", "/v2/models/stats": b'{"model_stats":[]}',
          "/v2/systemsharedmemory/status": b"[]"}


class _Triton(BaseHTTPRequestHandler):
    """Answers like an idle tritonserver with no models."""

    def _answer(self) -> None:
        body = ROUTES.get(self.path)
        self.send_response(404 if body is None else 200)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


class _Ipv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@pytest.fixture
def ipv6_triton() -> Iterator[int]:
    """The port of a fake Triton on [::1]."""
    try:
        server = _Ipv6Server(("::1", 0), _Triton)
    except OSError as error:
        pytest.skip(f"no IPv6 loopback here: {error}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("written", ["http://{}", "{}", "http://user:secret@{}"])
def test_check_reads_a_server_at_an_ipv6_address(ipv6_triton: int, tmp_path: Path,
                                                 written: str) -> None:
    url = written.format(f"[::1]:{ipv6_triton}")
    output = tmp_path / "snapshot.json"
    proc = run_cli("snapshot", "--url", url, "--window", "0.2", "--timeout", "2",
                   "-o", str(output))
    assert proc.returncode == 0, proc.stderr
    saved = output.read_text()
    assert "secret" not in saved
    evidence = json.loads(saved)["evidence"]
    assert evidence["server"]["url"] == f"http://[::1]:{ipv6_triton}"
    assert evidence["server"]["version"] == "2.51.0"
    # Nothing serves metrics there: the default metrics URL is port 8002 on the same host.
    metrics = evidence.get("metrics") or {}
    assert ("[::1]:8002" in evidence["unavailable"].get("metrics", "")
            or metrics.get("url") == "http://[::1]:8002/metrics")
