"""What a running server is doing, derived from two samples of its Evidence a window apart.

Rules about serving health need rates, not counters: requests per second, the average batch,
queue time per request. Everything here is pure arithmetic on the Evidence (no clock, no I/O),
so a saved snapshot is judged exactly as it was live.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from triton_doctor.evidence import Evidence
from triton_doctor.records import record
from triton_doctor.triton.metrics_model import MetricsView

if TYPE_CHECKING:
    from triton_doctor.live_evidence import (
        MetricsScrape,
        ModelStats,
        ServerEvidence,
        ServerModel,
        ServerSample,
    )

NS_PER_MS = 1_000_000
#: The gauge of requests waiting for an instance: up when a request is enqueued, down when a
#: backend is about to execute it (so the ones executing are not in it).
PENDING = "nv_inference_pending_request_count"
#: The ``reason`` label of nv_inference_request_failure (since 24.07).
FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")

#: Defaults of the live rules' thresholds; settings ``[thresholds]`` override them by name.
THRESHOLDS: dict[str, float] = {
    # Fewer requests than this in the window: too little traffic to judge rates alone.
    "min-requests": 20,
    # Queue backlog: queue time per request at least this, and at least this share of it;
    # an error from this queue time per request on.
    "queue-ms": 10.0,
    "queue-share": 0.5,
    "queue-error-ms": 1000.0,
    # Batching: average batch below this share of max_batch_size.
    "batch-efficiency": 0.25,
    # Failed requests above this share; this many failed are judged however few the requests.
    "failure-rate": 0.01,
    "min-failures": 5,
    # Compute time per execution in the window above this multiple of its average before.
    "compute-growth": 1.5,
    # p99 request latency above this (from summaries, when the server exposes them).
    "p99-ms": 1000.0,
    # GPU memory used, and /dev/shm used, above these shares of the total.
    "gpu-memory": 0.9,
    "dev-shm": 0.9,
    # Fleets: a replica this many times its peers' median is an outlier; a request rate this
    # many times (or this fraction of) its peers' median is imbalance; GPU memory full within
    # this many seconds at the window's rate.
    "outlier-factor": 3.0,
    "imbalance-factor": 2.0,
    "gpu-full-within-s": 3600.0,
}
#: GPU memory used from this share of the total is an error (TD701 and its alert): the next
#: allocation fails, whatever ``gpu-memory`` warns at.
GPU_MEMORY_ERROR_SHARE = 0.97
#: The thresholds that are shares of a whole, so 0 to 1 (the others are counts, times, ratios).
SHARES = frozenset({"queue-share", "batch-efficiency", "failure-rate", "gpu-memory", "dev-shm"})


@record(frozen=True)
class ModelRates:
    """One model version's traffic over the window."""

    model: str
    version: str
    window_s: float
    requests: int
    failures: int
    inferences: int
    executions: int
    queue_ns: int
    request_ns: int
    compute_ns: int
    #: Executions per batch size over the window.
    batch_executions: dict[int, int]

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.window_s if self.window_s > 0 else 0.0

    @property
    def average_batch(self) -> float | None:
        """From the batch statistics when the server gives them: the inference count leaves
        out failed requests while the execution count keeps them (2.51), so their quotient
        can fall below 1."""
        if self.batch_executions:
            executions = sum(self.batch_executions.values())
            return sum(size * count for size, count in self.batch_executions.items()) / executions
        return self.inferences / self.executions if self.executions else None

    @property
    def queue_ms_per_request(self) -> float | None:
        return self.queue_ns / self.requests / NS_PER_MS if self.requests else None

    @property
    def queue_share(self) -> float | None:
        """Share of the request time spent waiting in the queue."""
        return self.queue_ns / self.request_ns if self.request_ns else None

    @property
    def compute_ms_per_execution(self) -> float | None:
        return self.compute_ns / self.executions / NS_PER_MS if self.executions else None

    @property
    def failure_share(self) -> float | None:
        total = self.requests + self.failures
        return self.failures / total if total else None


def _rates(before: ModelStats, after: ModelStats, window_s: float) -> ModelRates | None:
    """The difference of two cumulative counters; None when they went back (a reload)."""
    fields = ("success_count", "fail_count", "inference_count", "execution_count", "queue_ns",
              "success_ns", "compute_input_ns", "compute_infer_ns", "compute_output_ns")
    deltas = {name: getattr(after, name) - getattr(before, name) for name in fields}
    if any(value < 0 for value in deltas.values()):
        return None
    batches = {
        int(size): count - before.batch_executions.get(size, 0)
        for size, count in after.batch_executions.items()
        if count - before.batch_executions.get(size, 0) > 0
    }
    return ModelRates(
        model=after.name, version=after.version, window_s=window_s,
        requests=deltas["success_count"], failures=deltas["fail_count"],
        inferences=deltas["inference_count"], executions=deltas["execution_count"],
        queue_ns=deltas["queue_ns"], request_ns=deltas["success_ns"],
        compute_ns=deltas["compute_input_ns"] + deltas["compute_infer_ns"]
        + deltas["compute_output_ns"],
        batch_executions=batches,
    )


