"""The Evidence's live parts: a running server, its metrics, GPUs, container, host, log and a
fleet read through Prometheus.

Kept apart from ``triton_doctor.evidence`` (which names them, and imports them the first time
one is used) so that a check of a repository alone builds none of these classes.
"""

from __future__ import annotations

from typing import Any

from triton_doctor.records import field, record


@record
class ServerModel:
    """One entry of ``POST /v2/repository/index``, with the config the server runs when READY."""

    name: str
    version: str = ""
    #: READY, UNAVAILABLE, LOADING, UNLOADING, UNKNOWN; "" for a model whose directory failed
    #: before loading (the index then lists its name only; the reason is in the log).
    state: str = ""
    reason: str = ""
    #: ``GET /v2/models/<name>/config`` as JSON, for READY models.
    config: dict[str, Any] | None = None


@record
class ModelStats:
    """One model version's counters from ``GET /v2/models/stats`` (cumulative since load)."""

    name: str
    version: str = ""
    inference_count: int = 0
    execution_count: int = 0
    success_count: int = 0
    fail_count: int = 0
    #: Cumulative nanoseconds: queue and compute time of successful requests.
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0
    success_ns: int = 0
    #: Executions per batch size (``batch_stats``).
    batch_executions: dict[str, int] = field(default_factory=dict)
    #: Memory the model's instances hold, by kind ("GPU", "CPU", "CPU_PINNED"), in bytes.
    memory_bytes: dict[str, int] = field(default_factory=dict)


@record
class ShmRegion:
    """A system shared-memory region registered with the server."""

    name: str
    #: The /dev/shm key that backs it.
    key: str = ""
    byte_size: int = 0


@record
class ServerSample:
    """What the server reported at one moment; two samples a window apart give rates."""

    #: Seconds since the epoch when the sample was taken.
    at: float
    stats: list[ModelStats] = field(default_factory=list)
    system_shm: list[ShmRegion] = field(default_factory=list)
    #: Endpoints that failed while the rest answered: endpoint -> why (their part stays empty,
    #: which must not read as "no traffic" or "no regions").
    errors: dict[str, str] = field(default_factory=dict)


@record
class ServerEvidence:
    """A running tritonserver as its HTTP API describes it."""

    url: str
    live: bool = False
    ready: bool = False
    version: str = ""
    extensions: list[str] = field(default_factory=list)
    models: list[ServerModel] = field(default_factory=list)
    samples: list[ServerSample] = field(default_factory=list)
    #: Endpoints that failed while the rest answered: endpoint -> why.
    errors: dict[str, str] = field(default_factory=dict)
    #: A replica judged from Prometheus's series alone: ``samples`` hold its counters, and its
    #: state (ready, models, errors) was not read from its API: ``live`` says Prometheus
    #: scraped it, ``ready`` stays False (not known).
    from_metrics: bool = False


@record
class MetricSample:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    value: float = 0.0


@record
class MetricsScrape:
    """One read of the Prometheus text endpoint."""

    at: float
    samples: list[MetricSample] = field(default_factory=list)
    #: Lines that could not be parsed (they are skipped, and counted).
    bad_lines: int = 0
    #: Lines past the parse budget, not read (0: the whole page was read).
    unread_lines: int = 0
    #: Where the page was read, without credentials, when the endpoint redirected; else "".
    redirected_to: str = ""


@record
class MetricsEvidence:
    url: str
    #: In time order; rates come from the first and the last.
    scrapes: list[MetricsScrape] = field(default_factory=list)


@record
class GpuProcess:
    pid: int
    #: None when NVML cannot tell (common inside containers).
    used_bytes: int | None = None


