"""TD6xx: serving health of a running server: readiness, queueing, batching, failures, latency.

Rates come from two samples of the server's statistics a window apart (``--window``). A model
with fewer requests than ``min-requests`` in the window is not judged on averages alone, but
what is waiting (TD611), what failed (TD613) and executions that fill the window (TD615) are
judged however few completed: a model too slow to complete requests is the worst case, not a
lack of data. Thresholds are settings (``[thresholds]``), with the defaults each rule's docs
give.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from triton_doctor.findings import Finding, Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import first_line
from triton_doctor.server_words import explain_reason
from triton_doctor.triton.server_model import LiveView, ModelRates

if TYPE_CHECKING:
    from triton_doctor.live_evidence import ServerEvidence, ServerModel


@rule("TD601", "model-not-ready", "error", "A model is not ready on the server", scope="live",
      needs=("server_state", "static_findings"), relays_server=True)
def model_not_ready(view: LiveView, static_findings: Sequence[Finding]) -> Iterator[Hit]:
    """
    What it checks: every model in the server's repository index is READY. For each that is
    not, the server's own reason, and the rule that explains it: a finding of `check` on the
    same repository when one was given (`check REPO --url URL`), else the rule whose message
    matches the reason.

    Why it matters: requests to the model fail ("Request for unknown model"), and with the
    default `--exit-on-error` a model that fails at startup stops the whole server.

    Example: `UNAVAILABLE: Invalid argument: unable to find backend library for backend
    'onnx'` → explained by TD504 (the backend is `onnxruntime`).

    The message holds the reason's first line; the whole reason (a Python model's traceback)
    is the server's message, printed once. Not reported: a version the server is unloading or
    says it `unloaded` (an unload request, or an older version a newer one replaced), and a
    model with no state (never loaded) unless the server is not ready with no other model to
    explain it: explicit model control loads only what it is asked to, while a model that
    failed before loading at startup leaves a server with strict readiness not ready.

    Fix: the fix of the explaining rule (`triton-doctor explain <id>`); for a model that
    failed before loading (no state in the index), the reason is in the server log.
    """
    assert view.server is not None
    for model in view.server.models:
        if model.state == "READY" or _not_loaded_on_purpose(model, view.server):
            continue
        static = [f for f in static_findings
                  if f.model == model.name and f.severity >= Severity.ERROR]
        explained = static[0].rule if static else explain_reason(model.reason)
        state = model.state or "not loaded (failed before loading)"
        reason = first_line(model.reason, 160) or "no reason in the index: the server log has it"
        fix = static[0].fix if static and static[0].fix else None
        if fix is None:
            fix = (f"See `triton-doctor explain {explained}`." if explained else
                   "Read the reason; `triton-doctor check` on the repository finds most load "
                   "errors offline.")
        yield Hit(
            message=f"{model.name}"
            + (f" version {model.version}" if model.version else "")
            + f" is {state}: {reason}"
            + (f" (explained by {explained})" if explained else ""),
            triton_message=model.reason or None,
            fix=fix,
            model=model.name,
            version=model.version or None,
            evidence={"state": model.state, "explained_by": explained},
        )


def _not_loaded_on_purpose(model: ServerModel, server: ServerEvidence) -> bool:
    if model.state == "UNLOADING" or model.reason == "unloaded":
        return True
    if model.state:
        return False
    # No state: never loaded. Explicit model control never asked to, or (the server's default)
    # it failed before loading at startup, which leaves a strict server not ready: but so does
    # a model whose load failed or is under way, so only a not-ready server with nothing else
    # to explain it tells the second case.
    explained = any(m.state not in ("", "READY") for m in server.models)
    return server.ready or explained


@rule("TD602", "server-answers-badly", "warning", "The server or its metrics answered with errors",
      scope="live", needs=("server_state",))
def server_answers_badly(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server is live and ready, each endpoint triton-doctor read answered
    (repository index, configs, statistics, shared-memory status), and the metrics page parsed
    without unreadable lines, was read whole, and holds per-model families when models are
    READY. Not live or not ready is an error; the rest are warnings naming the endpoint and its
    answer, and a note when the metrics endpoint redirected (on the same host and port).

    Why it matters: a server that is not ready fails health checks and is taken out of load
    balancing; endpoints answering 500 or garbage usually mean a proxy in front of it, an
    overloaded server, or the wrong port, and every conclusion drawn from them is weaker.

    Example: `GET /v2/models/stats: HTTP 500` behind an ingress → point --url at the server's
    own port 8000.

    Fix: check that --url is tritonserver's HTTP port (not a proxy or the metrics port); read
    the server log for the failing endpoint.
    """
    assert view.server is not None
    server = view.server
    if not server.live:
        yield Hit(message=f"{server.url} is not live (/v2/health/live did not answer 200)",
                  fix="Check the server process and its log.", severity=Severity.ERROR,
                  evidence={"live": False})
    elif not server.ready:
        down = [m.name for m in server.models if m.state != "READY"]
        yield Hit(message=f"{server.url} is live but not ready"
                  + (f": models not ready: {', '.join(down[:8])}" if down else ""),
                  fix="See TD601 for each model that is not ready; with strict readiness the "
                  "server is ready only when every model is.", severity=Severity.ERROR,
                  evidence={"ready": False})
    errors = dict(server.errors)
    for sample in server.samples:
        errors.update(sample.errors)
    for endpoint, why in sorted(errors.items()):
        yield Hit(message=f"{endpoint}: {why}",
                  fix="Check that --url is the server's own HTTP port, and read its log.",
                  evidence={"endpoint": endpoint})
    scrapes = view.metrics.scrapes if view.metrics else []
    ready = [m.name for m in server.models if m.state == "READY"]
    metrics = view.metrics_view
    if metrics is not None and ready and not any(
            name.startswith("nv_inference_") for name in metrics.names):
        yield Hit(message="the metrics page has no per-model families (nv_inference_*) while "
                  f"{len(ready)} model(s) are READY: it may be another server's page",
                  fix="Point --metrics-url at this server's metrics port (default 8002).",
                  evidence={"ready_models": len(ready)})
    bad = max((scrape.bad_lines for scrape in scrapes), default=0)
    if bad:
        yield Hit(message=f"the metrics page has {bad} lines that are not Prometheus text "
                  "(they were skipped)",
                  fix="Check --metrics-url points at tritonserver's /metrics, not a proxy page.",
                  evidence={"bad_lines": bad})
    unread = max((scrape.unread_lines for scrape in scrapes), default=0)
    if unread:
        yield Hit(message=f"the metrics page is longer than triton-doctor reads: its last "
                  f"{unread} lines were not read, so the metrics rules saw only part of it",
                  fix="Check --metrics-url points at tritonserver's /metrics: Triton's page for "
                  "a thousand models has ~30 000 lines.",
                  evidence={"unread_lines": unread})
    moved = next((s.redirected_to for s in reversed(scrapes) if s.redirected_to), "")
    if moved and view.metrics is not None:
        yield Hit(message=f"the metrics endpoint {view.metrics.url} redirected to {moved}; the "
                  "page was read there",
                  fix=f"Give --metrics-url {moved}, so that no redirect is needed.",
                  severity=Severity.INFO, evidence={"redirected_to": moved})


