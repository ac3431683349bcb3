"""Collect a fleet of tritonservers from the series a Prometheus holds of them.

A handful of aggregated queries, whatever the replica count, each evaluated at one moment over
the window ending there (no waiting): per replica (the ``instance`` label) and model version,
every counter's value when the window began and its ``increase()`` over it (which sees through
restarts), the gauges at both ends, the GPUs, the versions served, and which replicas are up.
Each replica's figures are laid out as its own endpoints give them (two statistics samples,
two metrics scrapes, NVML-like GPUs), so that the live rules judge it as they judge one server.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from triton_doctor.checks.prometheus import PrometheusApi, QueryFailed, Vector
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import (
    FleetEvidence,
    FleetReplica,
    FleetTarget,
    GpuDevice,
    GpuEvidence,
    MetricSample,
    MetricsEvidence,
    MetricsScrape,
    ModelStats,
    ServerEvidence,
    ServerSample,
)
from triton_doctor.records import field, record

#: The counters of a model's statistics as Triton's metrics name them, and the ModelStats field
#: each fills (durations are microseconds there, nanoseconds here).
COUNTERS = {
    "nv_inference_request_success": "success_count",
    "nv_inference_request_failure": "fail_count",
    "nv_inference_count": "inference_count",
    "nv_inference_exec_count": "execution_count",
    "nv_inference_request_duration_us": "success_ns",
    "nv_inference_queue_duration_us": "queue_ns",
    "compute": "compute_infer_ns",
}
FAILURES = "nv_inference_request_failure"
#: The counters also laid out as metrics samples: failures by reason (TD613 names them), and
#: requests, so that the replica's metrics hold its per-model families as its page does.
SCRAPED = (FAILURES, "nv_inference_request_success")
#: The counters read in two queries of about the same size, which Prometheus evaluates at
#: once on two cores.
COUNTS = ("nv_inference_request_success", FAILURES, "nv_inference_count",
          "nv_inference_exec_count")
DURATIONS = ("nv_inference_request_duration_us", "nv_inference_queue_duration_us", "compute")
#: The three compute durations, read as one sum (the rules read only their total: ModelStats'
#: compute_infer_ns holds it, its input and output parts stay 0).
COMPUTE = ("nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
           "nv_inference_compute_output_duration_us")
#: What the rules read of the window's start beyond the increase over it: compute time per
#: execution before the window (TD615). The others start at 0: only their increase counts.
STARTING = ("nv_inference_exec_count", "compute")
PENDING = "nv_inference_pending_request_count"
P99 = 'quantile="0.99"'
SUMMARY = "nv_inference_request_summary_us"
GPU_USED, GPU_TOTAL, GPU_UTILIZATION = ("nv_gpu_memory_used_bytes", "nv_gpu_memory_total_bytes",
                                        "nv_gpu_utilization")
#: The label naming which family a row of a joined query is (``label_replace`` adds it).
FAMILY = "td_family"
MODEL_LABELS = "instance, model, version"
GPU_LABELS = "instance, gpu_uuid"
#: The most series of one family a selector may match before anything is loaded: past it the
#: answers run to hundreds of megabytes (a selector matching several clusters' every job).
MAX_SERIES = 50_000
#: Replicas' own APIs read at once with --ask-replicas.
ASK_AT_ONCE = 8
#: The most replicas whose API --ask-replicas reads.
MAX_ASKED = 500


#: What each query reads, in words, for a report of one that failed.
READS = {
    "up": "the replicas up now (up)",
    "seen": "the replicas seen in the window (count_over_time(up))",
    "triton": "which targets are tritonservers",
    "counts": "request counts over the window (increase)",
    "durations": "request durations over the window (increase)",
    "start": "the counters at the window's start (offset)",
    "end": "the gauges and versions at the window's end",
    "slope": "GPU memory growth (deriv)",
}


class SelectorRefused(ValueError):
    """The selector cannot be used: Prometheus does not parse it, or it matches too much."""


@record(frozen=True)
class FleetRequest:
    url: str
    selector: str = ""
    window_s: float = 900.0
    timeout_s: float = 5.0
    headers: tuple[tuple[str, str], ...] = ()
    #: Read each replica's own HTTP API too, at the URL this template makes of its target.
    ask_replicas: bool = False
    replica_url: str = "{scheme}://{host}:8000"
    #: Where ``at`` comes from (tests fix it).
    clock: Callable[[], float] = field(default=time.time, compare=False)


#: One label matcher: a label name, an operator and a quoted value (PromQL's three quotes).
_MATCHER = re.compile(r"""\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"""
                      r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)\s*(,|$)""")


