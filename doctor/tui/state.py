"""What the watch screens show, computed from judged Evidence: no Textual, no I/O, no clock.

Each poll gives a Frame (the Evidence, its judgement, a row per model); the History keeps the
last frames' numbers for sparklines and remembers every finding seen since the watch began,
so a finding that stopped firing is still there to read (``firing only`` hides it).
"""

from __future__ import annotations

import re
from collections import deque
from datetime import datetime
from functools import cached_property

from triton_doctor.evidence import Evidence, ServerEvidence, ServerModel
from triton_doctor.findings import Finding, Severity
from triton_doctor.records import field, record
from triton_doctor.result import Result
from triton_doctor.triton.server_model import LiveView

#: Points kept per sparkline: two minutes at the default one-second interval.
HISTORY_POINTS = 120
_NUMBERS = re.compile(r"[+-]?\d+(?:[.,]\d+)*")
#: Evidence keys that name what a live finding is about, as the live rules write them.
IDENTITY = ("gpu", "region", "segment", "key", "endpoint")
#: The parts a live watch reads, in the order the status line lists them.
SOURCES = ("server", "metrics", "gpu", "container", "host", "log")
#: A model's state where the server's own API was not read (a replica judged from Prometheus).
NOT_READ = "-"


@record(frozen=True)
class ModelRow:
    """One model version as the overview's table shows it."""

    name: str
    version: str
    state: str
    reason: str
    requests_per_s: float | None = None
    average_batch: float | None = None
    queue_ms: float | None = None
    p99_ms: float | None = None
    failures: int | None = None
    worst: Severity | None = None

    def series(self) -> dict[str, float | None]:
        """The numbers kept over time (the model screen's sparklines), by their label."""
        return {"requests/s": self.requests_per_s, "average batch": self.average_batch,
                "queue ms": self.queue_ms, "p99 ms": self.p99_ms}


@record(frozen=True)
class Frame:
    """One judged reading. ``at`` is when the server was sampled (seconds since the epoch)."""

    at: float
    evidence: Evidence
    result: Result

    @property
    def firing(self) -> list[Finding]:
        """Errors first, then warnings, then info; by model and rule within each."""
        return sorted(self.result.findings,
                      key=lambda f: (-f.severity, f.model or "", f.rule, f.message))

    def sources(self) -> dict[str, str]:
        """Each live part: "" when it was read, else why it was not."""
        evidence = self.evidence
        return {part: "" if getattr(evidence, part) is not None
                else evidence.unavailable.get(part, "not collected") for part in SOURCES}

    @cached_property
    def models(self) -> list[ModelRow]:
        """The server's models with their traffic over the window, by name (each screen asks
        on every frame: worked out once)."""
        server = self.evidence.server
        if server is None:
            return []
        view = self.view
        rates = {(r.model, r.version): r for r in view.rates}
        p99 = view.summary_quantile("nv_inference_request_summary_us", 0.99)
        worst: dict[str, Severity] = {}
        for finding in self.result.findings:
            if finding.model and finding.severity > worst.get(finding.model, 0):
                worst[finding.model] = finding.severity
        rows = []
        for model in sorted(_listed(server), key=lambda m: (m.name, m.version)):
            rate = rates.get((model.name, model.version))
            latency = p99.get((model.name, model.version))
            rows.append(ModelRow(
                name=model.name, version=model.version,
                state=NOT_READ if server.from_metrics and not server.models
                else model.state or "FAILED", reason=model.reason,
                requests_per_s=rate.requests_per_s if rate else None,
                average_batch=rate.average_batch if rate else None,
                queue_ms=rate.queue_ms_per_request if rate else None,
                p99_ms=latency / 1000 if latency is not None else None,
                failures=rate.failures if rate else None,
                worst=worst.get(model.name),
            ))
        return rows

    @cached_property
    def view(self) -> LiveView:
        return LiveView(self.evidence)

    def window_s(self) -> float | None:
        """Seconds between the two server samples the rates come from; None with one."""
        window = self.view.window
        return window[1].at - window[0].at if window else None

    def gpu_memory_limit(self) -> float:
        """The share of GPU memory at which TD701 fires (the gauges turn red there)."""
        return self.view.threshold("gpu-memory")

    def uptime_s(self) -> float | None:
        """Seconds the server has run, from its process or its container; None if unknown."""
        host, container = self.evidence.host, self.evidence.container
        started = host.server_started_at if host else None
        if started is None and container is not None and container.started_at:
            started = _rfc3339(container.started_at)
        return None if started is None else max(0.0, self.at - started)


