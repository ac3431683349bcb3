"""TD9xx: replicas of tritonserver compared with each other through Prometheus (``--prometheus``).

Each replica is also judged alone by the live rules; these rules see what no single server
shows: the one replica out of line with its peers, versions or configs that differ across the
fleet, a GPU heading for full, replicas that stopped reporting, traffic spread unevenly.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.triton.fleet_model import OUTLIER_FIGURES, FleetView, peer_medians

#: GPU memory full sooner than this is an error: less time than it takes to roll a fix out.
GPU_FULL_ERROR_S = 600.0
#: Growth over the window, as a share of the GPU, below which a slope is noise.
GPU_GROWTH_SHARE = 0.01
#: The share of the window a replica must have been scraped in for its traffic to compare.
WHOLE_WINDOW = 0.9


@rule("TD901", "replica-outlier", "warning",
      "One replica is far slower or fails more than its peers", scope="fleet", needs=("fleet",))
def replica_outlier(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: per model, each replica's average request latency, queue time per request
    and failure share over the window against the median of its peers (the other replicas
    serving the model). It fires at `outlier-factor` (default 3) times that median, when the
    difference is at least `queue-ms` (default 10 ms) for times, or when the failure share is
    also above `failure-rate`; only replicas with `min-requests` (default 20) requests are
    compared, and only with at least 2 such peers.

    Why it matters: the load balancer keeps sending a share of the traffic to a sick replica (a
    throttled or shared GPU, a bad node, a stuck instance): its users see the tail latency and
    the errors while the fleet's averages look fine.

    Example: `resnet` at 240 ms per request on 10.0.3.7:8002 while its 5 peers take 31 ms →
    drain 10.0.3.7 and look at its GPU (`nvidia-smi`), its neighbours and its log.

    Fix: take the replica out of the pool (or restart it) and compare it with a healthy one:
    its GPU's clocks and other processes, its node, its server log, its model's config.
    """
    for model, replicas in view.outliers.items():
        for instance, figures in replicas.items():
            peers, requests = figures[0].peers, figures[0].requests
            shown = "; ".join(_compared(f.figure, f.value, f.peers_median) for f in figures)
            yield Hit(
                message=f"{model} on {instance}, against the median of its {peers} peers over "
                f"the window ({requests} requests): {shown}",
                fix=f"Drain {instance} (or restart it) and compare it with a peer: its GPU "
                "(clocks, other processes), node, server log and the model's config.",
                model=model, instance=instance,
                evidence={"peers": peers, "requests": requests,
                          **{f.figure: round(f.value, 4) for f in figures},
                          **{f"{f.figure}_peers_median": round(f.peers_median, 4)
                             for f in figures}},
            )


def _compared(figure: str, value: float, median: float) -> str:
    unit = OUTLIER_FIGURES[figure][0]
    times = f"{value / median:.1f}x" if median else "none on its peers"
    if figure == "failures":
        return f"{value:.1%} {unit} against {median:.1%} ({times})"
    return f"{value:.1f} {unit} against {median:.1f} ({times})"


@rule("TD902", "version-skew", "warning", "Replicas serve different versions of a model",
      scope="fleet", needs=("fleet",))