def matchers(selector: str) -> str:
    """The label matchers of ``selector`` (``{job="triton"}``, the braces optional), written
    again from what was parsed, each value quoted anew: nothing of the user's text but names,
    operators and values reaches a query (a comment or a second selector cannot).
    SelectorRefused for what is not a list of label matchers."""
    inner = selector.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    found, at = [], 0
    while inner[at:].strip():
        match = _MATCHER.match(inner, at)
        if match is None:
            raise SelectorRefused(f"--selector {selector!r} is not label matchers such as "
                                  '{job="triton"} or {job="triton",namespace=~"prod-.*"}')
        name, operator, quoted = match.group(1, 2, 3)
        found.append(f"{name}{operator}{json.dumps(_unquoted(quoted))}")
        at = match.end()
    return ",".join(found)


def _unquoted(quoted: str) -> str:
    """A PromQL string's value: backticks raw, quotes with Go's escapes (read as JSON's,
    which they are but for ``\\'`` and ``\\x``)."""
    if quoted[0] == "`":
        return quoted[1:-1]
    body = quoted[1:-1].replace("\\'", "'")
    try:
        return str(json.loads(f'"{body}"'))
    except ValueError:
        raise SelectorRefused(f"--selector: {quoted} has an escape PromQL and triton-doctor "
                              "do not share; write the character itself") from None


def collect_fleet(request: FleetRequest) -> FleetEvidence:
    """The fleet as Prometheus holds it now. Raises SourceUnavailable when the engine cannot
    be reached or answers nothing the API would, SelectorRefused for a selector it refuses or
    one that matches too many series; a later query that fails is recorded in ``errors``."""
    api = PrometheusApi(request.url, request.timeout_s, dict(request.headers))
    inner = matchers(request.selector)
    window_s = round(request.window_s)
    queries = _Queries(inner, window_s)
    fleet = FleetEvidence(url=api.shown, selector=inner, window_s=window_s,
                          at=round(request.clock(), 3))
    _guard(api, queries, fleet.at)
    asked = {
        "up": queries.up(), "seen": queries.seen(), "triton": queries.triton(),
        "counts": queries.increase(COUNTS), "durations": queries.increase(DURATIONS),
        "start": queries.start(), "end": queries.end(), "slope": queries.slope(),
    }
    # Every query at once: the whole read takes one --timeout after the first.
    with ThreadPoolExecutor(max_workers=len(asked) + 1, thread_name_prefix="prometheus") as pool:
        targets = pool.submit(api.targets)
        answers = {name: pool.submit(_ask, api, expr, fleet.at) for name, expr in asked.items()}
        vectors: dict[str, Vector] = {}
        for name, future in answers.items():
            outcome = future.result()
            if isinstance(outcome, str):
                fleet.errors[f"the query of {READS[name]}"] = outcome
            else:
                vectors[name] = outcome
                fleet.warnings += [w for w in outcome.warnings if w not in fleet.warnings]
        listed = targets.result()
    empty = Vector()
    triton = {labels.get("instance", "") for labels, _ in vectors.get("triton", empty).series}
    fleet.targets = _targets(vectors.get("up", empty), vectors.get("seen", empty), listed,
                             triton if "triton" in vectors else None)
    fleet.replicas = _replicas(fleet, vectors)
    if request.ask_replicas:
        _ask_replicas(fleet, request)
    return fleet