def _per_model(scrape: MetricsScrape, name: str) -> dict[tuple[str, str], float]:
    """The samples named ``name`` summed by (model, version)."""
    found: dict[tuple[str, str], float] = {}
    for sample in scrape.samples:
        if sample.name == name and "model" in sample.labels:
            key = sample.labels["model"], sample.labels.get("version", "")
            found[key] = found.get(key, 0.0) + sample.value
    return found


class LiveView:
    """The live parts of the Evidence, indexed for the rules."""

    def __init__(self, evidence: Evidence) -> None:
        self.evidence = evidence
        self.server = evidence.server
        self.metrics = evidence.metrics
        self.gpu = evidence.gpu
        self.container = evidence.container
        self.host = evidence.host
        self.log = evidence.log
        self.options = evidence.options

    def threshold(self, name: str) -> float:
        return self.options.thresholds.get(name, THRESHOLDS[name])

    @property
    def server_state(self) -> ServerEvidence | None:
        """The server as its own API describes it (live, ready, models, errors); None for a
        replica judged from Prometheus's series alone, whose state nobody asked."""
        return None if self.server is None or self.server.from_metrics else self.server

    @cached_property
    def models(self) -> dict[str, ServerModel]:
        return {model.name: model for model in (self.server.models if self.server else [])}

    def config(self, model: str) -> dict[str, Any]:
        """The config the server runs for ``model`` (JSON), or {} when unknown."""
        found = self.models.get(model)
        return found.config or {} if found else {}

    def instances(self, model: str) -> int:
        """Instances the server runs of ``model`` (its groups' counts; at least 1)."""
        groups = self.config(model).get("instance_group", [])
        return sum(int(group.get("count", 1) or 1) for group in groups) or 1

    def gpu_instance_footprints(self) -> list[tuple[str, int]]:
        """(model, GPU bytes per instance) from the server's latest statistics."""
        samples = self.server.samples if self.server else []
        if not samples:
            return []
        return [
            (stats.name, stats.memory_bytes["GPU"] // self.instances(stats.name))
            for stats in samples[-1].stats if stats.memory_bytes.get("GPU")
        ]

    @cached_property
    def window(self) -> tuple[ServerSample, ServerSample] | None:
        """The first and last server samples, when there are two."""
        samples = self.server.samples if self.server else []
        return (samples[0], samples[-1]) if len(samples) >= 2 else None

    def earlier_compute_ms(self, model: str, version: str) -> tuple[float, int] | None:
        """(compute ms per execution, executions) from load until the window began."""
        if self.window is None:
            return None
        for stats in self.window[0].stats:
            if (stats.name, stats.version) == (model, version) and stats.execution_count:
                total = stats.compute_input_ns + stats.compute_infer_ns + stats.compute_output_ns
                return total / stats.execution_count / NS_PER_MS, stats.execution_count
        return None

    @cached_property
    def rates(self) -> list[ModelRates]:
        if self.window is None:
            return []
        from triton_doctor.live_evidence import ModelStats  # a server's samples loaded it

        first, last = self.window
        seconds = last.at - first.at
        before = {(s.name, s.version): s for s in first.stats}
        found = []
        for stats in last.stats:
            earlier = before.get((stats.name, stats.version), ModelStats(stats.name, stats.version))
            rates = _rates(earlier, stats, seconds)
            if rates is not None:
                found.append(rates)
        return found

    @cached_property
    def metrics_view(self) -> MetricsView | None:
        return MetricsView(self.metrics) if self.metrics else None

    @cached_property
    def _pending(self) -> dict[tuple[str, str], tuple[float | None, float]]:
        scrapes = self.metrics.scrapes if self.metrics else []
        if not scrapes:
            return {}
        last = _per_model(scrapes[-1], PENDING)
        if len(scrapes) < 2:
            return {key: (None, value) for key, value in last.items()}
        first = _per_model(scrapes[0], PENDING)
        return {key: (first.get(key, 0.0), value) for key, value in last.items()}

    def pending(self, model: str, version: str) -> tuple[float | None, float] | None:
        """Requests waiting for an instance at the window's start (None with one metrics
        scrape) and at its end; None without the gauge. A model absent from the first scrape
        (loaded since) had none waiting."""
        return self._pending.get((model, version))

    def failure_reasons(self, model: str) -> dict[str, float]:
        """Failed requests of ``model`` over the metrics window, by the server's reason label."""
        view = self.metrics_view
        if view is None:
            return {}
        found = {}
        for reason in FAILURE_REASONS:
            count = view.delta("nv_inference_request_failure", model=model, reason=reason)
            if count:
                found[reason] = count
        return found

    def summary_quantile(self, name: str, quantile: float) -> dict[tuple[str, str], float]:
        """A summary's quantile per (model, version), from the last scrape."""
        view = self.metrics_view
        if view is None:
            return {}
        found = {}
        for model, version in view.per_model(name):
            value = view.quantile(name, model, quantile, version)
            if value is not None:
                found[(model, version)] = value
        return found