def version_skew(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: the versions of each model every replica serves now (those with series at
    the window's end), against the versions most replicas serve. Each replica that differs
    is a finding; with no majority, the replicas that serve the newest versions are the
    reference.

    Why it matters: the same request gets different answers depending on the replica the load
    balancer picks: a half-finished rollout, a replica that did not pick up the new model, a
    `version_policy` that resolves differently on different copies of the repository.

    Example: `ranker` version 3 on 5 replicas and version 2 on 10.0.3.7:8002 → that replica's
    repository (or its model store sync) is stale.

    Fix: finish or roll back the rollout so that every replica has the same model repository;
    check the replica's repository sync and its `version_policy`.
    """
    models: dict[str, dict[str, tuple[str, ...]]] = {}
    for replica in view.fleet.replicas:
        for model, versions in replica.versions.items():
            models.setdefault(model, {})[replica.instance] = tuple(versions)
    for model in sorted(models):
        served = models[model]
        if len(set(served.values())) < 2:
            continue
        counts = Counter(served.values())
        reference = max(counts, key=lambda v: (counts[v], _newest(v)))
        for instance, versions in sorted(served.items()):
            if versions == reference:
                continue
            yield Hit(
                message=f"{model} on {instance}: version {', '.join(versions)}, where "
                f"{counts[reference]} of {len(served)} replicas serve {', '.join(reference)}",
                fix=f"Give {instance} the same model repository as its peers (its sync from the "
                "model store, its version_policy), or finish the rollout.",
                model=model, instance=instance,
                evidence={"versions": list(versions), "majority_versions": list(reference),
                          "replicas": len(served)},
            )


def _newest(versions: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(sorted((int(v) for v in versions if v.isdigit()), reverse=True))


@rule("TD903", "gpu-memory-filling", "warning", "A replica's GPU memory will be full soon",
      scope="fleet", needs=("fleet",))
def gpu_memory_filling(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: each replica's GPUs: memory used, the total, and how fast used memory grew
    in each half of the window (`deriv` of `nv_gpu_memory_used_bytes`). It fires when memory
    grew in both halves (a trend, not one model loaded), at least 1% of the GPU over the
    window, and at the slower half's rate the GPU is full within `gpu-full-within-s` (default
    3600 s); an error under 10 minutes.

    Why it matters: the next allocation past the total fails: a model load, a bigger batch or a
    TensorRT workspace ends in CUDA out-of-memory, usually at peak traffic. A steady climb is a
    leak (a Python model holding tensors, a growing cache) or models loaded one by one.

    Example: 61.2 of 80 GB used, growing 9.1 MB/s → full in 35 minutes.

    Fix: find what grows (`nvidia-smi` per process, the model loads in the server log), restart
    or drain the replica before it is full, and fix the leak or give the models more room.
    """
    horizon = view.threshold("gpu-full-within-s")
    for replica in view.fleet.replicas:
        for device in replica.gpu.devices if replica.gpu else []:
            slope = min(replica.gpu_memory_slope.get(device.uuid, [0.0]))
            total, used = device.memory_total_bytes, device.memory_used_bytes
            earlier = device.memory_used_earlier_bytes
            if slope <= 0 or total <= 0 or earlier is None:
                continue
            if used - earlier < GPU_GROWTH_SHARE * total:
                continue
            left_s = max(0.0, total - used) / slope
            if left_s > horizon:
                continue
            yield Hit(
                message=f"GPU {device.uuid or device.index} on {replica.instance}: "
                f"{used / 1e9:.1f} of {total / 1e9:.1f} GB used, growing "
                f"{slope / 1e6:.1f} MB/s: full in {_duration(left_s)}",
                fix=f"Find what grows on {replica.instance} (nvidia-smi per process, model loads "
                "in its log); drain or restart it before it is full, then fix the leak.",
                instance=replica.instance,
                severity=Severity.ERROR if left_s <= GPU_FULL_ERROR_S else None,
                evidence={"gpu_uuid": device.uuid, "memory_used_bytes": used,
                          "memory_total_bytes": total, "growth_bytes_per_s": round(slope, 1),
                          "seconds_to_full": round(left_s)},
            )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


@rule("TD904", "replica-down", "error", "A replica is down or stopped reporting",
      scope="fleet", needs=("fleet",))
def replica_down(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: every tritonserver Prometheus scraped in the window. One whose last scrape
    failed (`up` is 0) is an error, with the scrape's error where the targets API gives it; one
    that reported in the window and has no `up` now (its target is gone: replaced in a rollout,
    scaled down, or lost) is info.

    Why it matters: a replica Prometheus cannot scrape is usually one clients cannot reach
    either: crashed, hung, restarting, or its node lost. Its metrics stop, so every other rule
    goes quiet about it exactly when it matters.

    Example: `up{instance="10.0.3.7:8002"} == 0`, last error "connection refused" → the
    server on that node is down.

    Fix: look at the replica's process, container or pod (a crash loop, OOM kill), its log and
    its node; a replica removed on purpose (scaled down) drops out after the window.
    """
    for target in view.fleet.targets:
        if target.up is None:
            yield Hit(
                message=f"{target.instance} (job {target.job or 'unknown'}) reported in the "
                f"last {view.fleet.window_s:.0f} s and no longer does: its target is gone",
                fix="If it was scaled down or replaced on purpose, nothing to do; else look for "
                "the pod or process and why it went away.",
                instance=target.instance, severity=Severity.INFO,
                evidence={"job": target.job, "up": None},
            )
        elif not target.up:
            why = f": {target.last_error}" if target.last_error else ""
            yield Hit(
                message=f"Prometheus cannot scrape {target.instance} (job "
                f"{target.job or 'unknown'}){why}",
                fix=f"Look at the server behind {target.instance}: its process, container or pod "
                "(crash loop, OOM kill), its log, and its node.",
                instance=target.instance,
                evidence={"job": target.job, "up": 0, "last_error": target.last_error,
                          "scrape_url": target.scrape_url},
            )


@rule("TD905", "load-imbalance", "warning", "Traffic is spread unevenly across replicas",
      scope="fleet", needs=("fleet",))
def load_imbalance(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: per model served by at least 3 replicas with on average `min-requests`
    (default 20) requests each in the window, each replica's request rate against the median
    of its peers: it fires at `imbalance-factor` (default 2) times more, or that many times
    less. Left out: a replica far slower than its peers (TD901's latency or queue), since a
    load balancer that counts requests in flight sends it less, as it should; and one scraped
    for less than 90% of the window (it joined or left within it: a rollout).

    Why it matters: the busiest replica queues and sets the fleet's tail latency while others
    idle; a replica with almost no traffic is often missing from the load balancer's pool
    (a failing readiness probe, a stale endpoint list) or pinned by sticky sessions.

    Example: `bert` at 410 requests/s on 10.0.3.7:8002, 95 requests/s on its 3 peers → HTTP
    keep-alive connections pinned to one replica by an L4 balancer.

    Fix: check the load balancer's pool and policy (round robin or least requests, not
    connection-level L4 with long-lived clients), readiness probes, and client-side balancing.
    """
    factor = view.threshold("imbalance-factor")
    least = view.threshold("min-requests")
    for model in sorted(view.traffic):
        serving = view.traffic[model]
        if len(serving) < 3 or sum(t.requests for t in serving) < least * len(serving):
            continue
        rates = [t.requests / t.rates.window_s for t in serving]
        for traffic, rate, median in zip(serving, rates, peer_medians(rates), strict=True):
            if (traffic.instance, model) in view.slow or view.presence.get(
                    traffic.instance, 1.0) < WHOLE_WINDOW:
                continue
            if median <= 0 or median / factor < rate < median * factor:
                continue
            more = rate >= median * factor
            yield Hit(
                message=f"{model} on {traffic.instance}: {rate:.1f} requests/s against "
                f"{median:.1f} on the median of its {len(serving) - 1} peers ("
                + (f"{rate / median:.1f}x more)" if more else
                   f"{median / rate:.1f}x less)" if rate else "none at all)"),
                fix="Check the load balancer's pool and policy for this replica (readiness, "
                "endpoints, sticky or connection-level balancing).",
                model=model, instance=traffic.instance,
                evidence={"requests_per_s": round(rate, 3), "peers_median": round(median, 3),
                          "peers": len(serving) - 1},
            )


@rule("TD906", "config-drift", "warning", "Replicas run different configs of one model",
      scope="fleet", needs=("fleet",))
def config_drift(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: with `--ask-replicas`, the config each replica's API says it runs for each
    READY model (`GET /v2/models/<name>/config`), against the config most replicas run. Each
    replica that differs is a finding naming the fields that differ.

    Why it matters: replicas built from different copies of a repository behave differently
    under the same load (instance counts, batching, a backend parameter), so one replica
    queues or fails where the others do not, and the cause hides in a file nobody compares.

    Example: `max_queue_delay_microseconds: 100` on 5 replicas and `5000` on one → its latency
    is 5 ms higher at low load.

    Fix: deploy every replica from the same model repository; look at how the odd one's copy
    is synced or templated.
    """
    configs: dict[str, dict[str, dict[str, Any]]] = {}
    for replica in view.fleet.replicas:
        server = replica.server
        if server.from_metrics:
            continue
        for model in server.models:
            if model.state == "READY" and model.config:
                configs.setdefault(model.name, {})[replica.instance] = model.config
    for model in sorted(configs):
        served = configs[model]
        texts = {instance: json.dumps(config, sort_keys=True)
                 for instance, config in served.items()}
        counts = Counter(texts.values())
        if len(counts) < 2:
            continue
        reference_text = max(counts, key=lambda text: (counts[text], text))
        reference = json.loads(reference_text)
        for instance in sorted(served):
            if texts[instance] == reference_text:
                continue
            config = served[instance]
            fields = sorted(key for key in set(config) | set(reference)
                            if config.get(key) != reference.get(key))
            yield Hit(
                message=f"{model} on {instance} runs another config than "
                f"{counts[reference_text]} of {len(served)} replicas: {', '.join(fields)} differ",
                fix=f"Deploy {instance} from the same model repository as its peers.",
                model=model, instance=instance,
                evidence={"fields": fields, "replicas": len(served)},
            )


@rule("TD907", "prometheus-partial-answer", "warning",
      "Prometheus answered part of what was asked", scope="fleet", needs=("fleet",))
def prometheus_partial_answer(view: FleetView) -> Iterator[Hit]:
    """
    What it checks: every query triton-doctor made answered, without warnings. A query that
    failed (a timeout, an error of the engine), a replica's API that did not answer or was not
    asked (`--ask-replicas` reads at most 500), and each warning the engine attached (Thanos
    and Mimir say so when a store did not answer: a partial response) are findings. Replicas
    Prometheus holds nothing of at the window's start (new ones, or a Prometheus younger than
    the window) are said once, as info.

    Why it matters: the rules judged less than the fleet: a replica or a family of series may
    be missing, so "no finding" does not mean healthy. When queries failed and no replica
    could be judged at all, it is an error: the run judged nothing.

    Example: `Prometheus query "increase": timeout: query timed out in expression evaluation`
    → raise --timeout or narrow --selector.

    Fix: raise `--timeout`, narrow `--selector` or `--window`, or look at the engine's health
    (its stores, for Thanos; its queriers, for Mimir).
    """
    fleet = view.fleet
    judged_none = not any(r.server.samples and r.server.samples[-1].stats
                          for r in fleet.replicas)
    for what, why in sorted(fleet.errors.items()):
        yield Hit(message=f"Prometheus at {fleet.url}: {what}: {why}"
                  + ("; no replica could be judged" if judged_none else ""),
                  severity=Severity.ERROR if judged_none else None,
                  fix="A query that timed out: raise --timeout. One the engine refused for its "
                  "size (too many samples): narrow --selector or shorten --window.",
                  evidence={"query": what})
    for instance, why in sorted(fleet.replica_errors.items()):
        yield Hit(message=f"{instance}: its API was not read ({why}); judged from its series "
                  "alone", fix="Check that --replica-url makes each replica's HTTP address (its "
                  "port 8000) and that this machine can reach the replicas.",
                  instance=instance, evidence={"replica_api": instance})
    if fleet.unasked:
        asked = len(fleet.replicas) - fleet.unasked
        yield Hit(message=f"the APIs of {fleet.unasked} replicas were not read: --ask-replicas "
                  f"reads at most the first {asked}", fix="Narrow --selector to ask them all.",
                  evidence={"unasked": fleet.unasked})
    late = [r.instance for r in fleet.replicas if not r.seen_at_start]
    if late:
        yield Hit(message=f"Prometheus holds no sample of {len(late)} of "
                  f"{len(fleet.replicas)} replicas from the window's start "
                  f"({', '.join(late[:5])}{', ...' if len(late) > 5 else ''}): they joined "
                  "within the window, or Prometheus is younger than it, so what compares with "
                  "the start (TD615, TD903) did not judge them",
                  fix="Give a --window that Prometheus holds (less than its age), or run again "
                  "once the replicas have served a whole window.", severity=Severity.INFO,
                  evidence={"replicas_without_start": len(late)})
    for warning in fleet.warnings:
        yield Hit(message=f"Prometheus at {fleet.url} warns: {warning}",
                  fix="The answer is partial: look at the engine's stores (Thanos) or queriers "
                  "(Mimir), then run again.", evidence={"warning": warning})