def _guard(api: PrometheusApi, queries: _Queries, at: float) -> None:
    """The first query: does the engine answer, take the selector, and match a number of
    series that can be loaded?"""
    try:
        vector = api.query(queries.count(), at)
    except QueryFailed as error:
        if str(error).startswith("bad_data"):
            raise SelectorRefused(f"Prometheus at {api.shown} refused the query for "
                                  f"--selector {queries.selector!r}: {error}") from None
        raise SourceUnavailable(f"Prometheus at {api.shown} answered, but not with data: "
                                f"{error}") from None
    count = max((value for _, value in vector.series if math.isfinite(value)), default=0.0)
    if not count:
        raise SelectorRefused(
            f"Prometheus at {api.shown} holds no series of tritonserver for the selector "
            f"{{{queries.selector}}} (no nv_inference_count nor nv_cpu_utilization): check "
            "--selector, and that Prometheus scrapes the servers' metrics port (8002)")
    if count > MAX_SERIES:
        raise SelectorRefused(
            f"the selector {{{queries.selector}}} matches {count:,.0f} series of one Triton "
            f"family at {api.shown} (the most loaded is {MAX_SERIES:,}): narrow it with "
            'label matchers, e.g. --selector \'{job="triton",namespace="prod"}\'')


def _ask(api: PrometheusApi, expr: str, at: float) -> Vector | str:
    """The answer, or why there is none (SourceUnavailable cannot come after the guard)."""
    try:
        return api.query(expr, at)
    except (QueryFailed, SourceUnavailable) as error:
        return str(error)


class _Queries:
    """The PromQL of each read, for one selector and window."""

    def __init__(self, selector: str, window_s: int) -> None:
        self.selector = selector
        self.window = f"{window_s}s"
        #: Half the window, for a trend that must hold in both halves.
        self.half = f"{max(1, window_s // 2)}s"

    def of(self, name: str, extra: str = "") -> str:
        matched = ",".join(part for part in (self.selector, extra) if part)
        return f"{name}{{{matched}}}"

    def count(self) -> str:
        return (f"count({self.of('nv_inference_count')}) or "
                f"count({self.of('nv_cpu_utilization')})")

    def up(self) -> str:
        return self.of("up")

    def seen(self) -> str:
        """Scrapes in the window per target: who reported, and for how much of it."""
        return f"max by (instance, job) (count_over_time({self.of('up')}[{self.window}]))"

    def triton(self) -> str:
        """The instances that are tritonservers: those with its series in the window (a
        selector may match other targets: node exporters, sidecars)."""
        return " or ".join(f"count by (instance) (last_over_time({self.of(name)}[{self.window}]))"
                           for name in ("nv_cpu_utilization", "nv_inference_exec_count"))

    def increase(self, names: tuple[str, ...]) -> str:
        """Failures only where there were some, by reason (four series a model otherwise)."""
        return _joined(
            (name, f"sum by ({MODEL_LABELS}, reason) "
                   f"(increase({self.of(FAILURES)}[{self.window}])) > 0" if name == FAILURES
             else self.summed(name, f"increase({{}}[{self.window}])"))
            for name in names)

    def start(self) -> str:
        rows = [(name, self.summed(name, f"{{}} offset {self.window}")) for name in STARTING]
        rows.append((PENDING, f"sum by ({MODEL_LABELS}) ({self.of(PENDING)} offset "
                              f"{self.window}) > 0"))
        rows.append((GPU_USED, f"max by ({GPU_LABELS}) ({self.of(GPU_USED)} offset "
                               f"{self.window})"))
        rows.append(("up", f"max by (instance) ({self.of('up')} offset {self.window})"))
        return _joined(rows)

    def summed(self, name: str, form: str) -> str:
        """``form`` (``{}`` for the series) summed per model version; for "compute", the sum
        of its three families."""
        parts = COMPUTE if name == "compute" else (name,)
        return " + ".join(f"sum by ({MODEL_LABELS}) ({form.format(self.of(part))})"
                          for part in parts)

    def end(self) -> str:
        rows = [(PENDING, f"sum by ({MODEL_LABELS}) ({self.of(PENDING)}) > 0"),
                ("loaded", f"count by ({MODEL_LABELS}) ({self.of('nv_inference_count')})"),
                (SUMMARY, f"max by ({MODEL_LABELS}) ({self.of(SUMMARY, P99)})")]
        rows += [(name, f"max by ({GPU_LABELS}) ({self.of(name)})")
                 for name in (GPU_USED, GPU_TOTAL, GPU_UTILIZATION)]
        return _joined(rows)

    def slope(self) -> str:
        """The growth of GPU memory used in each half of the window: a trend grows in both,
        a step (a model loaded) in one."""
        used = self.of(GPU_USED)
        return _joined((half, f"max by ({GPU_LABELS}) (deriv({used}[{self.half}]{offset}))")
                       for half, offset in (("first", f" offset {self.half}"), ("second", "")))


