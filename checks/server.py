"""Collect a running tritonserver through its HTTP API (KServe v2 plus Triton's extensions).

Read-only: GETs, and the one POST Triton needs to list its repository (``/v2/repository/index``).

The calls go through ``checks.fetch``, not ``tritonclient.http``. Measured against tritonclient
2.73 with geventhttpclient 2.6, the client hides what a diagnosis needs: the health calls fold
every status (500 included) into False, a 500 with a non-JSON body becomes "an exception
occurred in the client while decoding the response", a GET on a dropped connection is silently
sent again, and failures arrive as seven unrelated exception types (ConnectionRefusedError and
socket.gaierror raw, TimeoutError, HTTPParseError, HTTPConnectionClosed, rapidjson's
JSONDecodeError, InferenceServerException). It also runs a gevent hub in whichever thread calls
it. ``checks.fetch`` gives the status and body of every answer, one exception family, no
retries, and one deadline for each whole request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from triton_doctor.checks.fetch import REDIRECTS, Answer, Failure, failure_words, fetch
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import DEFAULT_PORTS, NOT_A_URL, hide_credentials, split_url
from triton_doctor.evidence import (
    MAX_JSON_DEPTH,
    ModelStats,
    ServerEvidence,
    ServerModel,
    ServerSample,
    ShmRegion,
    too_deep,
)

#: Answers are small JSON documents; past this the peer is not a tritonserver.
MAX_BODY_BYTES = 64 * 1024 * 1024
#: How much of an unexpected body an error message quotes.
EXCERPT_CHARS = 200
HINT = "is it running, and is this its HTTP port (default 8000)?"


def normalize_url(url: str) -> tuple[str, str]:
    """``(host:port[/base-path], scheme)`` of a server URL given as ``http://h:8000``, ``h:8000``
    or ``h``, the way users write it; raises ValueError for what cannot be a server URL."""
    scheme, sep, _ = url.strip().partition("://")
    scheme = scheme.lower() if sep else "http"
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"{url!r}: the server URL must be http:// or https://")
    parts = split_url(url)
    if not parts.host or parts.query or parts.fragment or parts.username:
        raise ValueError(f"{url!r}: {NOT_A_URL}")
    return f"{parts.host}:{parts.port}{parts.path.rstrip('/')}", scheme


class _NoAnswer(Exception):
    """A call that got no HTTP answer (refused, reset, timed out, not HTTP); the message says
    which in a few words."""


class _Api:
    """One server's HTTP API: every call bounded by ``timeout`` as a whole, never retried,
    never redirected (a redirect is an answer, reported with where it points).

    The first call decides whether the server is there at all: without an answer it raises
    SourceUnavailable; after one answer, a call without one raises _NoAnswer, so the caller
    records it and carries on.
    """

    def __init__(self, url: str, timeout: float) -> None:
        address, scheme = normalize_url(url)
        self.url = f"{scheme}://{address}"
        self.timeout = timeout
        self.answered = False

    def call(self, method: str, path: str) -> Answer:
        """One request, on a connection of its own, straight to the server (no proxy)."""
        try:
            answer = fetch(self.url + path, method=method, timeout=self.timeout,
                           max_bytes=MAX_BODY_BYTES)
        except Failure as failure:
            why = failure_words(failure, self.timeout, MAX_BODY_BYTES)
        else:
            self.answered = True
            return answer
        if not self.answered:
            raise SourceUnavailable(f"cannot reach tritonserver at {self.url}: {why}; {HINT}")
        raise _NoAnswer(why)

def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return repr(text[:EXCERPT_CHARS] + ("..." if len(text) > EXCERPT_CHARS else ""))


def _http_error(answer: Answer) -> str:
    """Triton's own words (``{"error": ...}``) when the body has them, else an excerpt; for a
    redirect, where it points."""
    status, body = answer.status, answer.body
    if status in REDIRECTS:
        location = hide_credentials(answer.headers.get("location", "nowhere"))
        return (f"HTTP {status}: redirected to {location!r}, not followed; give --url the "
                "server's own HTTP address")
    try:
        message = json.loads(body)["error"]
    except (ValueError, RecursionError, TypeError, KeyError):
        return f"HTTP {status}: {_excerpt(body)}" if body else f"HTTP {status} with an empty body"
    return f"HTTP {status}: {message}"


def _fetch(api: _Api, method: str, path: str, errors: dict[str, str]) -> Any:
    """The JSON answer of one endpoint, or None with the reason in ``errors[endpoint]``."""
    try:
        answer = api.call(method, path)
    except _NoAnswer as error:
        errors[f"{method} {path}"] = str(error)
        return None
    return _parse(f"{method} {path}", answer, errors)


def _parse(endpoint: str, answer: Answer, errors: dict[str, str]) -> Any:
    if answer.status != 200:
        errors[endpoint] = _http_error(answer)
        return None
    try:
        return json.loads(answer.body)
    except (ValueError, RecursionError) as error:
        errors[endpoint] = f"invalid JSON ({error}): {_excerpt(answer.body)}"
        return None


def _health(api: _Api, path: str, errors: dict[str, str]) -> bool:
    """200 is yes; 400 (empty body) is Triton's no; anything else is also recorded."""
    try:
        answer = api.call("GET", path)
    except _NoAnswer as error:
        errors[f"GET {path}"] = str(error)
        return False
    if answer.status not in (200, 400):
        errors[f"GET {path}"] = _http_error(answer)
    return answer.status == 200


