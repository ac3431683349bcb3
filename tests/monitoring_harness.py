"""Real Prometheus, Alertmanager and triton-doctor exporter processes for the alerting tests,
each on a free loopback port with its storage in a temporary directory, and a receiver that
records what Alertmanager delivers.

Prometheus and Alertmanager are Debian's packages (``prometheus``, ``prometheus-alertmanager``),
which scripts/test.sh installs; ``binary`` answers where each is, or None.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.server_harness import _free_port

#: What each part is called where Debian installs it.
BINARIES = {"prometheus": "prometheus", "promtool": "promtool",
            "alertmanager": "prometheus-alertmanager", "amtool": "amtool"}


def binary(part: str) -> str | None:
    return shutil.which(BINARIES[part])


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def wait_until(condition: Callable[[], Any], timeout: float, what: str,
               every: float = 0.25) -> Any:
    """The first true value of ``condition()``; TimeoutError naming ``what`` otherwise. An
    OSError (not up yet) counts as false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


class Service:
    """A process started on a free port, stopped (and reaped) by :meth:`stop`."""

    def __init__(self, name: str, command: list[str], workdir: Path, ready_path: str,
                 port: int) -> None:
        self.name = name
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = workdir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=workdir)
        try:
            wait_until(lambda: self._up(ready_path), 60, f"{name} ready")
        except BaseException:
            self.stop()
            raise

    def _up(self, path: str) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited ({self.process.returncode}):\n"
                               f"{self.log()[-3000:]}")
        return bool(get(self.url + path, timeout=2))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        _end(self.process)


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it is still running 15 s later; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def start_prometheus(config: str, workdir: Path) -> Service:
    """``config``: prometheus.yml's text; rule files it names are relative to ``workdir``."""
    (workdir / "prometheus.yml").write_text(config)
    port = _free_port()
    command = [binary("prometheus") or "prometheus", "--config.file=prometheus.yml",
               f"--storage.tsdb.path={workdir / 'tsdb'}",
               f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    return Service("prometheus", command, workdir, "/-/ready", port)


def start_alertmanager(config: str, workdir: Path) -> Service:
    (workdir / "alertmanager.yml").write_text(config)
    port = _free_port()
    command = [binary("alertmanager") or "prometheus-alertmanager",
               "--config.file=alertmanager.yml", f"--storage.path={workdir / 'am-data'}",
               f"--web.listen-address=127.0.0.1:{port}",
               "--cluster.listen-address=",  # one instance: no gossip port to collide on
               "--log.level=warn"]
    return Service("alertmanager", command, workdir, "/-/ready", port)


class Exporter:
    """``triton-doctor exporter ARGS --listen 127.0.0.1:0``; the port it chose is read from
    the line it says on stderr."""

    def __init__(self, *args: str, workdir: Path) -> None:
        self.stderr_path = workdir / "exporter.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "triton_doctor", "exporter", *args,
             "--listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr)
        try:
            self.url = wait_until(self._serving, 30, "the exporter serving")
        except BaseException:
            self.stop()
            raise

    def _serving(self) -> str | None:
        if self.process.poll() is not None:
            raise RuntimeError(f"the exporter exited ({self.process.returncode}): "
                               f"{self.stderr()}")
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)/metrics", self.stderr())
        return found.group(1) if found else None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def metrics(self) -> str:
        return get(self.url + "/metrics").decode()

    def stop(self) -> int | None:
        _end(self.process)
        self._stderr.close()
        return self.process.returncode


class Receiver(ThreadingHTTPServer):
    """Records each JSON body POSTed to it, by path (Alertmanager's webhook and Slack
    deliveries)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.received: list[tuple[str, Any]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Recording)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def bodies(self, path: str) -> list[Any]:
        with self.lock:
            return [body for where, body in self.received if where == path]

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Recording(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"null")
        with self.server.lock:
            self.server.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what was received."""


def series(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of ``name`` in a Prometheus text page: (labels, value)."""
    found = []
    for line in text.splitlines():
        match = re.match(rf"{re.escape(name)}\{{(.*)\}} (\S+)$", line)
        if match:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(1)))
            found.append((labels, float(match.group(2))))
    return found
