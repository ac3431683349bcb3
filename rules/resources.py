"""TD7xx: the resources under a running server: GPU memory, shared memory, its container."""

from __future__ import annotations

from collections.abc import Iterator

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.triton.server_model import GPU_MEMORY_ERROR_SHARE, LiveView

MIB = 1024 * 1024
#: Docker's default /dev/shm size for a container.
DOCKER_DEFAULT_SHM = 64 * MIB


def _caveat(view: LiveView) -> str:
    """Owners come from /proc; processes it could not read might hold the file too."""
    if view.host is not None and not view.host.owners_complete:
        return " (some processes could not be read, and might use it)"
    return ""


@rule("TD701", "gpu-memory-pressure", "warning", "GPU memory nearly full", scope="live",
      needs=("gpu",))
def gpu_memory_pressure(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: used ÷ total memory of each GPU (NVML), against `gpu-memory` (default
    0.9; above 0.97 it is an error), its change over the window, and whether one more
    instance of the server's biggest model (its GPU memory ÷ its instances, from the server's
    statistics) would still fit in what is free. A GPU with unified memory (GB10, Jetson: NVML
    gives no device total) or whose memory NVML could not read is not judged: there is no
    device memory to measure, and a share of 0 would be false.

    Why it matters: the next model load, a larger batch or ONNX Runtime's arena growing fails
    with CUDA out-of-memory, and the model goes UNAVAILABLE mid-incident.

    Example: 4 instances of a 9 GB model on a 40 GB GPU → 38 GB used; the fifth instance or a
    batch of 64 fails.

    Fix: fewer instances per GPU (`instance_group { count }`), spread models over GPUs
    (`gpus: [ ... ]`), cap ONNX Runtime's arena (`memory.enable_memory_arena_shrinkage`), or a
    bigger GPU.
    """
    assert view.gpu is not None
    limit = view.threshold("gpu-memory")
    biggest = max(view.gpu_instance_footprints(), key=lambda pair: pair[1], default=None)
    for device in view.gpu.devices:
        if not device.memory_total_bytes:  # unified memory, or NVML could not read it
            continue
        share = device.memory_share
        free = device.memory_total_bytes - device.memory_used_bytes
        no_room = biggest is not None and biggest[1] > free
        if share < limit and not no_room:
            continue
        free_mib = free / MIB
        trend = ""
        if device.memory_used_earlier_bytes is not None:
            grown = (device.memory_used_bytes - device.memory_used_earlier_bytes) / MIB
            trend = f", {grown:+.0f} MiB over the window"
        room = (f"; one more instance of {biggest[0]} needs about {biggest[1] / MIB:.0f} MiB"
                if biggest is not None and no_room else "")
        holders = ", ".join(
            f"pid {p.pid}" + (f" {p.used_bytes / MIB:.0f} MiB" if p.used_bytes else "")
            for p in device.processes[:6]
        )
        yield Hit(
            message=f"GPU {device.index} ({device.name}) has {share:.0%} of its memory in use, "
            f"{free_mib:.0f} MiB free{trend}{room}" + (f"; held by {holders}" if holders else ""),
            fix="Run fewer instances per GPU, spread models across GPUs with gpus: [...], or "
            "cap framework memory pools (ONNX Runtime arena, PyTorch caching allocator).",
            evidence={"gpu": device.index, "used_bytes": device.memory_used_bytes,
                      "total_bytes": device.memory_total_bytes, "used_share": round(share, 4),
                      "used_earlier_bytes": device.memory_used_earlier_bytes,
                      "biggest_instance_bytes": biggest[1] if biggest else None},
            severity=Severity.ERROR if share >= GPU_MEMORY_ERROR_SHARE else None,
        )


@rule("TD702", "gpu-ecc-errors", "error", "GPU reports uncorrected memory errors", scope="live",
      needs=("gpu",))
def gpu_ecc_errors(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the volatile count of uncorrected ECC errors NVML reports per GPU.

    Why it matters: uncorrected errors corrupt results or crash CUDA contexts; the GPU needs a
    reset or replacement, not a config change.

    Example: `ecc_uncorrected_errors: 3` on GPU 2 → drain the node.

    Fix: drain the node, reset the GPU (`nvidia-smi -r`) and, if errors return, replace it.
    """
    assert view.gpu is not None
    for device in view.gpu.devices:
        if device.ecc_uncorrected_errors:
            yield Hit(
                message=f"GPU {device.index} ({device.name}) reports "
                f"{device.ecc_uncorrected_errors} uncorrected ECC errors",
                fix="Drain the node and reset the GPU; replace it if the errors come back.",
                evidence={"gpu": device.index,
                          "ecc_uncorrected_errors": device.ecc_uncorrected_errors},
            )


