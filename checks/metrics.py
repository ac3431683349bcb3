"""Triton's Prometheus endpoint (``--metrics-port``, default 8002): scrape it and parse it.

Collect only: the samples exactly as the page prints them (a counter keeps its wire name,
``nv_inference_count``, not prometheus_client's ``..._total``); the arithmetic lives in
``triton_doctor.triton.metrics_model``. ``prometheus_client`` is imported inside the
functions, because ``check`` without ``--url`` must not pay for it. A hostile page is
bounded: its bytes (MAX_PAGE_BYTES), the time to fetch it (one deadline) and the lines read
(MAX_LINES).
"""

from __future__ import annotations

import re
import socket
import time
from http.client import IncompleteRead

from triton_doctor.checks.fetch import (
    ClientError,
    ConnectionFailed,
    Failure,
    Redirected,
    TimedOut,
    TooLarge,
    TooSlow,
    causes,
    fetch,
)
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import hide_credentials
from triton_doctor.evidence import MetricSample, MetricsScrape

#: A bigger page is refused rather than read: Triton's page for a thousand models is ~3 MiB.
MAX_PAGE_BYTES = 64 * 1024 * 1024
#: Lines of a page read at most (a sample costs ~400 bytes and ~5 us): Triton's page for a
#: thousand models has ~30 000; the rest of a longer page is counted, not read.
MAX_LINES = 200_000
#: Redirects followed, to the same scheme, host and port only (a proxy's /metrics/, say).
MAX_REDIRECTS = 5

_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
#: The common line, ``name{labels} value [timestamp]``: the label text is checked by _LABELS
#: (once per distinct text) and the value by float(). What passes both, prometheus_client reads
#: the same way; every other line goes to prometheus_client.
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ([^ \t_]+)(?: -?[0-9]+)?[ \t\r]*")
#: Label text without escapes or spaces: ``model="m",version="1"``.
_LABELS = re.compile(rf"{_LABEL}(?:,{_LABEL})*,?")
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')