def _busy(view: LiveView) -> Iterator[ModelRates]:
    """Rates of the models with enough requests in the window to judge on rates alone."""
    least = view.threshold("min-requests")
    return (rates for rates in view.rates if rates.requests + rates.failures >= least)


def _in_flight(rates: ModelRates) -> float:
    """Average requests in the server at once over the window (Little's law)."""
    return rates.request_ns / (rates.window_s * 1e9) if rates.window_s > 0 else 0.0


def _waiting_text(pending: tuple[float | None, float] | None) -> str:
    if not pending or not (pending[0] or pending[1]):
        return ""
    first, last = pending
    return f", {last:g} pending now" + (
        f" ({first:g} when the window began)" if first is not None else "")


@rule("TD611", "queue-backlog", "warning", "Requests wait in the queue longer than they compute",
      scope="live", needs=("server",))
def queue_backlog(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: what waits in the model's queue over the window: the average queue time
    of the requests that completed and its share of their whole time (`queue-ms`, default
    10 ms, and `queue-share`, default 0.5, together), and, with metrics, the requests waiting
    for an instance (`nv_inference_pending_request_count`) at the window's start and end.
    With `min-requests` (default 20) completions the queue time is enough. With fewer, few
    completions are the symptom, not a lack of data: their queue time counts when requests
    still wait at the end or they waited `queue-error-ms` (default 1000 ms), and requests
    waiting at both ends, at least as many as completed (none completed is the worst case),
    fire on their own. It is an error from `queue-error-ms` of queue per request (seconds:
    past most client and load-balancer timeouts) or when as many wait as the model completed
    in the window (the queue takes longer than the window to drain).

    Why it matters: the model cannot keep up; latency grows with load and, with
    `max_queue_size` or timeouts set, requests start being rejected.

    Example: 1 instance at 250 ms per request with 8 clients → 7 pending, 1.75 s queued per
    request, 12 completed in 3 s (error); `instance_group [ { count: 8 } ]` drains it.

    Fix: add instances (`count`) while compute has headroom, scale out, or lower
    `max_queue_delay_microseconds` when the batcher itself is what holds requests back.
    """
    least, error_ms = view.threshold("min-requests"), view.threshold("queue-error-ms")
    for rates in view.rates:
        completed = rates.requests + rates.failures
        queue_ms, share = rates.queue_ms_per_request, rates.queue_share
        pending = view.pending(rates.model, rates.version)
        now = pending[1] if pending else 0.0
        # Waiting at both ends of the window (at the end alone with a single scrape).
        waiting = min(pending[0], now) if pending and pending[0] is not None else now
        swamped = waiting > 0 and waiting >= completed
        queued = (queue_ms is not None and share is not None
                  and queue_ms >= view.threshold("queue-ms")
                  and share >= view.threshold("queue-share")
                  and (completed >= least or now > 0 or queue_ms >= error_ms))
        if not queued and not swamped:
            continue
        config = view.config(rates.model)
        instances = view.instances(rates.model)
        delay_us = int((config.get("dynamic_batching") or {}).get(
            "max_queue_delay_microseconds", 0) or 0)
        compute = rates.compute_ms_per_execution or 0.0
        if not completed:
            cause = (f"none completed in {rates.window_s:.1f} s on {instances} instance(s): an "
                     "execution takes longer than the window, or the model hangs")
            fix = ("Find what an execution waits on (the server log; `py-spy dump` on a Python "
                   "model's stub process), then raise the instance count or add replicas.")
        elif queue_ms is not None and delay_us / 1000 >= queue_ms * 0.5:
            cause = (f"max_queue_delay_microseconds is {delay_us} µs: the batcher holds requests "
                     "that long waiting for a fuller batch")
            fix = (f"Lower max_queue_delay_microseconds (to about {max(100, delay_us // 10)}), or "
                   "send requests concurrently so batches fill before the delay runs out.")
        else:
            wanted = max(instances + 1, round(instances / max(1e-9, 1 - (share or 0.0))))
            cause = (f"{instances} instance(s) each busy {compute:.1f} ms per execution cannot "
                     "keep up")
            fix = (f"Raise the instance count: instance_group [ {{ count: {wanted} }} ] (if the "
                   "GPU or CPU has headroom), or add replicas behind the load balancer.")
        if queue_ms is not None and share is not None:
            what = (f"requests wait {queue_ms:.1f} ms in the queue on average, {share:.0%} of "
                    f"their time, at {rates.requests_per_s:.1f} requests/s")
        else:
            what = f"{completed} request(s) completed in {rates.window_s:.1f} s"
        severe = swamped or (queue_ms is not None and queue_ms >= error_ms)
        yield Hit(
            message=f"{rates.model}: {what}{_waiting_text(pending)}; {cause}",
            fix=fix,
            model=rates.model,
            version=rates.version,
            severity=Severity.ERROR if severe else None,
            evidence={"queue_ms_per_request": _rounded(rates.queue_ms_per_request, 3),
                      "queue_share": _rounded(share, 3),
                      "requests_per_s": round(rates.requests_per_s, 2), "completed": completed,
                      "compute_ms_per_execution": round(compute, 3), "instances": instances,
                      "max_queue_delay_us": delay_us, "window_s": round(rates.window_s, 2),
                      "pending_requests": pending[1] if pending else None,
                      "pending_at_start": pending[0] if pending else None},
        )


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


@rule("TD612", "low-batch-efficiency", "warning", "Batches stay far below max_batch_size",
      scope="live", needs=("server",))
def low_batch_efficiency(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the average batch the model executed over the window (inferences ÷
    executions) against its `max_batch_size`, for models that batch and had at least
    `min-requests` requests. It fires below `batch-efficiency` (default 0.25) of
    max_batch_size, and says why: no dynamic batcher, or requests that arrive one at a time.
    It keeps `min-requests`: an average batch says something only over many executions (a
    handful of requests never fills a batch, whatever the batcher), and a model too slow to
    complete them is TD611's case.

    Why it matters: a batching model running batches of 1 uses a fraction of the GPU it could;
    throughput and cost per request are several times worse than they need to be.

    Example: max_batch_size 32, average batch 1.0 with dynamic batching off → add
    `dynamic_batching { max_queue_delay_microseconds: 500 }`.

    Fix: enable the dynamic batcher (with a small max_queue_delay_microseconds), and send
    requests concurrently (several client threads or async requests), not one after another.
    """
    for rates in _busy(view):
        config = view.config(rates.model)
        max_batch = int(config.get("max_batch_size", 0) or 0)
        average = rates.average_batch
        if max_batch <= 1 or average is None:
            continue
        if average >= view.threshold("batch-efficiency") * max_batch:
            continue
        batcher = config.get("dynamic_batching")
        in_flight = _in_flight(rates)
        if batcher is None:
            why = "dynamic batching is off, so each request runs as it came"
            fix = ("Enable the dynamic batcher: dynamic_batching { max_queue_delay_microseconds: "
                   "100 } (raise the delay if batches stay small under load).")
        elif in_flight < 2:
            why = (f"requests arrive one at a time (on average {in_flight:.1f} in the server), so "
                   "the batcher has nothing to merge")
            fix = ("Send requests concurrently (client threads, async calls or several clients); "
                   "batching needs several requests in the server at once.")
        else:
            delay = int(batcher.get("max_queue_delay_microseconds", 0) or 0)
            why = (f"{in_flight:.1f} requests in flight but max_queue_delay_microseconds is "
                   f"{delay}: the batcher does not wait for them")
            fix = f"Raise max_queue_delay_microseconds (e.g. to {max(100, delay * 4)})."
        yield Hit(
            message=f"{rates.model}: average batch {average:.2f} of max_batch_size {max_batch} "
            f"over {rates.executions} executions; {why}",
            fix=fix,
            model=rates.model,
            version=rates.version,
            evidence={"average_batch": round(average, 3), "max_batch_size": max_batch,
                      "executions": rates.executions, "requests_in_flight": round(in_flight, 2),
                      "dynamic_batching": batcher is not None},
        )


@rule("TD613", "failure-rate", "error", "Requests are failing", scope="live", needs=("server",))
def failure_rate(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the share of failed requests over the window, per model; it fires above
    `failure-rate` (default 0.01) with at least `min-requests` (default 20) requests, and
    with fewer when at least `min-failures` (default 5) failed or every request did: a failure
    is an answer a client got, not a sample of one, so 5 failed of 5 is judged, while 1 of 12
    is not. Every request failing with fewer than `min-failures` failed is a warning. With
    metrics, the failure reasons the server counts (BACKEND, REJECTED, CANCELED, OTHER) are
    given.

    Why it matters: clients get errors. REJECTED means a full queue (`max_queue_size`) or a
    timeout; BACKEND means the model itself raised. An error a Python model *returns* in its
    response (`InferenceResponse(error=...)`) reaches the client as HTTP 500 but the server
    (2.51) counts it as a success, so it is invisible here and in the metrics.

    Example: a Python model raising on malformed input for 5% of requests → validate inputs
    and return an error response for those requests only.

    Fix: for BACKEND failures read the server log for the model's exception; for REJECTED
    raise `max_queue_size` or capacity (see TD611).
    """
    least, enough = view.threshold("min-requests"), view.threshold("min-failures")
    for rates in view.rates:
        share = rates.failure_share
        if share is None or share <= view.threshold("failure-rate"):
            continue
        judged = rates.requests + rates.failures >= least or rates.failures >= enough
        if not judged and rates.requests:
            continue
        reasons = view.failure_reasons(rates.model)
        named = ", ".join(f"{reason} {count:g}" for reason, count in sorted(reasons.items()))
        yield Hit(
            message=f"{rates.model}: {rates.failures} of {rates.failures + rates.requests} "
            f"requests failed ({share:.1%}) in {rates.window_s:.0f} s"
            + (f"; reasons: {named}" if named else ""),
            fix="REJECTED: raise max_queue_size or capacity. BACKEND: the model raised; its "
            "traceback is in the server log."
            if "REJECTED" in reasons else "Read the model's errors in the server log (or the "
            "clients' error messages) and fix the model or the requests.",
            model=rates.model,
            version=rates.version,
            severity=None if judged else Severity.WARNING,
            evidence={"failed": rates.failures, "succeeded": rates.requests,
                      "failure_share": round(share, 4), **{f"reason_{k}": v
                                                         for k, v in reasons.items()}},
        )


@rule("TD615", "compute-time-growing", "warning", "Each execution takes longer than it used to",
      scope="live", needs=("server",))
def compute_time_growing(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: a model's compute time per execution over the window against its average
    from load until the window began (at least 100 executions before); it fires above
    `compute-growth` (default 1.5) times, with at least `min-requests` requests, or fewer
    when executions kept the instances busy at least half the window: a few long executions
    then cover the window rather than sample it, and a model slowed down that much completes
    few requests (with a backlog, TD611).

    Why it matters: a model that slows down under steady traffic is contending for the GPU
    (another process, a co-located model, thermal or power throttling), leaking memory, or
    getting bigger inputs; queues follow.

    Example: 12 ms per execution since load, 31 ms in the last 5 s → look at what else runs
    on the GPU and at its clocks.

    Fix: check GPU sharing (nvidia-smi), throttling and input sizes; give the model a GPU of
    its own or fewer co-located instances.
    """
    growth, least = view.threshold("compute-growth"), view.threshold("min-requests")
    for rates in view.rates:
        busy_ns = rates.window_s * 1e9 * view.instances(rates.model)
        if rates.requests + rates.failures < least and rates.compute_ns < 0.5 * busy_ns:
            continue
        now = rates.compute_ms_per_execution
        before = view.earlier_compute_ms(rates.model, rates.version)
        if now is None or before is None or before[1] < 100 or before[0] <= 0:
            continue
        if now < growth * before[0]:
            continue
        yield Hit(
            message=f"{rates.model}: {now:.1f} ms of compute per execution in the window, "
            f"{before[0]:.1f} ms on average over its {before[1]} executions before",
            fix="Look for GPU contention (nvidia-smi), throttling, or larger inputs.",
            model=rates.model,
            version=rates.version,
            evidence={"compute_ms_now": round(now, 3), "compute_ms_before": round(before[0], 3),
                      "executions_before": before[1]},
        )


@rule("TD614", "high-p99-latency", "warning", "p99 request latency above the threshold",
      scope="live", needs=("metrics",))
def high_p99_latency(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the 0.99 quantile of `nv_inference_request_summary_us` per model, which
    the server exposes with `--metrics-config=summary_latencies=true`; it fires above
    `p99-ms` (default 1000 ms). Without summaries nothing is judged.

    Why it matters: the slowest requests time out at clients and load balancers long before
    the average looks bad.

    Example: p99 2.4 s with a p50 of 40 ms → a queue backlog (TD611) or a few huge inputs.

    Fix: see TD611 for queueing; cap input sizes; give the model more instances.
    """
    limit = view.threshold("p99-ms")
    for (model, version), value_us in view.summary_quantile(
            "nv_inference_request_summary_us", 0.99).items():
        if value_us / 1000 <= limit:
            continue
        yield Hit(
            message=f"{model}: p99 request latency {value_us / 1000:.0f} ms (threshold "
            f"{limit:g} ms)",
            fix="Look for queueing (TD611) and for oversized requests; add instances.",
            model=model,
            version=version or None,
            evidence={"p99_ms": round(value_us / 1000, 1), "threshold_ms": limit},
        )