@rule("TD711", "shm-region-abandoned", "warning", "Registered shared-memory region left behind",
      scope="live", needs=("server", "host"))
def shm_region_abandoned(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: system shared-memory regions registered with the server whose /dev/shm
    file no process but the server maps or holds open: the client that registered them is
    gone without unregistering. Regions that grow in number over the window are reported too.

    Why it matters: each abandoned region keeps its memory in /dev/shm until the server
    restarts; clients that crash in a loop fill /dev/shm and new registrations fail.

    Example: a client registers `input_data` (64 MiB), crashes, and its retry registers
    `input_data_2` → unregister both.

    Fix: unregister regions in a `finally` (tritonclient `unregister_system_shared_memory`)
    and unlink them; clean up now with `POST /v2/systemsharedmemory/region/<name>/unregister`.
    """
    assert view.server is not None and view.host is not None
    if not view.server.samples:
        return
    servers = set(view.host.server_pids)
    segments = {segment.name: segment for segment in view.host.segments}
    first, last = view.server.samples[0], view.server.samples[-1]
    for region in last.system_shm:
        segment = segments.get(region.key.lstrip("/"))
        if segment is None or set(segment.owner_pids) - servers:
            continue
        yield Hit(
            message=f"shared-memory region '{region.name}' (key {region.key}, "
            f"{region.byte_size} bytes) is registered, but no client maps it any more"
            + _caveat(view),
            fix=f"POST /v2/systemsharedmemory/region/{region.name}/unregister, unlink "
            f"/dev/shm{region.key if region.key.startswith('/') else '/' + region.key}, and "
            "unregister in a finally block in the client.",
            evidence={"region": region.name, "key": region.key, "byte_size": region.byte_size},
        )
    if len(last.system_shm) > len(first.system_shm):
        yield Hit(
            message=f"registered system shared-memory regions grew from {len(first.system_shm)} "
            f"to {len(last.system_shm)} in {last.at - first.at:.0f} s",
            fix="Check that clients unregister the regions they register.",
            evidence={"regions_before": len(first.system_shm),
                      "regions_after": len(last.system_shm)},
        )


@rule("TD712", "orphaned-shm-segment", "warning", "/dev/shm file no process uses",
      scope="live", needs=("host",))
def orphaned_shm_segment(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: files in /dev/shm that no live process maps or holds open and no server
    region refers to, e.g. Python-backend stub regions left by a crashed server.

    Why it matters: they hold memory until deleted; in a container with Docker's 64 MB
    /dev/shm a few leftovers are enough to make the next Python model fail to load ("Unable
    to initialize shared memory key").

    Example: `triton_python_backend_shm_region_3` (1 MiB) after a SIGKILLed server → delete.

    Fix: delete the files (`rm /dev/shm/<name>`) once no server runs; restart servers with
    SIGTERM so they clean up.
    """
    assert view.host is not None
    registered = {
        region.key.lstrip("/")
        for sample in (view.server.samples if view.server else [])
        for region in sample.system_shm
    }
    for segment in view.host.segments:
        if segment.owner_pids or segment.name in registered:
            continue
        yield Hit(
            message=f"/dev/shm/{segment.name} ({segment.size_bytes / MIB:.1f} MiB) is used by no "
            "process" + ("; it is a Python-backend stub region" if segment.python_backend
                         else "") + _caveat(view),
            fix=f"rm /dev/shm/{segment.name} (when no server that could own it is running).",
            evidence={"segment": segment.name, "size_bytes": segment.size_bytes,
                      "python_backend": segment.python_backend},
        )


@rule("TD713", "dev-shm-nearly-full", "warning", "/dev/shm nearly full", scope="live",
      needs=("host",))
def dev_shm_nearly_full(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: used ÷ size of /dev/shm against `dev-shm` (default 0.9).

    Why it matters: Python-backend models need shared memory per instance and per request;
    when it runs out they fail to load or to answer ("Failed to increase the shared memory
    pool size").

    Example: 60 of 64 MiB used → raise the container's `--shm-size`.

    Fix: `docker run --shm-size=1g` (or Kubernetes: an `emptyDir` with `medium: Memory` at
    /dev/shm), and remove orphaned segments (TD712).
    """
    assert view.host is not None
    total, used = view.host.dev_shm_total_bytes, view.host.dev_shm_used_bytes
    if total and used / total >= view.threshold("dev-shm"):
        yield Hit(
            message=f"/dev/shm is {used / total:.0%} full ({used / MIB:.0f} of "
            f"{total / MIB:.0f} MiB)",
            fix="Give the container more shared memory (--shm-size) and remove orphaned "
            "segments.",
            evidence={"used_bytes": used, "total_bytes": total},
        )


@rule("TD714", "container-default-shm", "warning", "Container left at Docker's 64 MB /dev/shm",
      scope="live", needs=("container", "server"))
def container_default_shm(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the server's container has Docker's default 64 MB /dev/shm
    (`HostConfig.ShmSize`) while it serves Python-backend models.

    Why it matters: every Python model instance needs shared memory for its stub, and tensors
    pass through it; at 64 MB loads fail with "Unable to initialize shared memory key ... use
    '--shm-size' flag" and large requests fail at run time.

    Example: `docker run --gpus all nvcr.io/nvidia/tritonserver:24.08-py3 ...` → add
    `--shm-size=1g`.

    Fix: start the container with `--shm-size=1g` (or more for large tensors).
    """
    assert view.container is not None and view.server is not None
    size = view.container.shm_size_bytes
    python = [m.name for m in view.server.models
              if (m.config or {}).get("backend") == "python"]
    if size is None or size > DOCKER_DEFAULT_SHM or not python:
        return
    yield Hit(
        message=f"container {view.container.name or view.container.id[:12]} has a "
        f"{size / MIB:.0f} MiB /dev/shm while {len(python)} Python-backend model(s) run "
        f"({', '.join(python[:5])})",
        fix="Restart the container with --shm-size=1g (TD805 reads the failures it causes in "
        "the log).",
        evidence={"shm_size_bytes": size, "python_models": len(python)},
    )


@rule("TD715", "container-restarts", "error", "Container was OOM-killed or restarted",
      scope="live", needs=("container",))
def container_restarts(view: LiveView) -> Iterator[Hit]:
    """
    What it checks: the container's OOM-killed flag and restart count.

    Why it matters: an OOM-killed server loses every in-flight request and reloads every
    model; restarts in a loop look like intermittent outages.

    Example: `OOMKilled: true` with 6 restarts → the models need more host memory than the
    container's limit.

    Fix: raise the container's memory limit, or load fewer models or instances; read the log
    before the restart for the model that grew.
    """
    assert view.container is not None
    container = view.container
    if not container.oom_killed and container.restart_count == 0:
        return
    yield Hit(
        message=f"container {container.name or container.id[:12]} "
        + ("was OOM-killed" if container.oom_killed else "has restarted")
        + f" ({container.restart_count} restarts)",
        fix="Raise the container's memory limit or load fewer models/instances.",
        evidence={"oom_killed": container.oom_killed,
                  "restart_count": container.restart_count},
        severity=None if container.oom_killed else Severity.WARNING,
    )
