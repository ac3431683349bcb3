"""Collect every live part of the Evidence: the server twice a window apart, and around it.

The server (and a metrics URL given explicitly, and a log file) are sources the user asked for:
one that cannot be read is recorded as unreachable, and the rest is still read (a dead server's
container, log and /dev/shm say why it died); the run reports all it has and exits 3. The GPU,
the container and the host are looked at when they can be; when not, the Evidence records why
and the rules that need them are skipped with that reason.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import TRITON_METRICS_PORT, hide_credentials, split_url
from triton_doctor.evidence import Evidence, GpuEvidence, MetricsEvidence, MetricsScrape
from triton_doctor.records import record


@record
class LiveRequest:
    url: str
    metrics_url: str | None = None
    window_s: float = 5.0
    timeout_s: float = 5.0
    log_path: str | None = None
    container: str | None = None


def metrics_url_for(url: str) -> str:
    """Triton's metrics endpoint on the same host: port 8002, path /metrics."""
    parts = split_url(url)
    return f"{parts.scheme}://{parts.host}:{TRITON_METRICS_PORT}/metrics"


def is_local(url: str) -> bool:
    """Whether the server runs on this machine, so that /dev/shm here is its /dev/shm."""
    host = split_url(url).hostname
    if host in ("localhost", "::1", socket.gethostname()) or host.startswith("127."):
        return True
    try:
        return socket.gethostbyname(host) == socket.gethostbyname(socket.gethostname())
    except OSError:
        return False


def collect_live(
    evidence: Evidence, request: LiveRequest, sleep: Callable[[float], None] = time.sleep
) -> None:
    """Fill ``evidence``'s live parts; a source the user asked for that cannot be read is
    recorded in ``evidence.unreachable``."""
    from triton_doctor.checks import server

    url = hide_credentials(request.url)  # snapshots and reports never carry secrets
    metrics_url = request.metrics_url or metrics_url_for(url)
    try:
        evidence.server = server.describe(url, request.timeout_s)
        evidence.server.samples.append(server.sample(url, request.timeout_s))
    except SourceUnavailable as error:
        evidence.server = None
        unreachable(evidence, "server", str(error))
        if request.metrics_url:
            _scrape(evidence, metrics_url, request)
        collect_surroundings(evidence, request, url)
        return
    scrapes = _scrape(evidence, metrics_url, request)
    earlier_gpu = read_gpu(evidence)
    sleep(request.window_s)
    try:
        evidence.server.samples.append(server.sample(url, request.timeout_s))
    except SourceUnavailable as error:
        evidence.server.errors["second sample"] = str(error)
    if scrapes is not None:
        _scrape(evidence, metrics_url, request)
    if earlier_gpu is not None:
        later_gpu = read_gpu(evidence)
        if later_gpu is not None:
            with_trend(later_gpu, earlier_gpu)
        evidence.gpu = later_gpu
    collect_surroundings(evidence, request, url)


def unreachable(evidence: Evidence, part: str, why: str) -> None:
    """Record that a source the user named could not be read."""
    evidence.unavailable[part] = evidence.unreachable[part] = why


def _scrape(evidence: Evidence, url: str, request: LiveRequest) -> MetricsScrape | None:
    from triton_doctor.checks import metrics

    try:
        result = metrics.scrape(url, request.timeout_s)
    except SourceUnavailable as error:
        evidence.unavailable["metrics"] = str(error)
        evidence.metrics = None
        if request.metrics_url:
            unreachable(evidence, "metrics", str(error))
        return None
    if evidence.metrics is None:
        evidence.metrics = MetricsEvidence(url=hide_credentials(url))
    evidence.metrics.scrapes.append(result)
    return result


def read_gpu(evidence: Evidence) -> GpuEvidence | None:
    from triton_doctor.checks import gpu

    try:
        return gpu.collect_gpu()
    except SourceUnavailable as error:
        evidence.unavailable["gpu"] = str(error)
        return None


def with_trend(later: GpuEvidence, earlier: GpuEvidence) -> None:
    """Record each GPU's memory at the window's start next to its reading at the end."""
    before = {device.key: device for device in earlier.devices}
    for device in later.devices:
        found = before.get(device.key)
        if found is not None:
            device.memory_used_earlier_bytes = found.memory_used_bytes


def _port(url: str) -> int:
    """The port the server listens on: the URL's, else its scheme's default (as the server
    collector reads it)."""
    return split_url(url).port


def collect_surroundings(evidence: Evidence, request: LiveRequest, url: str) -> None:
    from triton_doctor.checks import container, host, logs

    try:
        evidence.container = container.collect_container(url, request.container)
    except SourceUnavailable as error:
        evidence.unavailable["container"] = str(error)
    if is_local(url) or evidence.container is not None:
        try:
            evidence.host = host.collect_host(host.listening_servers(_port(url)))
        except SourceUnavailable as error:
            evidence.unavailable["host"] = str(error)
    else:
        evidence.unavailable["host"] = (
            f"the server ({url}) is not on this machine, so this machine's /dev/shm says "
            "nothing about it; run triton-doctor on the server's host"
        )
    if request.log_path:
        try:
            evidence.log = logs.read_log(request.log_path, seconds=request.timeout_s)
        except SourceUnavailable as error:
            unreachable(evidence, "log", str(error))
    elif evidence.container is not None:
        evidence.log = logs.from_container(evidence.container)
    else:
        evidence.unavailable["log"] = "no --log FILE given and no container found"