def _listed(server: ServerEvidence) -> list[ServerModel]:
    """The models the server lists; a replica read from Prometheus's series lists none, so
    those its counters name stand in, their state unknown."""
    if server.models or not server.from_metrics or not server.samples:
        return server.models
    return [ServerModel(stats.name, stats.version) for stats in server.samples[-1].stats]


def _rfc3339(text: str) -> float | None:
    """Docker's StartedAt ("2024-09-03T10:12:42.027336544Z") as seconds since the epoch."""
    head, _, _ = text.partition(".")
    try:
        return datetime.fromisoformat(head.rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return None


def frame_time(evidence: Evidence, fallback: float) -> float:
    """When the Evidence was read: the moment a fleet's queries read, its last server sample
    or scrape, else ``fallback``."""
    if evidence.fleet is not None and evidence.fleet.at:
        return evidence.fleet.at
    if evidence.server and evidence.server.samples:
        return evidence.server.samples[-1].at
    if evidence.metrics and evidence.metrics.scrapes:
        return evidence.metrics.scrapes[-1].at
    return fallback


@record
class Seen:
    """A finding as the watch has seen it: since when, until when, and whether it still fires."""

    finding: Finding
    #: Its watch_key, which History.seen is keyed by and table rows carry.
    key: str
    first_at: float
    last_at: float
    firing: bool = True


@record
class History:
    """Numbers of the last frames, and every finding seen since the watch began."""

    points: int = HISTORY_POINTS
    gpu_memory: dict[str, deque[float]] = field(default_factory=dict)
    model_series: dict[str, dict[str, deque[float]]] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)
    latest: Frame | None = None

    def add(self, frame: Frame) -> None:
        self.latest = frame
        if frame.evidence.gpu is not None:
            for device in frame.evidence.gpu.devices:
                if device.memory_total_bytes:
                    self._series(self.gpu_memory, device.key).append(device.memory_share)
        for row in frame.models:
            series = self.model_series.setdefault(row.name, {})
            for name, value in row.series().items():
                if value is not None:
                    self._series(series, name).append(value)
        self._remember(frame)

    def _series(self, table: dict[str, deque[float]], key: str) -> deque[float]:
        return table.setdefault(key, deque(maxlen=self.points))

    def _remember(self, frame: Frame) -> None:
        now = {watch_key(finding): finding for finding in frame.result.findings}
        for key, seen in self.seen.items():
            seen.firing = key in now
        for key, finding in now.items():
            seen = self.seen.setdefault(key, Seen(finding, key, frame.at, frame.at))
            seen.finding, seen.last_at = finding, frame.at

    def findings(self, firing_only: bool) -> list[Seen]:
        """Seen findings, firing ones first, each group errors first."""
        kept = [s for s in self.seen.values() if s.firing or not firing_only]
        return sorted(kept, key=lambda s: (not s.firing, -s.finding.severity,
                                           s.finding.model or "", s.finding.rule))


def watch_key(finding: Finding) -> str:
    """The same problem from poll to poll: live messages carry numbers that change every
    second ("95% of its memory", "12 ms queue"), so digits in the message do not count; what
    the finding is about (a GPU, a region, a file, an endpoint) does."""
    about = [f"{key}={finding.evidence[key]}" for key in IDENTITY if key in finding.evidence]
    return finding.identity(_NUMBERS.sub("#", finding.message), *about)