def parse_metrics(text: str, at: float, max_lines: int = MAX_LINES) -> MetricsScrape:
    """Parse a Prometheus text page; a line that does not parse is counted, not fatal.

    prometheus_client's parser gives up on the whole page at the first bad line (and is ~6x
    slower on Triton's pages, see bench/metrics_parse.py), so lines are read one at a time:
    a regex takes the common form, and prometheus_client reads the others (escapes, tabs,
    spaces in braces, UTF-8 names). Comments (``# HELP``, ``# TYPE``) carry no samples and are
    skipped. Timestamps are dropped: the scrape's ``at`` is the time of every sample. Only
    the first ``max_lines`` lines are read; ``unread_lines`` counts the rest.
    """
    lines = text.split("\n", max_lines)
    rest = lines.pop() if len(lines) > max_lines else ""
    samples: list[MetricSample] = []
    bad_lines = 0
    fast = _SAMPLE.fullmatch
    # Label texts repeat across families (one per model version): check each once.
    # None marks a text the regex path cannot take (escapes, a duplicate name, __name__).
    label_sets: dict[str | None, dict[str, str] | None] = {None: {}, "": {}}
    for line in lines:
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
    unread = rest.count("\n") + (1 if rest and not rest.endswith("\n") else 0)
    return MetricsScrape(at=at, samples=samples, bad_lines=bad_lines, unread_lines=unread)


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

    ``timeout`` bounds the whole request, redirects included (a server that sends a byte at
    a time cannot hold the run). Errors: no connection, no answer, a redirect to another
    scheme, host or port (or more than MAX_REDIRECTS), an HTTP status other than 200, a page
    over MAX_PAGE_BYTES, a page that is not Prometheus text, or one without any ``nv_*``
    sample (not Triton's metrics port: the rules would judge nothing and say all is well). A
    page with some bad lines is a scrape: the good samples are kept and ``bad_lines`` says how
    many were skipped. Messages name the URL without its credentials.
    """
    at = time.time()
    shown = hide_credentials(url)
    try:
        answer = fetch(url, timeout=timeout, max_bytes=MAX_PAGE_BYTES,
                       headers={"Accept": "text/plain;version=0.0.4"},
                       max_redirects=MAX_REDIRECTS)
    except Failure as failure:
        raise SourceUnavailable(_failed(shown, failure, timeout)) from None
    if answer.redirected_to:
        shown = f"{shown} (redirected to {answer.redirected_to})"
    body = answer.body
    if answer.status != 200:
        snippet = " ".join(body[:200].decode("utf-8", "replace").split())
        hint = " (Triton serves them at /metrics)" if answer.status == 404 else ""
        raise SourceUnavailable(
            f"metrics endpoint {shown} answered HTTP {answer.status}{hint}: "
            f"{snippet or '(empty body)'}"
        )
    content_type = answer.headers.get("content-type", "")
    text = body.decode("utf-8", "replace")
    result = parse_metrics(text, at)
    result.redirected_to = answer.redirected_to
    if not result.samples and result.bad_lines:
        first = re.search(r"\S", text)
        line = text[first.start():first.start() + 80].partition("\n")[0] if first else ""
        raise SourceUnavailable(
            f"metrics endpoint {shown} did not return Prometheus text "
            f"(Content-Type {content_type or 'not given'}, first line {line.strip()!r}); "
            "give the URL of Triton's metrics port, e.g. http://HOST:8002/metrics"
        )
    if not any(sample.name.startswith("nv_") for sample in result.samples):
        what = f"{len(result.samples)} samples, none of them" if result.samples else "no sample"
        raise SourceUnavailable(
            f"metrics endpoint {shown} returned {what} from Triton (nv_*); is this Triton's "
            "metrics port (--metrics-port, default 8002)?"
        )
    return result


def _failed(shown: str, failure: Failure, timeout: float) -> str:
    """Why ``failure`` left no page, in words, with what to do."""
    if isinstance(failure, TooLarge):
        return (f"metrics endpoint {shown}: the page is over {MAX_PAGE_BYTES // (1 << 20)} MiB "
                f"({failure.size} bytes read or declared); refused, as no Triton page is that "
                "large")
    if isinstance(failure, TooSlow):
        return (f"metrics endpoint {shown} sent only {failure.size} bytes of its page in "
                f"{timeout:g} s; is the server overloaded?")
    if isinstance(failure, TimedOut) and failure.connecting:
        return (f"metrics endpoint {shown}: no connection within {timeout:g} s; check the host, "
                "the port (--metrics-port, default 8002) and any firewall in between")
    if isinstance(failure, TimedOut):
        return (f"metrics endpoint {shown} accepted the connection but sent no page within "
                f"{timeout:g} s; is the server overloaded, or is this port something else?")
    if isinstance(failure, Redirected) and failure.too_many:
        return (f"metrics endpoint {shown} redirected more than {MAX_REDIRECTS} times (last to "
                f"{failure.location}); give --metrics-url the address that serves the page")
    if isinstance(failure, Redirected):
        return (f"metrics endpoint {shown} redirected to {failure.location}, another scheme, "
                "host or port: not followed, as credentials and trust given for one endpoint "
                "are not for another; give that address as --metrics-url if it is the "
                "server's")
    if isinstance(failure, ConnectionFailed):
        return f"metrics endpoint {shown}: {_connection_problem(failure.error)}"
    assert isinstance(failure, ClientError)
    return f"metrics endpoint {shown}: {failure.error}"


def _connection_problem(error: BaseException) -> str:
    """The cause in words, from the OSError the failure wraps."""
    wrapped = list(causes(error))
    if any(isinstance(cause, ConnectionRefusedError) for cause in wrapped):
        return ("connection refused; is tritonserver running with --allow-metrics=true on this "
                "port? (--metrics-port, default 8002)")
    for cause in wrapped:
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({cause.strerror})"
    if any(isinstance(cause, (ConnectionResetError, IncompleteRead)) for cause in wrapped):
        return "the connection closed before the page was complete"
    return f"cannot read the page: {error}"
