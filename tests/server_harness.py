"""Run the real ``tritonserver`` bundled in the ``nvidia-pytriton`` wheel, for tests.

The wheel carries a working Triton Inference Server (2.51.0) with the Python backend. It runs
on a CPU-only machine, which makes it the oracle for triton-doctor: whatever the real server
refuses, the linter should refuse too, in the server's own words.

Why the details below matter:

* ``pytriton`` is never imported: installed with ``--no-deps`` its import fails, and only its
  files are needed. It is located with :func:`importlib.util.find_spec`.
* The server tree is copied once per session and the Python backend stub for the running
  interpreter is put at ``backends/python/triton_python_backend_stub``, as PyTriton does.
  The copy loses the binary's RPATH, so ``nvidia_pytriton.libs`` goes on ``LD_LIBRARY_PATH``.
* The interpreter's own ``LIBDIR`` must come first on ``LD_LIBRARY_PATH``: otherwise the stub
  may load a system ``libpython`` of another patch release with this interpreter's stdlib.
* The stub finds its site-packages (numpy) through ``python3`` on ``PATH``, so the running
  environment's ``bin`` goes first.
* Every server serves a temporary copy of the repository, because the stub writes
  ``__pycache__`` next to ``model.py``.
* A Python model stuck in LOADING never finishes a graceful shutdown, so stopping ends with
  SIGKILL to the whole process group, and leftover ``/dev/shm`` regions are removed by prefix;
  so is the Python backend's ``/tmp/python_env_*`` directory, which a graceful exit removes.
* A server dies with the process that started it (PR_SET_PDEATHSIG), so a killed test run
  leaves none running in its own session.
* No GPU is visible to it: the tests compare with a CPU-only server.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from triton_doctor.triton.profiles import BACKENDS_DIR

__all__ = [
    "LoadResult",
    "ServerExitedError",
    "ServerInstall",
    "TritonServer",
    "locate_server_tree",
]

SHM_DIR = Path("/dev/shm")
"""Where the Python backend creates its shared-memory regions (one per stub)."""

PYTHON_ENV_DIRS = Path("/tmp")
"""Where the Python backend makes ``python_env_XXXXXX`` when it initializes (pb_env.cc's
mkdtemp: a fixed template, no pid); only a graceful exit removes it."""


def _python_envs() -> set[Path]:
    return set(PYTHON_ENV_DIRS.glob("python_env_*"))


def _python_backend_running(excluding: int) -> bool:
    """Whether a live ``tritonserver`` other than ``excluding`` has the Python backend loaded,
    and may own a ``python_env`` directory (nothing tells whose a directory is)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == excluding:
            continue
        with contextlib.suppress(OSError):
            if (proc / "comm").read_text().strip() != "tritonserver":
                continue
            if "libtriton_python.so" in (proc / "maps").read_text():
                return True
    return False


PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>."""


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` giving the child SIGKILL when its parent dies (Linux prctl), so a
    killed test run leaves no server behind; None elsewhere.

    prctl is resolved here, in the parent: the child, forked from a threaded process, only
    calls it. The signal comes when the *thread* that started the child ends, so start
    servers from a thread that outlives them (the main thread does)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return set_death_signal


class ServerExitedError(RuntimeError):
    """The server process ended while it was expected to be running."""


def locate_server_tree() -> Path | None:
    """Return ``<site-packages>/pytriton/tritonserver`` if the wheel is installed, else None.

    Uses :func:`importlib.util.find_spec` because importing ``pytriton`` fails when the wheel
    was installed without its dependencies, and runs package code this module does not need.
    """
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    tree = Path(next(iter(spec.submodule_search_locations))) / "tritonserver"
    if not (tree / "bin" / "tritonserver").is_file():
        return None
    return tree


@dataclass(frozen=True)
class ServerInstall:
    """A private, runnable copy of the server tree and the environment it needs."""

    root: Path
    env: dict[str, str]

    @property
    def binary(self) -> Path:
        return self.root / "bin" / "tritonserver"

    @property
    def backend_directory(self) -> Path:
        return self.root / "backends"

    @property
    def cache_directory(self) -> Path:
        return self.root / "caches"

    @classmethod
    def prepare(cls, tree: Path, dest: Path) -> ServerInstall:
        """Copy ``tree`` (from :func:`locate_server_tree`) to ``dest`` and build its env.

        Copying (about 30 MB, well under a second) keeps the installed wheel untouched: the
        stub has to be placed inside the backend directory, which we must not do in
        site-packages.
        """
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        stub = tree / "python_backend_stubs" / version / "triton_python_backend_stub"
        if not stub.is_file():
            raise FileNotFoundError(f"no Python backend stub for Python {version}: {stub}")
        dest.mkdir(parents=True, exist_ok=True)
        for part in ("bin", "backends", "caches"):
            shutil.copytree(tree / part, dest / part, symlinks=True)
        shutil.copy2(stub, dest / "backends" / "python" / "triton_python_backend_stub")
        return cls(root=dest, env=_server_environment(tree))


def _server_environment(tree: Path) -> dict[str, str]:
    """The two environment fixes the bundled server needs on a pyenv/venv Python, and no GPU."""
    env = dict(os.environ)
    libs = tree.parent.parent / "nvidia_pytriton.libs"
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ld_path = [p for p in (libdir, str(libs), env.get("LD_LIBRARY_PATH", "")) if p]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(ld_path)
    # Not resolved: a venv's bin/python is a symlink, and its directory is what we want.
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in (bindir, env.get("PATH", "")) if p)
    # The tests compare with a CPU-only server (SERVER_TARGET says --gpus 0). The wheel bundles
    # libcudart, so on a GPU machine KIND_GPU and `gpus: [0]` would load, and check's errors
    # for them would read as false errors: every machine shows the server no GPU.
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _free_port() -> int:
    """A loopback port that is free now (the server binds it shortly after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LoadResult:
    """The answer to ``POST /v2/repository/models/<m>/load``."""

    model: str
    status: int
    """HTTP status; 0 when the request timed out or the connection failed."""
    error: str | None
    """The ``error`` field of the JSON body (or the raw body, or the client error)."""
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == 200


class TritonServer:
    """One ``tritonserver`` process serving a temporary copy of a model repository.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. ``args`` are extra
    command-line options, e.g. ``"--model-control-mode=explicit"``.
    """

    def __init__(
        self,
        install: ServerInstall,
        repository: Path,
        workdir: Path,
        *args: str,
        wait_for: str | None = "/v2/health/ready",
        startup_timeout: float = 60.0,
    ) -> None:
        self.install = install
        self.repository = Path(repository)
        self.workdir = Path(workdir)
        self.args = args
        self.wait_for = wait_for
        self.startup_timeout = startup_timeout
        self.served_repository = self.workdir / "repository"
        self.log_path = self.workdir / "server.log"
        self.shm_prefix = f"tdoctor{os.getpid()}x{uuid.uuid4().hex[:8]}"
        self.http_port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._envs_before: set[Path] = set()

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def command(self) -> list[str]:
        return [
            str(self.install.binary),
            f"--model-repository={self.served_repository}",
            f"--backend-directory={self.install.backend_directory}",
            f"--cache-directory={self.install.cache_directory}",
            "--allow-grpc=false",
            "--http-address=127.0.0.1",
            f"--http-port={self.http_port}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={self.metrics_port}",
            "--exit-timeout-secs=5",
            f"--backend-config=python,shm-region-prefix-name={self.shm_prefix}",
            *self.args,
        ]

    def start(self) -> TritonServer:
        """Launch the server; with ``wait_for`` set, return once that URL and the metrics port
        answer 200.

        Raises :class:`ServerExitedError` (with the log tail) if the process exits first, and
        TimeoutError if it is not up within ``startup_timeout`` seconds.
        """
        if self.process is not None:
            raise RuntimeError("server already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.served_repository, ignore_errors=True)
        shutil.copytree(self.repository, self.served_repository, symlinks=True)
        if not self.http_port:  # a restart keeps its ports, as a restarted pod keeps its address
            self.http_port = _free_port()
            self.metrics_port = _free_port()
            while self.metrics_port == self.http_port:
                self.metrics_port = _free_port()
        self._envs_before = _python_envs()
        with self.log_path.open("wb") as log:
            # Own session: the stubs are in the server's process group and die with it. The
            # server dies with this process (the stubs notice their parent is gone).
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.install.env,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        if self.wait_for is not None:
            self._wait_until_up(self.wait_for)
        return self

    @property
    def serves_metrics(self) -> bool:
        return "--allow-metrics=false" not in self.args

    def _wait_until_up(self, path: str) -> None:
        """Wait for ``path`` and then for the metrics port: the server starts its metrics
        service after the HTTP one, so a test that scrapes at once could find it closed."""
        deadline = time.monotonic() + self.startup_timeout
        waiting = [self.http_url + path] + ([self.metrics_url] if self.serves_metrics else [])
        while time.monotonic() < deadline:
            rc = self.returncode()
            if rc is not None:
                tail = self.log_tail()
                self.stop()
                raise ServerExitedError(f"tritonserver exited with code {rc}:\n{tail}")
            with (
                contextlib.suppress(OSError, http.client.HTTPException),
                urllib.request.urlopen(waiting[0], timeout=1) as response,
            ):
                if response.status == 200:
                    waiting.pop(0)
                    if not waiting:
                        return
                    continue
            time.sleep(0.05)
        tail = self.log_tail()
        self.stop()
        raise TimeoutError(f"tritonserver not up after {self.startup_timeout} s:\n{tail}")

    def returncode(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return None if self.process is None else self.process.poll()

    def wait_exit(self, timeout: float) -> int | None:
        """Wait for the server to exit by itself; None if it is still running afterwards."""
        if self.process is None:
            raise RuntimeError("server not started")
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the whole group now, without waiting (safe in a signal handler); :meth:`stop`
        still reaps it and cleans up."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM, up to ``grace`` seconds, then SIGKILL the group; remove its shm regions
        and, after an exit that was not graceful, its ``python_env`` directory.

        A graceful exit takes a few seconds (``--exit-timeout-secs=5`` for the unloads, then
        the stubs); one with a model stuck loading never ends, so give it a short ``grace``.
        Safe to call more than once. Returns the exit code (negative for a signal).
        """
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
        # The group may outlive the server (stubs), even after a clean exit.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.wait(timeout=10)
        self._remove_shm()
        self._remove_python_envs()
        return proc.returncode

    def restart(self) -> TritonServer:
        """Stop, then start again on the same ports."""
        self.stop()
        self.process = None
        return self.start()

    def _remove_python_envs(self) -> None:
        """Remove the ``python_env`` directories made since this server started, when no
        other live server may own one: a graceful exit has removed this server's already."""
        made = _python_envs() - self._envs_before
        if not made or self.process is None or _python_backend_running(self.process.pid):
            return
        for path in made:
            shutil.rmtree(path, ignore_errors=True)

    def _remove_shm(self) -> None:
        if not SHM_DIR.is_dir():
            return
        for entry in SHM_DIR.iterdir():
            if entry.name.startswith(self.shm_prefix):
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()

    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def load(self, model: str, timeout: float = 30.0) -> LoadResult:
        """``POST /v2/repository/models/<model>/load`` (explicit model-control mode).

        The timeout matters: a Python model whose model file is missing never finishes
        loading, and the request would block forever.
        """
        started = time.monotonic()
        status, body = self.post(f"/v2/repository/models/{model}/load", b"", timeout)
        error: str | None = body or None
        with contextlib.suppress(ValueError, AttributeError):
            error = json.loads(body).get("error", error)
        return LoadResult(model, status, error, time.monotonic() - started)

    def post(self, path: str, data: bytes, timeout: float = 30.0) -> tuple[int, str]:
        """(HTTP status, body) of a POST; status 0 with the client's error when it failed."""
        request = urllib.request.Request(self.http_url + path, data=data, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as err:
            return 0, f"{type(err).__name__}: {err}"

    def get_json(self, path: str, timeout: float = 10.0) -> object:
        """GET (or POST for ``/v2/repository/index``) a JSON endpoint; raises on HTTP errors."""
        method = "POST" if path.startswith("/v2/repository/index") else "GET"
        data = b"" if method == "POST" else None
        request = urllib.request.Request(self.http_url + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")

    def log(self) -> str:
        """The whole server log so far (stdout and stderr together)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def to_source_paths(self, text: str) -> str:
        """Replace the served copy's path with the original repository's in ``text``, and
        this install's backend directory with the image's.

        Server messages quote file paths; the linter sees the original repository, and quotes
        the backend directory of the image it judges for (the default --backend-directory).
        """
        text = text.replace(str(self.served_repository), str(self.repository))
        return text.replace(str(self.install.backend_directory), BACKENDS_DIR)
