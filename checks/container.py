"""Collect the Docker container tritonserver runs in, from the daemon's inspect data.

Many serving problems are set on the ``docker run`` line rather than in the model repository:
the 64 MiB default /dev/shm that starves the Python backend, a container started without GPUs,
a model repository mounted read-write or at the wrong place, an OOM kill. The daemon's
``docker inspect`` data says all of that, and the container's log tail says what the server
printed. Only reads: nothing is started, stopped or executed in the container.
"""

from __future__ import annotations

from typing import Any

from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import (
    TRITON_GRPC_PORT,
    TRITON_HTTP_PORT,
    TRITON_METRICS_PORT,
    split_url,
)
from triton_doctor.evidence import ContainerEvidence

#: How many lines of the container's log to keep.
LOG_LINES = 200
#: Seconds to wait for the daemon: a hung daemon must not hang the doctor.
DOCKER_TIMEOUT_S = 10
#: The ports tritonserver listens on unless told otherwise (HTTP, gRPC, metrics).
DEFAULT_PORTS = {"--http-port": TRITON_HTTP_PORT, "--grpc-port": TRITON_GRPC_PORT,
                 "--metrics-port": TRITON_METRICS_PORT}
TRITON_ENV = ("NVIDIA_TRITON_SERVER_VERSION=", "TRITON_SERVER_VERSION=")
TRITON_LABEL = "com.nvidia.tritonserver.version"


def collect_container(server_url: str | None, name_or_id: str | None) -> ContainerEvidence:
    """The tritonserver container: the one named, else the running one that serves ``server_url``.

    Raises SourceUnavailable when the daemon cannot be reached or no single container can be
    told to be the server's; a part that fails on its own (the log) is noted in ``errors``.
    """
    try:
        import docker
        import requests
    except ImportError:
        raise SourceUnavailable(
            "Docker is not available: the docker package is not installed (pip install docker)"
        ) from None
    try:
        client = docker.from_env(timeout=DOCKER_TIMEOUT_S)
        container = _find(client, server_url, name_or_id)
    except docker.errors.NotFound:
        raise SourceUnavailable(
            f"Docker: no container is named {name_or_id!r} or has that id "
            "(`docker ps -a` lists them)."
        ) from None
    except docker.errors.APIError as error:
        raise SourceUnavailable(_refused(error)) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise SourceUnavailable(_unreachable(error)) from None
    return _describe(container, (docker.errors.DockerException,
                                 requests.exceptions.RequestException))


def _unreachable(error: Exception) -> str:
    if "Permission denied" in str(error):
        return (
            f"permission denied on the Docker socket ({error}); run as a member of the docker "
            "group, or as root."
        )
    return (
        f"cannot reach the Docker daemon ({error}); is /var/run/docker.sock mounted / "
        "DOCKER_HOST set?"
    )


def _refused(error: Any) -> str:
    reason = error.explanation or str(error)
    if error.status_code in (401, 403):
        return (
            f"the Docker daemon denied permission ({reason}); run as a user the daemon (or its "
            "authorization plugin) allows to inspect containers."
        )
    return f"the Docker daemon refused the request: {reason} (HTTP {error.status_code})."


def _find(client: Any, server_url: str | None, name_or_id: str | None) -> Any:
    if name_or_id:
        return client.containers.get(name_or_id)
    port = _port(server_url)
    running = [c for c in client.containers.list(ignore_removed=True) if _is_triton(c.attrs)]
    if len(running) == 1:
        return running[0]
    if running:
        serving = [c for c in running if port is not None and _serves(c.attrs, port)]
        if len(serving) == 1:
            return serving[0]
        names = ", ".join(sorted(c.name for c in running))
        which = (
            f"none publishes port {port}" if port is not None and not serving
            else f"{len(serving)} publish port {port}" if port is not None
            else "no server URL was given to choose by"
        )
        raise SourceUnavailable(
            f"Docker: several running containers run tritonserver ({names}) and {which}; "
            "name the one to inspect."
        )
    # No server is running: the one that stopped last is the one to explain (OOM kill, crash).
    stopped = [c for c in client.containers.list(all=True, ignore_removed=True)
               if _is_triton(c.attrs)]
    if not stopped:
        raise SourceUnavailable(
            "Docker: no container runs tritonserver (none mentions it in its image, command, "
            "environment or labels); name the container to inspect."
        )
    serving = [c for c in stopped if port is not None and _serves(c.attrs, port)]
    return max(serving or stopped, key=lambda c: c.attrs.get("State", {}).get("StartedAt", ""))


