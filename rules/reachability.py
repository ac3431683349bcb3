"""TD603: a source the user named could not be read, so the report is partial."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.triton.server_model import LiveView

#: What to look at for each source, by its part of the Evidence.
FIXES = {
    "server": "Check that the server is running (its process, `docker ps -a`, `kubectl get pod`: "
              "a crash loop shows there), read its log (`--log`), and that --url is its HTTP port "
              "(default 8000).",
    "metrics": "Check that --metrics-url is the server's metrics port (default 8002) and that "
               "the server runs with --allow-metrics=true (the default).",
    "fleet": "Check that --prometheus is the engine's base URL (Prometheus: port 9090; Mimir: "
             "with its /prometheus prefix and an X-Scope-OrgID header, --prometheus-header) and "
             "that this machine can reach it.",
    "log": "Check the log's path and that it can be read; `--log -` reads it from standard "
           "input.",
}


@rule("TD603", "source-unreachable", "error", "A source asked for could not be read",
      scope="live", needs=())
def source_unreachable(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: every source the user named (the server at --url, a --metrics-url, a
    --log beside a server) was read. Each one that was not is a finding, next to what could be
    read: the repository's findings, and the log, container and /dev/shm of a server that is
    down.

    Why it matters: a server that does not answer is the incident itself, or the check looked
    in the wrong place; either way the live rules could not judge it, and a report without
    this finding would pass for a healthy server. The exit code is 3.

    Example: `check ./models --url triton:8000` with the server crash-looping → the static
    findings (often the reason it crashes) and "cannot reach tritonserver at
    http://triton:8000: connection refused".

    Fix: start or reach the server (its process, container or pod, its log), or correct the URL.
    """
    for part, why in sorted(view.evidence.unreachable.items()):
        yield Hit(message=why, fix=FIXES.get(part), evidence={"source": part})
