"""The Docker collector, on recorded-shaped ``docker inspect`` data and the real SDK's models.

There is no Docker daemon here: ``docker.from_env`` is replaced by a fake client whose
containers are the SDK's own ``Container`` objects built on the JSON in
``fixtures/recorded/docker/``, so ``.name``, ``.attrs``, ``.image`` and ``.logs`` behave as
they do against a daemon. The no-daemon path is also run for real.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
import pytest
import requests
from docker.models.containers import Container
from docker.models.images import Image
from triton_doctor.checks.container import collect_container
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import ContainerEvidence, from_jsonable, to_jsonable

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "recorded" / "docker"
HEALTHY, OOM, PROMETHEUS = ("triton-24.08-gpus-all", "triton-24.08-oom-killed", "prometheus")
#: What ``docker logs`` prints for the recorded containers, by container name.
LOGS = {"/triton": f"{HEALTHY}.log", "/triton-llm": f"{OOM}.log"}
IMAGE_ID = "sha256:7c1e3b5a9d2f4e6081a3c5b7d9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7"


def inspect(name: str) -> dict[str, Any]:
    """The one object of a recorded ``docker inspect`` array: what ``Container.attrs`` holds."""
    (attrs,) = json.loads((RECORDED / f"{name}.json").read_text())
    return dict(attrs)


def api_error(status: int, explanation: str) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    cls = docker.errors.NotFound if status == 404 else docker.errors.APIError
    return cls(f"{status} Client Error", response=response, explanation=explanation)


class FakeClient:
    """What ``docker.from_env()`` returns, for the calls the collector makes."""

    def __init__(self, *containers: dict[str, Any], list_error: Exception | None = None,
                 log_error: Exception | None = None) -> None:
        self.inspects = list(containers)
        self.list_error = list_error
        self.log_error = log_error
        self.containers = self
        self.api = self
        self.images = SimpleNamespace(get=self._image)

    def list(self, all: bool = False, ignore_removed: bool = False, **_: Any) -> list[Container]:
        if self.list_error is not None:
            raise self.list_error
        # Without all=True the daemon lists running (and paused, restarting) containers only.
        return [Container(attrs, self, self) for attrs in self.inspects
                if all or attrs["State"]["Status"] in ("running", "paused", "restarting")]

    def get(self, container_id: str) -> Container:
        for attrs in self.inspects:
            if container_id in (attrs["Name"], attrs["Name"].lstrip("/")) or attrs[
                    "Id"].startswith(container_id):
                return Container(attrs, self, self)
        raise api_error(404, f"No such container: {container_id}")

    def logs(self, container_id: str, tail: int | str = "all", **_: Any) -> bytes:
        if self.log_error is not None:
            raise self.log_error
        attrs = next(a for a in self.inspects if a["Id"] == container_id)
        recorded = LOGS.get(attrs["Name"])
        lines = (RECORDED / recorded).read_bytes().splitlines(keepends=True) if recorded else []
        return b"".join(lines[-int(tail):] if tail != "all" else lines)

    def _image(self, image_id: str) -> Image:
        return Image({"Id": f"sha256:{image_id}",
                      "RepoTags": ["nvcr.io/nvidia/tritonserver:24.08-py3"]})


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(client: FakeClient | Exception) -> None:
        def from_env(**_: Any) -> FakeClient:
            if isinstance(client, Exception):
                raise client
            return client
        monkeypatch.setattr(docker, "from_env", from_env)
    return install


def test_healthy_server_found_among_other_containers(use: Any) -> None:
    use(FakeClient(inspect(PROMETHEUS), inspect(HEALTHY)))
    evidence = collect_container("http://localhost:8000", None)
    assert evidence.id == inspect(HEALTHY)["Id"]
    assert evidence.name == "triton"
    assert evidence.image == "nvcr.io/nvidia/tritonserver:24.08-py3"
    assert (evidence.release, evidence.triton_version) == ("24.08", "2.49.0")
    assert evidence.status == "running"
    assert evidence.shm_size_bytes == 1024**3
    assert evidence.gpu_requests == ["all GPUs"]
    assert evidence.mounts == ["/srv/triton/models -> /models (ro)"]
    assert (evidence.restart_count, evidence.oom_killed) == (0, False)
    assert evidence.started_at == "2024-09-03T10:12:42.027336544Z"
    assert evidence.log_tail[-1].endswith('"Started Metrics Service at 0.0.0.0:8002"')
    assert "Triton Server Version 2.49.0" in evidence.log_tail
    assert evidence.errors == {}


def test_oom_killed_server_found_when_none_runs(use: Any) -> None:
    use(FakeClient(inspect(PROMETHEUS), inspect(OOM)))
    evidence = collect_container("localhost:9000", None)
    assert (evidence.name, evidence.status, evidence.oom_killed) == ("triton-llm", "exited", True)
    assert evidence.shm_size_bytes == 64 * 1024**2
    assert evidence.gpu_requests == ["GPUs 0,1"]
    assert evidence.mounts == ["/var/lib/docker/volumes/llm-models/_data -> /models (rw)"]
    assert "Started HTTPService at 0.0.0.0:8000" in evidence.log_tail[-2]


def test_a_running_server_wins_over_a_stopped_one(use: Any) -> None:
    use(FakeClient(inspect(OOM), inspect(HEALTHY)))
    assert collect_container(None, None).name == "triton"


def test_log_tail_asks_for_200_lines_and_decodes_leniently(
        use: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient(inspect(HEALTHY))
    asked: list[Any] = []

    def logs(container_id: str, **kwargs: Any) -> bytes:
        asked.append(kwargs)
        return b"".join(b"line %d \xff\r\n" % n for n in range(kwargs["tail"]))

    monkeypatch.setattr(client, "logs", logs)
    use(client)
    evidence = collect_container(None, None)
    assert asked == [{"tail": 200}]
    assert len(evidence.log_tail) == 200
    assert evidence.log_tail[-1] == "line 199 \N{REPLACEMENT CHARACTER}"


def second_server(port: str, name: str = "triton-b") -> dict[str, Any]:
    attrs = copy.deepcopy(inspect(HEALTHY))
    attrs["Id"], attrs["Name"] = "b" * 64, f"/{name}"
    attrs["HostConfig"]["PortBindings"] = {"8000/tcp": [{"HostIp": "", "HostPort": port}]}
    attrs["NetworkSettings"]["Ports"] = {"8000/tcp": [{"HostIp": "0.0.0.0", "HostPort": port}]}
    return attrs


def test_several_servers_chosen_by_published_port(use: Any) -> None:
    use(FakeClient(inspect(HEALTHY), second_server("8100")))
    assert collect_container("http://127.0.0.1:8100", None).name == "triton-b"
    assert collect_container("http://127.0.0.1:8000/", None).name == "triton"
    with pytest.raises(SourceUnavailable, match=r"\(triton, triton-b\) and none publishes port "
                       "7000; name the one"):
        collect_container("http://127.0.0.1:7000", None)
    with pytest.raises(SourceUnavailable, match="no server URL was given"):
        collect_container(None, None)


def test_host_network_server_chosen_by_its_port_argument(use: Any) -> None:
    host = second_server("0", "triton-host")
    host["HostConfig"].update(NetworkMode="host", PortBindings={})
    host["NetworkSettings"]["Ports"] = {}
    host["Args"] = ["tritonserver", "--model-repository=/models", "--http-port", "8100"]
    use(FakeClient(inspect(HEALTHY), host))
    assert collect_container("http://localhost:8100", None).name == "triton-host"
    # gRPC keeps its default port, 8001, which the bridged server publishes too.
    with pytest.raises(SourceUnavailable, match="2 publish port 8001"):
        collect_container("localhost:8001", None)


def test_explicit_name_or_id(use: Any) -> None:
    use(FakeClient(inspect(HEALTHY), inspect(OOM)))
    assert collect_container("http://localhost:8000", "triton-llm").oom_killed
    assert collect_container(None, inspect(HEALTHY)["Id"][:12]).name == "triton"
    with pytest.raises(SourceUnavailable, match="no container is named 'tritn'"):
        collect_container(None, "tritn")


@pytest.mark.parametrize("containers", [[], [PROMETHEUS]])
def test_no_triton_container(use: Any, containers: list[str]) -> None:
    use(FakeClient(*(inspect(name) for name in containers)))
    with pytest.raises(SourceUnavailable, match="no container runs tritonserver"):
        collect_container("http://localhost:8000", None)


def test_legacy_nvidia_runtime_and_image_id(use: Any) -> None:
    attrs = inspect(HEALTHY)
    attrs["HostConfig"].update(Runtime="nvidia", DeviceRequests=None)
    attrs["Config"]["Image"] = IMAGE_ID
    use(FakeClient(attrs))
    evidence = collect_container(None, None)
    assert evidence.gpu_requests == ["runtime nvidia (NVIDIA_VISIBLE_DEVICES=all)"]
    assert evidence.image == "nvcr.io/nvidia/tritonserver:24.08-py3"


def test_unreadable_log_is_an_error_entry(use: Any) -> None:
    reason = "configured logging driver does not support reading"
    use(FakeClient(inspect(HEALTHY), log_error=api_error(501, reason)))
    evidence = collect_container(None, None)
    assert evidence.log_tail == []
    assert reason in evidence.errors["log"]


@pytest.mark.parametrize(("error", "words"), [
    (docker.errors.DockerException(
        "Error while fetching server API version: ('Connection aborted.', "
        "FileNotFoundError(2, 'No such file or directory'))"),
     "cannot reach the Docker daemon (Error while fetching server API version"),
    (docker.errors.DockerException(
        "Error while fetching server API version: ('Connection aborted.', "
        "PermissionError(13, 'Permission denied'))"),
     "permission denied on the Docker socket"),
])
def test_daemon_unreachable(use: Any, error: Exception, words: str) -> None:
    use(error)
    with pytest.raises(SourceUnavailable) as caught:
        collect_container("http://localhost:8000", None)
    assert words in str(caught.value)


@pytest.mark.parametrize(("error", "words"), [
    (api_error(403, "authorization denied by plugin opa"), "denied permission (authorization"),
    (api_error(500, "Internal Server Error"), "refused the request: Internal Server Error"),
    (requests.exceptions.ConnectionError("Connection aborted."), "cannot reach the Docker"),
])
def test_daemon_errors_while_listing(use: Any, error: Exception, words: str) -> None:
    use(FakeClient(list_error=error))
    with pytest.raises(SourceUnavailable) as caught:
        collect_container(None, None)
    assert words in str(caught.value)


@pytest.mark.skipif(bool(os.environ.get("DOCKER_HOST")) or Path("/var/run/docker.sock").exists(),
                    reason="a Docker daemon may be reachable here")
def test_real_sdk_without_a_daemon() -> None:
    with pytest.raises(SourceUnavailable, match=r"cannot reach the Docker daemon .*DOCKER_HOST"):
        collect_container("http://localhost:8000", None)


def test_evidence_round_trips_through_json(use: Any) -> None:
    use(FakeClient(inspect(OOM)))
    evidence = collect_container(None, None)
    restored = from_jsonable(ContainerEvidence, json.loads(json.dumps(to_jsonable(evidence))))
    assert restored == evidence