def _unexpected(errors: dict[str, str], endpoint: str, answer: Any) -> None:
    errors[endpoint] = f"unexpected answer: {_excerpt(json.dumps(answer).encode())}"


def _text(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    return "" if value is None else value if isinstance(value, str) else str(value)


def describe(url: str, timeout: float,
             known_configs: Mapping[tuple[str, str], dict[str, Any]] | None = None,
             ) -> ServerEvidence:
    """The server's health, version, models (state and load error) and the configs it runs.

    ``known_configs`` ((name, version) -> config) are reused for models READY in those
    versions instead of being asked again: ``watch`` polls every second.

    Raises SourceUnavailable when the first call gets no answer, or when the answer shows the
    port is not Triton's HTTP API; after that every failure goes to ``errors`` by endpoint.
    """
    api = _Api(url, timeout)
    evidence = ServerEvidence(url=api.url)
    errors = evidence.errors
    live = api.call("GET", "/v2/health/live")
    if live.status == 404:
        raise SourceUnavailable(
            f"{api.url} answers HTTP but is not tritonserver's API (GET /v2/health/live: "
            f"HTTP 404); {HINT}")
    if live.status not in (200, 400):
        errors["GET /v2/health/live"] = _http_error(live)
    evidence.live = live.status == 200
    evidence.ready = _health(api, "/v2/health/ready", errors)
    _metadata(evidence, _fetch(api, "GET", "/v2", errors))
    _models(evidence, _fetch(api, "POST", "/v2/repository/index", errors))
    _configs(api, evidence, known_configs or {})
    return evidence


def _metadata(evidence: ServerEvidence, answer: Any) -> None:
    if answer is None:
        return
    extensions = answer.get("extensions", []) if isinstance(answer, dict) else None
    if (not isinstance(answer, dict) or not isinstance(answer.get("version"), str)
            or not isinstance(extensions, list)):
        _unexpected(evidence.errors, "GET /v2", answer)
        return
    evidence.version = answer["version"]
    evidence.extensions = [str(name) for name in extensions]


def _models(evidence: ServerEvidence, answer: Any) -> None:
    """Index entries; a model whose directory failed the repository poll has its name only."""
    if answer is None:
        return
    entries = answer if isinstance(answer, list) else []
    named = [e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)]
    if not isinstance(answer, list) or len(named) < len(entries):
        _unexpected(evidence.errors, "POST /v2/repository/index", answer)
    evidence.models = [
        ServerModel(name=e["name"], version=_text(e, "version"), state=_text(e, "state"),
                    reason=_text(e, "reason"))
        for e in named
    ]


