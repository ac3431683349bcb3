"""The host collector on the real /dev/shm and /proc: files held by live processes, orphans,
and a real tritonserver's Python-backend stub region."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from triton_doctor.checks import host
from triton_doctor.checks.host import collect_host, listening_servers
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import HostEvidence, ShmSegment, from_jsonable, to_jsonable

from tests.conftest import StartServer
from tests.helpers import GOOD_CONFIG, write_model

pytestmark = pytest.mark.skipif(not Path("/dev/shm").is_dir() or not Path("/proc").is_dir(),
                                reason="needs Linux's /dev/shm and /proc")

#: A child that creates a /dev/shm file, then maps it, holds it open, or exits.
CREATOR = """
import mmap, os, sys
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
os.write(fd, b"x" * 8192)  # written, not truncated: a sparse file would occupy no space
if how == "map":
    region = mmap.mmap(fd, 8192)
    os.close(fd)
print("ready", flush=True)
if how != "exit":
    sys.stdin.read()
"""


@pytest.fixture
def shm_name() -> Iterator[str]:
    """A fresh name in /dev/shm, removed afterwards."""
    name = f"tdoctor-test-{uuid.uuid4()}"
    yield name
    with contextlib.suppress(FileNotFoundError):
        (Path("/dev/shm") / name).unlink()


def create(name: str, how: str) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", CREATOR, f"/dev/shm/{name}", how],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    return child


def segment(evidence: HostEvidence, name: str) -> ShmSegment:
    (found,) = [s for s in evidence.segments if s.name == name]
    return found


@pytest.mark.parametrize("how", ["map", "open"])
def test_a_live_holder_is_the_owner(shm_name: str, how: str) -> None:
    child = create(shm_name, how)
    try:
        evidence = collect_host()
    finally:
        child.communicate("")
    assert segment(evidence, shm_name) == ShmSegment(shm_name, 8192, [child.pid], False)
    assert evidence.dev_shm_total_bytes >= evidence.dev_shm_used_bytes > 0


def test_a_file_whose_creator_exited_has_no_owner(shm_name: str) -> None:
    create(shm_name, "exit").wait()
    assert segment(collect_host(), shm_name).owner_pids == []


def test_a_leaked_stub_region_is_named_as_one() -> None:
    """What a SIGKILLed server leaves with the Python backend's default region prefix."""
    name = f"triton_python_backend_shm_region_{uuid.uuid4()}"
    try:
        create(name, "exit").wait()
        assert segment(collect_host(), name) == ShmSegment(name, 8192, [], True)
    finally:
        (Path("/dev/shm") / name).unlink()


def test_real_server_stub_region(triton_server: StartServer, tmp_path: Path) -> None:
    write_model(tmp_path / "repo", "python_model", GOOD_CONFIG)
    server = triton_server(tmp_path / "repo")
    assert server.process is not None
    evidence = collect_host()
    # One stub per instance; its region is named by the harness's shm-region-prefix-name,
    # so only the stub's command line tells that it is a Python-backend region.
    (region,) = [s for s in evidence.segments if s.name.startswith(server.shm_prefix)]
    assert region.python_backend
    assert region.size_bytes == 1024 * 1024  # shm-default-byte-size
    stub = psutil.Process(server.process.pid).children()[0]
    assert Path(stub.cmdline()[0]).name == "triton_python_backend_stub"
    assert stub.cmdline()[2] == region.name
    assert region.owner_pids == sorted([server.process.pid, stub.pid])
    assert server.process.pid in evidence.server_pids
    assert stub.pid not in evidence.server_pids
    assert evidence.server_rss_bytes is not None
    assert evidence.server_rss_bytes > 0

    given = collect_host(server_pids=[server.process.pid])
    assert given.server_pids == [server.process.pid]
    assert given.server_rss_bytes is not None
    assert given.server_rss_bytes > 0
    assert given.server_started_at == psutil.Process(server.process.pid).create_time()


def test_without_dev_shm_the_part_is_unavailable(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(host, "SHM_DIR", tmp_path / "absent")
    with pytest.raises(SourceUnavailable, match="absent does not exist on this machine"):
        collect_host()


def test_unreadable_processes_make_owners_incomplete(monkeypatch: pytest.MonkeyPatch,
                                                     shm_name: str) -> None:
    child = create(shm_name, "map")

    def denied(pid: int, device: int) -> set[tuple[int, int]]:
        raise PermissionError(13, "Permission denied")

    try:
        monkeypatch.setattr(host, "_held_files", denied)
        evidence = collect_host()
    finally:
        child.communicate("")
    assert not evidence.owners_complete
    assert segment(evidence, shm_name).owner_pids == []


def test_the_process_scan_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "MAX_PROCESSES", 1)
    assert not collect_host().owners_complete


def test_evidence_round_trips_through_json(shm_name: str) -> None:
    child = create(shm_name, "map")
    try:
        evidence = collect_host()
    finally:
        child.communicate("")
    assert from_jsonable(HostEvidence, json.loads(json.dumps(to_jsonable(evidence)))) == evidence


def test_the_server_listening_on_the_port_is_the_one_judged(
        triton_server: StartServer, tmp_path: Path) -> None:
    """Two servers on one host: uptime and memory are those of the one at --url."""
    write_model(tmp_path / "a", "python_model", GOOD_CONFIG)
    write_model(tmp_path / "b", "python_model", GOOD_CONFIG)
    first, second = triton_server(tmp_path / "a"), triton_server(tmp_path / "b")
    assert first.process is not None and second.process is not None
    assert collect_host().server_started_at is None  # two servers: whose uptime?
    pids = listening_servers(second.http_port)
    assert pids == [second.process.pid]
    evidence = collect_host(pids)
    assert evidence.server_started_at == psutil.Process(second.process.pid).create_time()


def test_a_port_nobody_listens_on_names_no_server() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert listening_servers(port) is None