@record
class GpuDevice:
    index: int
    name: str = ""
    uuid: str = ""
    #: "major.minor", e.g. "8.0".
    compute_capability: str = ""
    memory_total_bytes: int = 0
    #: With NVML's v2 memory call, used excludes the driver's reserved memory (v1 counts it).
    memory_used_bytes: int = 0
    #: Memory the driver reserves for itself; None where only the v1 call answered.
    memory_reserved_bytes: int | None = None
    #: The GPU shares the host's memory (GB10, Jetson): NVML gives no device total (0 or
    #: NotSupported), so there is no device memory to judge.
    memory_unified: bool = False
    #: Memory used at the start of the window (the reading above is from its end), for the
    #: trend; None when only one reading was taken.
    memory_used_earlier_bytes: int | None = None
    utilization_percent: int | None = None
    mig_enabled: bool | None = None
    ecc_uncorrected_errors: int | None = None
    processes: list[GpuProcess] = field(default_factory=list)

    @property
    def key(self) -> str:
        """What names this GPU from one reading to the next: its UUID, else its index."""
        return self.uuid or str(self.index)

    @property
    def memory_share(self) -> float:
        """The share of its memory in use; 0 when NVML gave no total."""
        total = self.memory_total_bytes
        return self.memory_used_bytes / total if total else 0.0


@record
class GpuEvidence:
    """The host's GPUs through NVML."""

    driver_version: str = ""
    cuda_driver_version: str = ""
    devices: list[GpuDevice] = field(default_factory=list)
    #: Per-device calls that failed while the rest answered ("GPU 0 ecc": "NotSupported").
    errors: dict[str, str] = field(default_factory=dict)


@record
class ContainerEvidence:
    """The Docker container tritonserver runs in, from the daemon's inspect data."""

    id: str
    name: str = ""
    image: str = ""
    #: The NGC release ("24.08") and server version ("2.49.0") from the image's environment.
    release: str = ""
    triton_version: str = ""
    status: str = ""
    shm_size_bytes: int | None = None
    #: GPU requests in words ("all GPUs", "GPUs 0,1", "runtime nvidia"), empty without.
    gpu_requests: list[str] = field(default_factory=list)
    #: Mounts as "source -> destination (ro|rw)".
    mounts: list[str] = field(default_factory=list)
    restart_count: int = 0
    oom_killed: bool = False
    #: When the container last started (Docker's State.StartedAt, RFC 3339).
    started_at: str = ""
    #: The last lines of the container's log.
    log_tail: list[str] = field(default_factory=list)
    #: Parts that failed while the rest answered ("log": why), so that an empty log tail
    #: (a logging driver that cannot be read, such as "none") is not taken for a quiet server.
    errors: dict[str, str] = field(default_factory=dict)


@record
class ShmSegment:
    """A file in /dev/shm and who maps or holds it."""

    name: str
    size_bytes: int = 0
    #: Live processes that map or hold the file open.
    owner_pids: list[int] = field(default_factory=list)
    #: Whether it is a Python-backend stub region (its name says so).
    python_backend: bool = False


@record
class HostEvidence:
    """The machine tritonserver runs on (or the one triton-doctor runs on, when the same)."""

    dev_shm_total_bytes: int = 0
    dev_shm_used_bytes: int = 0
    segments: list[ShmSegment] = field(default_factory=list)
    #: Whether owners could be read for every process (False without permission).
    owners_complete: bool = True
    server_pids: list[int] = field(default_factory=list)
    server_rss_bytes: int | None = None
    #: When the server process started (seconds since the epoch); None unless exactly one
    #: tritonserver process was found.
    server_started_at: float | None = None


@record
class LogOccurrence:
    """The lines of a log that say one thing about one model, gathered into one."""

    #: The log rule whose words the lines hold (``Rule.server_says``/``log_says``).
    rule: str
    #: The words found (the longest the rule declares).
    says: str
    #: The model the lines name; "" when they name none.
    model: str = ""
    #: The rule that explains the first line's load error, where its words name one.
    explained_by: str = ""
    count: int = 0
    #: Line numbers in the log, from 1.
    first_line: int = 0
    last_line: int = 0
    #: Times the first and last lines carry, as written; "" when they carry none.
    first_time: str = ""
    last_time: str = ""
    #: The first line's message (unquoted, its wrapping removed), and the last one's.
    first_message: str = ""
    last_message: str = ""