def _configs(api: _Api, evidence: ServerEvidence,
             known: Mapping[tuple[str, str], dict[str, Any]]) -> None:
    """The config of every READY model; once a call gets no answer the rest are not asked, so
    a hung server costs one timeout, not one per model."""
    stalled = ""
    for model in evidence.models:
        if model.state == "READY":
            model.config = known.get((model.name, model.version))
    for name in dict.fromkeys(m.name for m in evidence.models
                              if m.state == "READY" and m.config is None):
        endpoint = f"GET /v2/models/{quote(name, safe='')}/config"
        if stalled:
            evidence.errors[endpoint] = f"not asked: {stalled}"
            continue
        try:
            answer = api.call("GET", endpoint[4:])
        except _NoAnswer as error:
            evidence.errors[endpoint] = str(error)
            stalled = f"{endpoint} got no answer"
            continue
        config = _parse(endpoint, answer, evidence.errors)
        if config is not None and not isinstance(config, dict):
            _unexpected(evidence.errors, endpoint, config)
            config = None
        elif config is not None and too_deep(config):  # no real one is; snapshots could not hold it
            evidence.errors[endpoint] = (f"the config served is nested deeper than "
                                         f"{MAX_JSON_DEPTH} levels; not kept")
            config = None
        for model in evidence.models:
            if model.name == name and model.state == "READY":
                model.config = config


def sample(url: str, timeout: float) -> ServerSample:
    """Per-model counters and the registered system shared-memory regions, at one moment.

    Raises SourceUnavailable when the statistics call gets no answer; after that each endpoint
    that fails is recorded in ``errors`` and its part left empty.
    """
    api = _Api(url, timeout)
    taken = ServerSample(at=time.time())
    stats = _fetch(api, "GET", "/v2/models/stats", taken.errors)
    if stats is not None:
        entries = stats.get("model_stats") if isinstance(stats, dict) else None
        if isinstance(entries, list):
            taken.stats = [_model_stats(e) for e in entries if isinstance(e, dict)]
        else:
            _unexpected(taken.errors, "GET /v2/models/stats", stats)
    taken.system_shm = _regions(api, "/v2/systemsharedmemory/status", taken.errors)
    return taken


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _count(stats: dict[str, Any], key: str, part: str = "count") -> int:
    """``stats[key][part]`` of Triton's ``{"count": N, "ns": T}`` pairs; 0 when absent."""
    value = stats.get(key)
    return _int(value.get(part)) if isinstance(value, dict) else 0


def _model_stats(entry: dict[str, Any]) -> ModelStats:
    inference = entry.get("inference_stats")
    inference = inference if isinstance(inference, dict) else {}
    stats = ModelStats(
        name=_text(entry, "name"),
        version=_text(entry, "version"),
        inference_count=_int(entry.get("inference_count")),
        execution_count=_int(entry.get("execution_count")),
        success_count=_count(inference, "success"),
        fail_count=_count(inference, "fail"),
        queue_ns=_count(inference, "queue", "ns"),
        compute_input_ns=_count(inference, "compute_input", "ns"),
        compute_infer_ns=_count(inference, "compute_infer", "ns"),
        compute_output_ns=_count(inference, "compute_output", "ns"),
        success_ns=_count(inference, "success", "ns"),
    )
    for batch in _dicts(entry.get("batch_stats")):
        stats.batch_executions[_text(batch, "batch_size")] = _count(batch, "compute_infer")
    for usage in _dicts(entry.get("memory_usage")):
        kind, size = _text(usage, "type"), usage.get("byte_size")
        if isinstance(size, int):
            stats.memory_bytes[kind] = stats.memory_bytes.get(kind, 0) + size
    return stats


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _regions(api: _Api, path: str, errors: dict[str, str]) -> list[ShmRegion]:
    """The regions a shared-memory status answer lists; none when it fails."""
    answer = _fetch(api, "GET", path, errors)
    if answer is None:
        return []
    if not isinstance(answer, list):
        _unexpected(errors, f"GET {path}", answer)
        return []
    return [
        ShmRegion(
            name=_text(region, "name"),
            key=_text(region, "key"),
            byte_size=_int(region.get("byte_size")),
        )
        for region in _dicts(answer)
    ]