def _joined(rows: Iterable[tuple[str, str]]) -> str:
    """One query answering several: each row's series labelled with its family."""
    return " or ".join(f'label_replace({expr}, "{FAMILY}", "{name}", "", "")'
                       for name, expr in rows)


def _targets(up: Vector, seen: Vector, listed: list[dict[str, object]] | None,
             triton: set[str] | None) -> list[FleetTarget]:
    """Every tritonserver that reported in the window: up now (1 or 0), or silent since; with
    its scrapes in the window. A tritonserver is an instance with Triton's series in the
    window (``triton``; None: unknown, every target is), or a target of a job that has such
    instances (a replica down since before the window has none); other targets the selector
    matches (node exporters, sidecars) are left out."""
    rows = [(labels, value, None) for labels, value in seen.series] + [
        (labels, None, value) for labels, value in up.series]
    jobs = {labels.get("job", "") for labels, _, _ in rows
            if triton is None or labels.get("instance", "") in triton}
    found: dict[str, FleetTarget] = {}
    for labels, samples, now in rows:
        instance, job = labels.get("instance", ""), labels.get("job", "")
        if job not in jobs:
            continue
        target = found.setdefault(instance, FleetTarget(instance, job=job))
        if samples is not None:
            target.samples = round(samples)
        if now is not None:
            target.up = now
            target.labels = {k: v for k, v in labels.items() if k != "__name__"}
    for entry in listed or []:
        labels = entry.get("labels")
        if not isinstance(labels, dict) or str(labels.get("instance")) not in found:
            continue
        target = found[str(labels["instance"])]
        if target.job and labels.get("job") not in (None, target.job):
            continue
        target.health = str(entry.get("health") or "")
        target.last_error = str(entry.get("lastError") or "")
        target.last_scrape = str(entry.get("lastScrape") or "")
        target.scrape_url = str(entry.get("scrapeUrl") or "")
        target.labels = {str(k): str(v) for k, v in labels.items()}
    return sorted(found.values(), key=lambda t: t.instance)


_Rows = dict[str, dict[str, list[tuple[dict[str, str], float]]]]


def _by_instance(vector: Vector | None) -> _Rows:
    """instance -> family -> rows. A value that is not a number (NaN: a summary with no
    observation in its window, a deriv of one sample; or an infinity) is no figure at all."""
    rows: _Rows = {}
    for labels, value in vector.series if vector else []:
        if not math.isfinite(value):
            continue
        family = labels.get(FAMILY, "")
        rows.setdefault(labels.get("instance", ""), {}).setdefault(family, []).append(
            (labels, value))
    return rows


