"""Triton's Prometheus endpoint (``--metrics-port``, default 8002): scrape it and parse it.

Collect only: the samples exactly as the page prints them (a counter keeps its wire name,
``nv_inference_count``, not prometheus_client's ``..._total``); the arithmetic lives in
``triton_doctor.metrics_view``. ``requests`` and ``prometheus_client`` are imported inside the
functions, because ``check`` without ``--url`` must not pay for them.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import MetricSample, MetricsScrape

if TYPE_CHECKING:
    import requests

#: A bigger page is refused rather than read: Triton's page for a thousand models is ~3 MiB.
MAX_PAGE_BYTES = 64 * 1024 * 1024

_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
#: The common line, ``name{labels} value [timestamp]``: the label text is checked by _LABELS
#: (once per distinct text) and the value by float(). What passes both, prometheus_client reads
#: the same way; every other line goes to prometheus_client.
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ([^ \t_]+)(?: -?[0-9]+)?[ \t\r]*")
#: Label text without escapes or spaces: ``model="m",version="1"``.
_LABELS = re.compile(rf"{_LABEL}(?:,{_LABEL})*,?")
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')


def parse_metrics(text: str, at: float) -> MetricsScrape:
    """Parse a Prometheus text page; a line that does not parse is counted, not fatal.

    prometheus_client's parser gives up on the whole page at the first bad line (and is ~6x
    slower on Triton's pages, see bench/metrics_parse.py), so lines are read one at a time:
    a regex takes the common form, and prometheus_client reads the others (escapes, tabs,
    spaces in braces, UTF-8 names). Comments (``# HELP``, ``# TYPE``) carry no samples and are
    skipped. Timestamps are dropped: the scrape's ``at`` is the time of every sample.
    """
    samples: list[MetricSample] = []
    bad_lines = 0
    fast = _SAMPLE.fullmatch
    # Label texts repeat across families (one per model version): check each once.
    # None marks a text the regex path cannot take (escapes, a duplicate name, __name__).
    label_sets: dict[str | None, dict[str, str] | None] = {None: {}, "": {}}
    for line in text.split("\n"):
        match = fast(line)
        if match is not None:
            name, label_text, value = match.groups()
            try:
                labels = label_sets[label_text]
            except KeyError:
                labels = label_sets[label_text] = _labels(label_text)
            if labels is not None:
                try:
                    samples.append(MetricSample(name, dict(labels), float(value)))
                    continue
                except ValueError:
                    pass
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parsed = parse_line(stripped)
        if parsed is None:
            bad_lines += 1
        else:
            samples.extend(parsed)
    return MetricsScrape(at=at, samples=samples, bad_lines=bad_lines)


def _labels(text: str) -> dict[str, str] | None:
    if not _LABELS.fullmatch(text):
        return None
    pairs = _PAIR.findall(text)
    labels = dict(pairs)
    if len(labels) != len(pairs) or "__name__" in labels:
        return None
    return labels


def parse_line(line: str) -> list[MetricSample] | None:
    """One sample line read by prometheus_client alone; None when it is not a sample.

    On its own, a line is an untyped family, so the parser keeps the name as written.
    """
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return [
            MetricSample(sample.name, sample.labels, float(sample.value))
            for family in text_string_to_metric_families(line)
            for sample in family.samples
        ]
    except ValueError:
        return None


def scrape(url: str, timeout: float) -> MetricsScrape:
    """GET ``url`` and parse it; any failure raises SourceUnavailable with what to do.

    ``timeout`` bounds the connection, each wait for data, and the body's download as a whole
    (a server that sends a byte at a time cannot hold the run). Errors: no connection, no
    answer, an HTTP status other than 200, a page over MAX_PAGE_BYTES, a page that is not
    Prometheus text, or one without any ``nv_*`` sample (not Triton's metrics port: the rules
    would judge nothing and say all is well). A page with some bad lines is a scrape: the good
    samples are kept and ``bad_lines`` says how many were skipped.
    """
    import requests
    import urllib3

    at = time.time()
    deadline = time.monotonic() + timeout
    session = requests.Session()
    # Straight to the server, as checks.server does: a proxy from the environment meant for
    # the internet would swallow in-cluster calls.
    session.trust_env = False
    try:
        with session, session.get(
            url, timeout=(timeout, timeout), stream=True,
            headers={"Accept": "text/plain;version=0.0.4"},
        ) as response:
            body = _read_body(url, response, timeout, deadline)
            if response.status_code != 200:
                snippet = " ".join(body[:200].decode("utf-8", "replace").split())
                hint = " (Triton serves them at /metrics)" if response.status_code == 404 else ""
                raise SourceUnavailable(
                    f"metrics endpoint {url} answered HTTP {response.status_code}{hint}: "
                    f"{snippet or '(empty body)'}"
                )
            content_type = response.headers.get("Content-Type", "")
    except requests.exceptions.ConnectTimeout:
        raise SourceUnavailable(
            f"metrics endpoint {url}: no connection within {timeout:g} s; check the host, the "
            "port (--metrics-port, default 8002) and any firewall in between"
        ) from None
    except (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError):
        raise SourceUnavailable(
            f"metrics endpoint {url} accepted the connection but sent no page within "
            f"{timeout:g} s; is the server overloaded, or is this port something else?"
        ) from None
    except (requests.exceptions.ConnectionError, urllib3.exceptions.HTTPError) as error:
        raise SourceUnavailable(f"metrics endpoint {url}: {_connection_problem(error)}") from None
    except requests.exceptions.RequestException as error:
        raise SourceUnavailable(f"metrics endpoint {url}: {error}") from None

    text = body.decode("utf-8", "replace")
    result = parse_metrics(text, at)
    if not result.samples and result.bad_lines:
        first = next(line for line in text.splitlines() if line.strip())
        raise SourceUnavailable(
            f"metrics endpoint {url} did not return Prometheus text "
            f"(Content-Type {content_type or 'not given'}, first line {first.strip()[:80]!r}); "
            "give the URL of Triton's metrics port, e.g. http://HOST:8002/metrics"
        )
    if not any(sample.name.startswith("nv_") for sample in result.samples):
        what = f"{len(result.samples)} samples, none of them" if result.samples else "no sample"
        raise SourceUnavailable(
            f"metrics endpoint {url} returned {what} from Triton (nv_*); is this Triton's "
            "metrics port (--metrics-port, default 8002)?"
        )
    return result


def _read_body(url: str, response: requests.Response, timeout: float, deadline: float) -> bytes:
    """The body, refused past MAX_PAGE_BYTES and given up at ``deadline``.

    ``read1`` returns what one wait for data brings; ``iter_content`` would block until a
    whole chunk had trickled in, however long that took.
    """
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_PAGE_BYTES:
        raise SourceUnavailable(_too_large(url, int(declared)))
    chunks: list[bytes] = []
    size = 0
    while chunk := response.raw.read1(1 << 16, decode_content=True):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_PAGE_BYTES:
            raise SourceUnavailable(_too_large(url, size))
        if time.monotonic() > deadline:
            raise SourceUnavailable(
                f"metrics endpoint {url} sent only {size} bytes of its page in {timeout:g} s; "
                "is the server overloaded?"
            )
    return b"".join(chunks)


def _connection_problem(error: BaseException) -> str:
    """The cause in words: requests nests it in urllib3's errors, several levels down."""
    import http.client

    causes = list(_causes(error))
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return ("connection refused; is tritonserver running with --allow-metrics=true on this "
                "port? (--metrics-port, default 8002)")
    for cause in causes:
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({cause.strerror})"
    if any(isinstance(cause, (ConnectionResetError, http.client.IncompleteRead))
           for cause in causes):
        return "the connection closed before the page was complete"
    return f"cannot read the page: {error}"


def _too_large(url: str, size: int) -> str:
    return (
        f"metrics endpoint {url}: the page is over {MAX_PAGE_BYTES // (1 << 20)} MiB "
        f"({size} bytes read or declared); refused, as no Triton page is that large"
    )


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error and everything it wraps (requests wraps urllib3, which wraps the OSError)."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = (current.__cause__, current.__context__, getattr(current, "reason", None),
                   *current.args)
        stack.extend(item for item in wrapped if isinstance(item, BaseException))