def _port(server_url: str | None) -> int | None:
    """The port the server URL means (its scheme's default when it writes none); None when
    there is no URL or its port is not a number."""
    if not server_url:
        return None
    try:
        return split_url(server_url).port
    except ValueError:
        return None


def _is_triton(attrs: dict[str, Any]) -> bool:
    """Whether the image, command, environment or labels say this container runs Triton."""
    config = attrs.get("Config") or {}
    command = [attrs.get("Path") or "", *(attrs.get("Args") or [])]
    return (
        "tritonserver" in (config.get("Image") or "")
        or TRITON_LABEL in (config.get("Labels") or {})
        or any(entry.startswith(TRITON_ENV) for entry in config.get("Env") or [])
        or any("tritonserver" in word for word in command)
    )


def _serves(attrs: dict[str, Any], port: int) -> bool:
    """Whether the container publishes ``port`` on the host, or listens on it (host network)."""
    host_config = attrs.get("HostConfig") or {}
    published = [
        *((attrs.get("NetworkSettings") or {}).get("Ports") or {}).values(),
        *(host_config.get("PortBindings") or {}).values(),
    ]
    if any(binding.get("HostPort") == str(port)
           for bindings in published for binding in bindings or []):
        return True
    return host_config.get("NetworkMode") == "host" and port in _listening_ports(
        attrs.get("Args") or [])


def _listening_ports(args: list[str]) -> set[int]:
    """The ports tritonserver's arguments ask for (``--http-port=8010`` or ``--http-port 8010``)."""
    ports = dict(DEFAULT_PORTS)
    for at, arg in enumerate(args):
        option, _, value = arg.partition("=")
        if option in ports:
            if not value and at + 1 < len(args):
                value = args[at + 1]
            if value.isdigit():
                ports[option] = int(value)
    return set(ports.values())


def _describe(container: Any, failures: tuple[type[Exception], ...]) -> ContainerEvidence:
    attrs = container.attrs
    config = attrs.get("Config") or {}
    host_config = attrs.get("HostConfig") or {}
    state = attrs.get("State") or {}
    env = dict(entry.partition("=")[::2] for entry in config.get("Env") or [])
    evidence = ContainerEvidence(
        id=attrs.get("Id", ""),
        name=(attrs.get("Name") or "").lstrip("/"),
        image=config.get("Image") or "",
        release=env.get("NVIDIA_TRITON_SERVER_VERSION", ""),
        triton_version=env.get("TRITON_SERVER_VERSION", ""),
        status=state.get("Status", ""),
        shm_size_bytes=host_config.get("ShmSize"),
        gpu_requests=_gpu_requests(host_config, env),
        mounts=[_mount(mount) for mount in attrs.get("Mounts") or []],
        restart_count=attrs.get("RestartCount") or 0,
        oom_killed=bool(state.get("OOMKilled")),
        started_at=state.get("StartedAt") or "",
    )
    if not evidence.image or evidence.image.startswith("sha256:"):
        # Run from an image id: the image's tags name it, when it still has any.
        try:
            evidence.image = ", ".join(container.image.tags) or evidence.image
        except failures as error:
            evidence.errors["image"] = str(error)
    try:
        log = container.logs(tail=LOG_LINES)
    except failures as error:
        evidence.errors["log"] = str(error)
    else:
        evidence.log_tail = log.decode("utf-8", errors="replace").splitlines()
    return evidence


def _gpu_requests(host_config: dict[str, Any], env: dict[str, str]) -> list[str]:
    """``--gpus`` requests and the legacy nvidia runtime, in words."""
    words = []
    for request in host_config.get("DeviceRequests") or []:
        capabilities = [c for group in request.get("Capabilities") or [] for c in group]
        if "gpu" not in capabilities and request.get("Driver") != "nvidia":
            continue
        ids = request.get("DeviceIDs")
        count = request.get("Count") or 0
        if ids:
            words.append(f"{'GPUs' if len(ids) > 1 else 'GPU'} {','.join(ids)}")
        elif count < 0:
            words.append("all GPUs")
        else:
            words.append(f"{count} {'GPU' if count == 1 else 'GPUs'}")
    if host_config.get("Runtime") == "nvidia":
        # The nvidia runtime exposes what NVIDIA_VISIBLE_DEVICES names, and nothing without it.
        visible = env.get("NVIDIA_VISIBLE_DEVICES")
        words.append("runtime nvidia" + (f" (NVIDIA_VISIBLE_DEVICES={visible})"
                                         if visible is not None else ""))
    return words


def _mount(mount: dict[str, Any]) -> str:
    source = mount.get("Source") or mount.get("Name") or mount.get("Type", "")
    return f"{source} -> {mount.get('Destination', '')} ({'rw' if mount.get('RW') else 'ro'})"
