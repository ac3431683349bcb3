"""Prometheus's HTTP API (and what speaks it: Thanos Query, Mimir, VictoriaMetrics), read-only.

Every call is one bounded request through ``checks.fetch`` (one deadline for the whole
exchange, a cap on the body), never retried. The engine's own errors (a query it refuses, a
timeout it hit) come back as :class:`QueryFailed` with its words; an engine that cannot be
reached at all as :class:`SourceUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from triton_doctor.checks.fetch import Answer, Failure, failure_words, fetch
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import hide_credentials, prometheus_base
from triton_doctor.records import field, record

#: The most one answer may hold: 200 replicas by 20 models by 10 families is ~7 MiB of JSON.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: How much of an unexpected body an error message quotes.
EXCERPT_CHARS = 160
HINT = "is it running, and is this its address (default port 9090)?"


class QueryFailed(Exception):
    """The engine answered, but not with data: its error in its words, or an answer that is
    not the API's."""


@record
class Vector:
    """An instant query's answer: (labels, value) per series, and the engine's warnings."""

    series: list[tuple[dict[str, str], float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class PrometheusApi:
    """One engine's API at ``url`` (with any path prefix: Mimir's ``/prometheus``); ValueError
    for a URL that is not one (see ``urls.prometheus_base``)."""

    def __init__(self, url: str, timeout_s: float, headers: Mapping[str, str] | None = None,
                 ) -> None:
        self.base = prometheus_base(url)
        #: Where it is, without credentials, for every message.
        self.shown = hide_credentials(self.base)
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})
        self.answered = False

    def query(self, expr: str, at: float) -> Vector:
        """``expr`` evaluated at ``at`` (seconds since the epoch); the engine is asked to give
        up at our own timeout, so that it does not go on working for nobody."""
        params = {"query": expr, "time": f"{at:.3f}", "timeout": f"{self.timeout_s:g}s"}
        data, warnings = self._get(f"/api/v1/query?{urlencode(params)}")
        result = data.get("result")
        if data.get("resultType") != "vector" or not isinstance(result, list):
            raise QueryFailed(f"an answer that is not an instant vector: "
                              f"{_excerpt(json.dumps(data))}")
        vector = Vector(warnings=warnings)
        for entry in result:
            labels, value = _series(entry)
            if labels is not None:
                vector.series.append((labels, value))
        return vector

    def targets(self) -> list[dict[str, Any]] | None:
        """The active scrape targets; None where the engine has no targets API (Thanos Query
        and Mimir answer 404, or an error)."""
        try:
            data, _ = self._get("/api/v1/targets?state=active")
        except QueryFailed:
            return None
        active = data.get("activeTargets")
        return [t for t in active if isinstance(t, dict)] if isinstance(active, list) else None

    def _get(self, path: str) -> tuple[dict[str, Any], list[str]]:
        """The ``data`` of a successful answer, and its warnings. Raises SourceUnavailable
        when the engine has not answered yet and does not now, QueryFailed for any other
        failure."""
        try:
            answer = fetch(self.base + path, timeout=self.timeout_s, max_bytes=MAX_ANSWER_BYTES,
                           headers=self.headers)
        except Failure as failure:
            why = failure_words(failure, self.timeout_s, MAX_ANSWER_BYTES)
            if not self.answered:
                raise SourceUnavailable(
                    f"cannot reach Prometheus at {self.shown}: {why}; {HINT}") from None
            raise QueryFailed(why) from None
        self.answered = True
        return _data(answer)


def _data(answer: Answer) -> tuple[dict[str, Any], list[str]]:
    try:
        document = json.loads(answer.body)
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict) or "status" not in document:
        raise QueryFailed(f"HTTP {answer.status}, not the Prometheus API: "
                          f"{_excerpt(answer.body.decode('utf-8', 'replace'))}")
    warnings = document.get("warnings")
    if document["status"] != "success":
        kind = document.get("errorType") or f"HTTP {answer.status}"
        raise QueryFailed(f"{kind}: {document.get('error') or 'no reason given'}")
    data = document.get("data")
    if not isinstance(data, dict):
        raise QueryFailed(f"an answer without data: {_excerpt(json.dumps(document))}")
    return data, [str(w) for w in warnings if w] if isinstance(warnings, list) else []


def _series(entry: Any) -> tuple[dict[str, str] | None, float]:
    """One result's labels and value; (None, 0) for what is not one."""
    if not isinstance(entry, dict):
        return None, 0.0
    labels, pair = entry.get("metric"), entry.get("value")
    if not isinstance(labels, dict) or not isinstance(pair, list) or len(pair) != 2:
        return None, 0.0
    try:
        value = float(pair[1])
    except (TypeError, ValueError):
        return None, 0.0
    if not all(type(v) is str for v in labels.values()):  # JSON's keys are strings already
        return None, 0.0
    return labels, value


def _excerpt(text: str) -> str:
    return repr(text[:EXCERPT_CHARS] + ("..." if len(text) > EXCERPT_CHARS else ""))
