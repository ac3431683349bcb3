"""Shared fixtures: the real Triton server from the nvidia-pytriton wheel.

Tests that need the server depend on ``triton_install`` (directly or through
``triton_server``). Without the wheel they are skipped on a developer machine, but fail when
``CI`` is set: in CI the real-server oracle must never be silently switched off.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from triton_doctor.catalogue import all_rules

from tests.server_harness import ServerInstall, TritonServer, locate_server_tree

StartServer = Callable[..., TritonServer]


@pytest.fixture(scope="session", autouse=True)
def registered_rules() -> None:
    """Every rule registered, as every front-end lists them before it collects: a test that
    builds a collector (a log scan, a poller) by hand must not depend on another test module
    having listed them first."""
    all_rules()


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``check`` keeps its cache in the user's cache directory: the suite's runs (and the
    subprocesses they start) use one of their own, never the developer's."""
    directory = tmp_path_factory.mktemp("xdg-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(directory)
    yield directory
    if before is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = before


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def triton_install(tmp_path_factory: pytest.TempPathFactory) -> ServerInstall:
    """A private, runnable copy of the bundled tritonserver, made once per session."""
    tree = locate_server_tree()
    if tree is None:
        _missing(
            "real Triton server not available: "
            "pip install --no-deps nvidia-pytriton==0.7.0 (plus 'numpy<2')"
        )
    return ServerInstall.prepare(tree, tmp_path_factory.mktemp("tritonserver"))


@pytest.fixture(scope="session")
def triton_server(
    triton_install: ServerInstall, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StartServer]:
    """Factory: ``triton_server(repository, *args, wait_for=..., start=True)``.

    Each server serves a copy of ``repository`` from its own work directory. Every server
    made here is stopped (and its /dev/shm regions removed) at the end of the session, even
    if a test forgot to.
    """
    servers: list[TritonServer] = []

    def make(
        repository: Path,
        *args: str,
        wait_for: str | None = "/v2/health/ready",
        startup_timeout: float = 60.0,
        start: bool = True,
    ) -> TritonServer:
        server = TritonServer(
            triton_install,
            repository,
            tmp_path_factory.mktemp("server"),
            *args,
            wait_for=wait_for,
            startup_timeout=startup_timeout,
        )
        servers.append(server)
        return server.start() if start else server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A local port that accepts connections and never answers: a hung server."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()