def _replicas(fleet: FleetEvidence, vectors: dict[str, Vector]) -> list[FleetReplica]:
    """A replica for each instance up now, or with series at the window's end."""
    increase = _by_instance(vectors.get("counts"))
    for instance, families in _by_instance(vectors.get("durations")).items():
        increase.setdefault(instance, {}).update(families)
    start, end = _by_instance(vectors.get("start")), _by_instance(vectors.get("end"))
    slope = _by_instance(vectors.get("slope"))
    up = {t.instance for t in fleet.targets if t.up}
    instances = sorted(up | set(end) | set(increase))
    start_read = "start" in vectors
    return [_replica(name, fleet, increase.get(name, {}), start.get(name, {}),
                     end.get(name, {}), slope.get(name, {}), start_read)
            for name in instances if name]


def _replica(instance: str, fleet: FleetEvidence,
             increase: dict[str, list[tuple[dict[str, str], float]]],
             start: dict[str, list[tuple[dict[str, str], float]]],
             end: dict[str, list[tuple[dict[str, str], float]]],
             slope: dict[str, list[tuple[dict[str, str], float]]],
             start_read: bool) -> FleetReplica:
    """``start_read``: whether the window's start was read (when not, nothing says the
    replica was not there then)."""
    began = fleet.at - fleet.window_s
    before: dict[tuple[str, str], ModelStats] = {}
    after: dict[tuple[str, str], ModelStats] = {}
    counted: list[MetricSample] = []
    for name, stat in COUNTERS.items():
        scale = 1 if name in COUNTS else 1000
        started = {_model_of(labels): value for labels, value in start.get(name, [])}
        for labels, grown in increase.get(name, []):
            key = _model_of(labels)
            first = started.get(key, 0.0)
            for stats, value in ((before, first), (after, first + grown)):
                model = stats.setdefault(key, ModelStats(*key))
                setattr(model, stat, getattr(model, stat) + round(value * scale))
            if name in SCRAPED:  # as a scrape would show them, counted from 0 at the start
                counted.append(MetricSample(name, _plain(labels), grown))
    server = ServerEvidence(
        url=instance, live=True, ready=False, from_metrics=True,
        samples=[ServerSample(at=began, stats=list(before.values())),
                 ServerSample(at=fleet.at, stats=list(after.values()))])
    first_scrape = MetricsScrape(at=began, samples=_gauges(start.get(PENDING, []), PENDING))
    last_scrape = MetricsScrape(at=fleet.at, samples=[
        *counted, *_gauges(end.get(PENDING, []), PENDING),
        *(MetricSample(SUMMARY, {**_plain(labels), "quantile": "0.99"}, value)
          for labels, value in end.get(SUMMARY, []))])
    versions: dict[str, list[str]] = {}
    for labels, _ in end.get("loaded", []):
        versions.setdefault(labels.get("model", ""), []).append(labels.get("version", ""))
    return FleetReplica(
        instance=instance, server=server,
        metrics=MetricsEvidence(url=f"{fleet.url} (instance {instance})",
                                scrapes=[first_scrape, last_scrape]),
        gpu=_gpus(start, end),
        versions={model: sorted(found, key=_version_order) for model, found in versions.items()},
        seen_at_start=bool(start.get("up")) or not start_read,
        gpu_memory_slope=_halves(slope),
    )


def _halves(slope: dict[str, list[tuple[dict[str, str], float]]]) -> dict[str, list[float]]:
    """GPU uuid -> [growth in the window's first half, in its second], bytes per second."""
    first = {labels.get("gpu_uuid", ""): value for labels, value in slope.get("first", [])}
    second = {labels.get("gpu_uuid", ""): value for labels, value in slope.get("second", [])}
    return {uuid: [first[uuid], second[uuid]] for uuid in sorted(first.keys() & second.keys())}


