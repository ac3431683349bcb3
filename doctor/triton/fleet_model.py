"""Replicas compared with their peers, from the fleet part of the Evidence.

Pure, like the rest of this package: each replica's rates come from the same arithmetic one
server's do (``LiveView.rates``), and the comparisons are against the median of the *other*
replicas serving the model, so that one sick replica among three cannot drag its own yardstick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING

from triton_doctor.evidence import CheckOptions, Evidence
from triton_doctor.records import record
from triton_doctor.triton.server_model import THRESHOLDS, LiveView, ModelRates

if TYPE_CHECKING:
    from triton_doctor.live_evidence import FleetEvidence, FleetReplica

#: What judges a replica's part in a model's traffic, by name: the figure and its unit.
OUTLIER_FIGURES: dict[str, tuple[str, Callable[[ModelRates], float | None]]] = {
    "latency": ("ms per request", lambda r: r.request_ns / r.requests / 1e6 if r.requests
                else None),
    "queue": ("ms queued per request", lambda r: r.queue_ms_per_request),
    "failures": ("of requests failed", lambda r: r.failure_share),
}
#: Fewer peers than this and there is no telling which replica is the odd one.
MIN_PEERS = 2


@record(frozen=True)
class Traffic:
    """One replica's traffic to one model (its versions together) over the window."""

    instance: str
    rates: ModelRates

    @property
    def requests(self) -> int:
        return self.rates.requests + self.rates.failures


@record(frozen=True)
class Outlying:
    """One figure on which a replica is far from its peers."""

    figure: str
    value: float
    peers_median: float
    peers: int
    #: The replica's requests to the model in the window.
    requests: int


class FleetView:
    """The fleet part of the Evidence, indexed for the fleet rules."""

    def __init__(self, fleet: FleetEvidence, options: CheckOptions) -> None:
        self.fleet = fleet
        self.options = options
        self._views: dict[str, LiveView] = {}

    def threshold(self, name: str) -> float:
        return self.options.thresholds.get(name, THRESHOLDS[name])

    def replica_evidence(self, replica: FleetReplica) -> Evidence:
        """One replica as the live rules read one server."""
        evidence = Evidence(server=replica.server, metrics=replica.metrics, gpu=replica.gpu,
                            options=self.options)
        if replica.server.from_metrics:
            evidence.unavailable["server_state"] = (
                "judged from Prometheus's series alone; --ask-replicas reads each replica's "
                "state from its API")
        if replica.gpu is None:
            evidence.unavailable["gpu"] = "the replica exports no nv_gpu_* series"
        return evidence

    def replica_view(self, replica: FleetReplica) -> LiveView:
        """The LiveView of one replica, made once: the engine's live rules and the fleet
        rules read the same rates."""
        found = self._views.get(replica.instance)
        if found is None:
            found = self._views[replica.instance] = LiveView(self.replica_evidence(replica))
        return found

    @cached_property
    def traffic(self) -> dict[str, list[Traffic]]:
        """Model -> each replica's traffic to it, its versions merged, in replica order."""
        found: dict[str, list[Traffic]] = {}
        for replica in self.fleet.replicas:
            per_model: dict[str, list[ModelRates]] = {}
            for rates in self.replica_view(replica).rates:
                per_model.setdefault(rates.model, []).append(rates)
            for model, versions in per_model.items():
                found.setdefault(model, []).append(Traffic(replica.instance, _merged(versions)))
        return found

    def busy(self, model: str) -> list[Traffic]:
        """The replicas with at least ``min-requests`` requests to ``model`` in the window."""
        least = self.threshold("min-requests")
        return [t for t in self.traffic.get(model, []) if t.requests >= least]

    def compared(self, model: str, figure: str) -> Iterator[tuple[Traffic, float, float, int]]:
        """(traffic, its figure, its peers' median, peers) for each busy replica with enough
        busy peers to compare against."""
        read = OUTLIER_FIGURES[figure][1]
        busy = [(t, read(t.rates)) for t in self.busy(model)]
        measured = [(t, value) for t, value in busy if value is not None]
        if len(measured) <= MIN_PEERS:
            return
        medians = peer_medians([value for _, value in measured])
        for (traffic, value), median in zip(measured, medians, strict=True):
            yield traffic, value, median, len(measured) - 1

    @cached_property
    def presence(self) -> dict[str, float]:
        """Instance -> the share of the window it was scraped in, against the most scrapes of
        its job's targets (1.0: all of it; less: it joined or left within the window)."""
        most: dict[str, int] = {}
        for target in self.fleet.targets:
            most[target.job] = max(most.get(target.job, 0), target.samples)
        return {t.instance: t.samples / most[t.job] if most[t.job] else 1.0
                for t in self.fleet.targets}

    @cached_property
    def outliers(self) -> dict[str, dict[str, list[Outlying]]]:
        """Model -> instance -> the figures on which that replica is far from its peers (TD901):
        at ``outlier-factor`` times the peers' median and, for times, at least ``queue-ms``
        above it; for failures, also above ``failure-rate``."""
        factor, floor = self.threshold("outlier-factor"), self.threshold("queue-ms")
        failing = self.threshold("failure-rate")
        found: dict[str, dict[str, list[Outlying]]] = {}
        for model in sorted(self.traffic):
            for figure in OUTLIER_FIGURES:
                for traffic, value, median, peers in self.compared(model, figure):
                    if value >= factor * median and (
                            value > failing if figure == "failures" else value - median >= floor):
                        found.setdefault(model, {}).setdefault(traffic.instance, []).append(
                            Outlying(figure, value, median, peers, traffic.requests))
        return found

    @cached_property
    def slow(self) -> frozenset[tuple[str, str]]:
        """(instance, model) of the replicas far slower than their peers (latency or queue):
        fewer requests reach a slow replica behind a load balancer that counts what is in
        flight, so its low share of the traffic is not a balancing fault."""
        return frozenset((instance, model)
                         for model, replicas in self.outliers.items()
                         for instance, figures in replicas.items()
                         if any(f.figure in ("latency", "queue") for f in figures))


def peer_medians(values: list[float]) -> list[float]:
    """For each value, the median of all the others: from one sort, so that a model served by
    200 replicas costs 200 lookups, not 200 medians of 199."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranked = [values[i] for i in order]
    count = len(ranked) - 1  # the peers of each

    def peer(position: int, k: int) -> float:
        """The k-th smallest of the ranked values without the one at ``position``."""
        return ranked[k] if k < position else ranked[k + 1]

    medians = [0.0] * len(values)
    for position, index in enumerate(order):
        middle = count // 2
        medians[index] = (peer(position, middle) if count % 2 else
                          (peer(position, middle - 1) + peer(position, middle)) / 2)
    return medians


def _merged(versions: list[ModelRates]) -> ModelRates:
    """One model's rates over all the versions a replica serves."""
    if len(versions) == 1:
        return versions[0]
    batches: dict[int, int] = {}
    for rates in versions:
        for size, count in rates.batch_executions.items():
            batches[size] = batches.get(size, 0) + count
    return ModelRates(
        model=versions[0].model, version="", window_s=versions[0].window_s,
        requests=sum(r.requests for r in versions), failures=sum(r.failures for r in versions),
        inferences=sum(r.inferences for r in versions),
        executions=sum(r.executions for r in versions),
        queue_ns=sum(r.queue_ns for r in versions),
        request_ns=sum(r.request_ns for r in versions),
        compute_ns=sum(r.compute_ns for r in versions), batch_executions=batches)