@record
class LogEvidence:
    """The server's log (a file or pipe given with --log, or the container's log): what its
    lines say that the log rules know, read over all of it, and its last lines to show."""

    source: str
    lines: list[str] = field(default_factory=list)
    #: The file read, for findings to point into; "" for a pipe, standard input or a container.
    path: str = ""
    occurrences: list[LogOccurrence] = field(default_factory=list)
    #: Lines and bytes read; lines before ``lines`` are numbered from 1 all the same.
    total_lines: int = 0
    bytes_read: int = 0
    #: Whether the whole log was read (False: only its end, e.g. a container's tail).
    whole: bool = True


@record
class FleetTarget:
    """A replica as Prometheus knows it: its ``instance`` label and how its scrapes go."""

    instance: str
    job: str = ""
    #: The latest ``up`` sample: 1 scraped, 0 the scrape failed; None when the replica has no
    #: ``up`` now but had one in the window (it stopped reporting, or was removed).
    up: float | None = None
    #: From the targets API where the engine has one (Prometheus; not Thanos Query or Mimir):
    #: "up", "down" or "unknown"; "" when not listed there.
    health: str = ""
    last_error: str = ""
    #: Its scrapes in the window (``count_over_time(up)``): fewer than its job's most, it
    #: joined or left within the window.
    samples: int = 0
    #: When it was last scraped (RFC 3339), from the targets API.
    last_scrape: str = ""
    scrape_url: str = ""
    #: The target's labels (``--replica-url`` fills its template from them).
    labels: dict[str, str] = field(default_factory=dict)


@record
class FleetReplica:
    """One replica's series over the window, in the shapes its own endpoints give, so that the
    live rules judge it as they judge one server."""

    instance: str
    #: Its counters at the window's start and end as two statistics samples (end = start +
    #: ``increase()``, so a restart within the window is not a negative rate); with
    #: ``--ask-replicas``, its state from its own API too.
    server: ServerEvidence
    #: Two synthetic scrapes, at the window's start and end: the pending-request gauge,
    #: failures by reason, latency summaries.
    metrics: MetricsEvidence
    #: Its GPUs from ``nv_gpu_*`` (None: the server exports none, a CPU-only replica).
    gpu: GpuEvidence | None = None
    #: Model -> the versions it serves now (those with series at the window's end).
    versions: dict[str, list[str]] = field(default_factory=dict)
    #: Whether Prometheus holds the replica at the window's start; False when it joined within
    #: the window, or Prometheus is younger than the window: what compares with the start
    #: (compute time before, TD615; GPU memory then, TD903) cannot be judged.
    seen_at_start: bool = True
    #: GPU uuid -> growth of memory used in the window's first half and in its second, bytes
    #: per second (``deriv``): a trend grows in both, a step (one model loaded) in one.
    gpu_memory_slope: dict[str, list[float]] = field(default_factory=dict)


@record
class FleetEvidence:
    """Replicas of tritonserver as a Prometheus (or Thanos, Mimir) holds their series."""

    #: The Prometheus URL, without credentials.
    url: str
    #: The label matchers every query carries (``job="triton"``); "" for none.
    selector: str = ""
    #: Whole seconds, as the queries' ranges are written.
    window_s: float = 900.0
    #: The evaluation time of every query (seconds since the epoch).
    at: float = 0.0
    targets: list[FleetTarget] = field(default_factory=list)
    replicas: list[FleetReplica] = field(default_factory=list)
    #: Queries that failed while the rest answered: what they read -> why.
    errors: dict[str, str] = field(default_factory=dict)
    #: ``--ask-replicas``: the replicas whose own API did not answer -> why (they are judged
    #: from their series alone).
    replica_errors: dict[str, str] = field(default_factory=dict)
    #: ``--ask-replicas``: replicas past the most whose APIs are read, not asked.
    unasked: int = 0
    #: Warnings the engine attached to its answers (a partial response of Thanos or Mimir).
    warnings: list[str] = field(default_factory=list)
    #: ``--ask-replicas``: each replica's own API was read (its state, models and configs).
    asked_replicas: bool = False