def _model_of(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("model", ""), labels.get("version", "")


def _plain(labels: dict[str, str]) -> dict[str, str]:
    """A row's labels as the server writes them (without Prometheus's and ours)."""
    return {k: v for k, v in labels.items() if k in ("model", "version", "reason", "gpu_uuid")}


def _gauges(rows: list[tuple[dict[str, str], float]], name: str) -> list[MetricSample]:
    return [MetricSample(name, _plain(labels), value) for labels, value in rows]


def _gpus(start: dict[str, list[tuple[dict[str, str], float]]],
          end: dict[str, list[tuple[dict[str, str], float]]]) -> GpuEvidence | None:
    """The replica's GPUs as NVML would give them; None without nv_gpu_* (CPU only)."""
    totals = {labels.get("gpu_uuid", ""): value for labels, value in end.get(GPU_TOTAL, [])}
    if not totals:
        return None
    used = {labels.get("gpu_uuid", ""): value for labels, value in end.get(GPU_USED, [])}
    earlier = {labels.get("gpu_uuid", ""): value for labels, value in start.get(GPU_USED, [])}
    busy = {labels.get("gpu_uuid", ""): value
            for labels, value in end.get(GPU_UTILIZATION, [])}
    devices = []
    for index, uuid in enumerate(sorted(totals)):
        devices.append(GpuDevice(
            index=index, uuid=uuid, memory_total_bytes=int(totals[uuid]),
            memory_used_bytes=int(used.get(uuid, 0)),
            memory_used_earlier_bytes=int(earlier[uuid]) if uuid in earlier else None,
            utilization_percent=round(busy[uuid] * 100) if uuid in busy else None))
    return GpuEvidence(devices=devices)


def _version_order(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isascii() and version.isdigit() else (1 << 62, version)


def _ask_replicas(fleet: FleetEvidence, request: FleetRequest) -> None:
    """Each replica's own API (its state, models and configs), at the URL ``replica_url``
    makes of its target, a few at a time; one that does not answer is recorded in
    ``replica_errors`` and judged from its series alone."""
    from triton_doctor.checks.server import describe

    fleet.asked_replicas = True
    targets = {t.instance: t for t in fleet.targets}
    replicas = fleet.replicas[:MAX_ASKED]
    fleet.unasked = max(0, len(fleet.replicas) - MAX_ASKED)

    def ask(replica: FleetReplica) -> None:
        target = targets.get(replica.instance, FleetTarget(replica.instance))
        try:
            url = replica_url(request.replica_url, target)
            found = describe(url, request.timeout_s)
        except (SourceUnavailable, ValueError) as error:
            fleet.replica_errors[replica.instance] = str(error)
            return
        found.samples = replica.server.samples
        replica.server = found

    with ThreadPoolExecutor(max_workers=ASK_AT_ONCE, thread_name_prefix="replica") as pool:
        list(pool.map(ask, replicas))


#: The fields ``--replica-url`` may name: where Prometheus scrapes the replica, and its labels.
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def replica_url(template: str, target: FleetTarget) -> str:
    """The replica's HTTP API address from ``template``: ``{scheme}``, ``{host}``, ``{port}``
    (of its scrape address) and any of its target's labels (``{pod}``). ValueError naming
    a field the target does not have."""
    from urllib.parse import urlsplit

    scrape = urlsplit(target.scrape_url or f"http://{target.instance}")
    host = scrape.hostname or target.instance.rsplit(":", 1)[0].strip("[]")
    values = {**target.labels, "scheme": scrape.scheme or "http",
              "host": f"[{host}]" if ":" in host else host,
              "port": str(scrape.port or "")}

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ValueError(f"--replica-url {template!r}: {target.instance} has no {name!r} "
                             f"(it has scheme, host, port and the labels "
                             f"{', '.join(sorted(target.labels)) or 'none'})")
        return values[name]

    return _FIELD.sub(field, template)
