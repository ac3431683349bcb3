"""Files in and out: a FIFO, device or huge file where the tool reads, an open pipe as the log,
a file truncated while it is read, and ``-o`` onto things that are not regular files.

Every run is bounded in time (and in memory where the defect was memory); a hang shows as
``subprocess.TimeoutExpired``. Nothing under the repository may change, and special files
must still be special afterwards.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.live import LiveRequest
from triton_doctor.checks.logs import BLOCK_BYTES, LogFollower
from triton_doctor.checks.poll import Poller

from tests.helpers import GOOD_CONFIG, memory_limit, run_cli, tree_state, write_model
from tests.test_server_collector import HEALTHY, http_server

#: A run of the CLI on a small repository takes a second or two; a hang takes forever.
TIMEOUT_S = 60
#: Address-space limit for runs whose defect was reading a file without end.
MEMORY_BYTES = 1024 * 1024 * 1024
#: A model whose config has a plain error, to show the other models are still judged.
OTHER = GOOD_CONFIG.replace("TYPE_FP32", "TYPE_NOPE", 1)


def _run(*args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, bounded in time and address space."""
    proc = run_cli(*args, timeout=timeout, memory_bytes=MEMORY_BYTES)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


# --- reading: a FIFO wherever the tool opens a file ---------------------------------------

#: (config, where the FIFO goes, extra flags) per kind of file the tool opens in a model.
FIFO_PLACES = {
    "config.pbtxt": (None, "config.pbtxt", ()),
    "model.py": (GOOD_CONFIG, "1/model.py", ()),
    "model.onnx": ('backend: "onnxruntime"\n', "1/model.onnx", ()),
    "model.plan": ('platform: "tensorrt_plan"\n', "1/model.plan", ()),
    "model.pt": ('backend: "pytorch"\n', "1/model.pt", ()),
    "model.xml": ('backend: "openvino"\n', "1/model.xml", ()),
    "configs/NAME.pbtxt": (GOOD_CONFIG, "configs/prod.pbtxt", ("--model-config-name", "prod")),
}


@pytest.mark.parametrize("place", list(FIFO_PLACES))
def test_a_fifo_in_a_model_is_a_finding_not_a_hang(tmp_path: Path, place: str) -> None:
    config, relative, flags = FIFO_PLACES[place]
    model = write_model(tmp_path, "piped", config, files={})
    (model / relative).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(model / relative)
    write_model(tmp_path, "other", OTHER)
    before = tree_state(tmp_path)
    proc = _run("check", "--format", "json", *flags, str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert [f for f in findings if f["model"] == "piped" and "FIFO" in f["message"]], findings
    assert [f for f in findings if f["model"] == "other" and f["rule"] == "TD201"]
    assert tree_state(tmp_path) == before


def test_a_fifo_as_the_discovered_settings_file_is_not_waited_on(tmp_path: Path) -> None:
    write_model(tmp_path, "other", OTHER)
    os.mkfifo(tmp_path / ".triton-doctor.toml")
    before = tree_state(tmp_path)
    proc = _run("check", str(tmp_path))
    assert proc.returncode in (1, 2), proc.stderr
    assert tree_state(tmp_path) == before


def _special_or_huge(tmp_path: Path, kind: str, name: str) -> str:
    """A FIFO, a character device, or a sparse regular file of 2 GiB, named ``name``."""
    if kind == "device":
        return "/dev/zero"
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as handle:
            handle.truncate(2 * 1024**3)
    return str(path)


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
@pytest.mark.parametrize("flag", ["--config", "--snapshot"])
def test_settings_or_snapshot_file_that_is_not_one_is_a_usage_error(
        tmp_path: Path, flag: str, kind: str) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "other", OTHER)
    given = _special_or_huge(tmp_path, kind, "settings.toml" if flag == "--config" else "s.json")
    before = tree_state(tmp_path)
    proc = _run("check", flag, given, *([str(repo)] if flag == "--config" else []))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert given in proc.stderr
    expected = {"fifo": "FIFO", "device": "character device", "huge": "MiB"}[kind]
    assert expected in proc.stderr
    assert tree_state(tmp_path) == before


# --- reading: an ONNX file truncated while it is read ---------------------------------------

#: Runs the ONNX reader on argv[1] and truncates the file to 4 KiB once the reader has started,
#: whichever way it reads (a memory map, or reads at offsets).
TRUNCATE_WHILE_READING = """
import mmap, os, sys
path = sys.argv[1]
real_map, real_pread = mmap.mmap, os.pread
def truncate():
    os.truncate(path, 4096)
def mapped(*args, **kwargs):
    result = real_map(*args, **kwargs)
    truncate()
    return result
def pread(fd, count, offset):
    data = real_pread(fd, count, offset)
    truncate()
    return data
mmap.mmap, os.pread = mapped, pread
from triton_doctor.checks.formats.onnx import read_onnx
print(read_onnx(path).problem)
"""


def test_an_onnx_file_truncated_while_read_is_a_finding_not_sigbus(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from fixtures.generate import onnx_models

    path = tmp_path / "model.onnx"
    onnx_models.build(str(path), [("x", "FLOAT", [4])], [("y", "FLOAT", [4])],
                      initializer_bytes=1024 * 1024)
    proc = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_READING, str(path)],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
                          preexec_fn=memory_limit(MEMORY_BYTES))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "changed while it was read" in proc.stdout


# --- reading: the log on a pipe its writer keeps open -----------------------------------------

@pytest.fixture
def server() -> Iterator[str]:
    """Just enough of a healthy Triton (and its metrics page) for ``snapshot --url``."""
    routes = {**HEALTHY, "GET /metrics": (200, b"# TYPE nv_cpu_utilization gauge\n"
                                               b"nv_cpu_utilization 0.5\n")}
    with http_server(routes) as url:
        yield url


def _snapshot(server: str, output: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run("snapshot", "--url", server, "--metrics-url", f"{server}/metrics",
                "--window", "0.1", "--timeout", "2", *extra, "-o", output)


def test_a_log_pipe_left_open_is_read_until_the_timeout(tmp_path: Path, server: str) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never closes, as `kubectl logs -f`
    try:
        os.write(writer, b"I1201 12:00:00.000 1 server.cc:1] Started\n" * 3)
        proc = _snapshot(server, str(tmp_path / "out.json"), "--log", str(fifo))
    finally:
        os.close(writer)
    assert proc.returncode == 0, proc.stderr
    log = json.loads((tmp_path / "out.json").read_text())["evidence"]["log"]
    assert len(log["lines"]) == 3
    assert "cut off" in log["source"]


def _timed_poll(poller: Poller) -> tuple[float, list[str], str]:
    """(seconds the poll took, the log lines it shows, their source)."""
    started = time.monotonic()
    log = poller.poll().log
    assert log is not None
    return time.monotonic() - started, log.lines, log.source


def test_watch_follows_a_log_pipe_without_waiting_on_it(tmp_path: Path, server: str) -> None:
    """``watch --log <(kubectl logs -f pod)``: each poll takes what the pipe holds now, onto a
    tail kept across polls; none waits --timeout for a writer that never closes."""
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    all_rules()  # the follower's scan looks for the words the registered rules declare
    before = tree_state(tmp_path)
    poller = Poller(LiveRequest(server, f"{server}/metrics", window_s=0.1, timeout_s=5.0,
                                log_path=str(fifo)))
    writer = os.open(fifo, os.O_RDWR)  # a writer that stays, as `kubectl logs -f`
    try:
        os.write(writer, b"I1201 first\n")
        first = _timed_poll(poller)
        os.write(writer, b"I1201 second\nI1201 thi")
        second = _timed_poll(poller)
        os.write(writer, b"rd\n")
        third = _timed_poll(poller)
    finally:
        os.close(writer)
    ended = _timed_poll(poller)
    assert all(took < 2.0 for took, _, _ in (first, second, third, ended))
    assert first[1] == ["I1201 first"]
    assert second[1] == ["I1201 first", "I1201 second"]  # "I1201 thi" waits for its newline
    assert third[1] == ended[1] == ["I1201 first", "I1201 second", "I1201 third"]
    assert "closed" not in third[2] and "closed" in ended[2]
    assert tree_state(tmp_path) == before


def test_a_followed_pipe_keeps_a_rolling_tail_of_its_lines(tmp_path: Path) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    all_rules()  # the follower's scan looks for the words the registered rules declare
    follower = LogFollower(str(fifo), max_lines=2)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a full pipe fails the test, not hangs
    try:
        assert follower.read().lines == []
        for at in range(5):
            os.write(writer, f"line {at}\n".encode())
            lines = follower.read().lines
        for _ in range(5):  # one line of 2.5 blocks, a pipe's capacity at a time
            os.write(writer, b"x" * (BLOCK_BYTES // 2))
            longest = follower.read().lines
    finally:
        os.close(writer)
    assert lines == ["line 3", "line 4"]
    # A line still being written waits for its newline (bounded: a megabyte is cut into lines).
    assert longest == ["line 3", "line 4"]


# --- writing: -o never replaces what is not a regular file -----------------------------------

def _read_all(fifo: Path, into: list[bytes]) -> None:
    """Wait for a writer to open ``fifo``, then read it until the writer closes it."""
    with open(fifo, "rb") as reading:
        into.append(reading.read())


def test_output_onto_a_character_device_writes_through(tmp_path: Path, server: str) -> None:
    if os.geteuid() == 0:  # a private /dev/null: a regression must not break the machine's
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:  # /dev is not writable, so a regression cannot replace /dev/null
        device = Path("/dev/null")
    proc = _snapshot(server, str(device))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(device.lstat().st_mode)
    assert os.listdir(tmp_path) == (["null"] if os.geteuid() == 0 else [])


def test_output_onto_standard_output_writes_to_it(server: str) -> None:
    proc = _snapshot(server, "/dev/fd/1")  # /dev/stdout's target; see the device test
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "triton-doctor/snapshot/v1"


def test_output_onto_a_fifo_with_a_reader_writes_into_it(tmp_path: Path, server: str) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before the run
    received: list[bytes] = []
    draining = threading.Thread(target=_read_all, args=(fifo, received), daemon=True)
    draining.start()
    try:
        proc = _snapshot(server, str(fifo))
    finally:
        draining.join(timeout=TIMEOUT_S)
        os.close(reader)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(b"".join(received))["schema"] == "triton-doctor/snapshot/v1"


def test_output_onto_a_fifo_without_a_reader_is_a_usage_error(tmp_path: Path,
                                                              server: str) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    before = tree_state(tmp_path)
    proc = _snapshot(server, str(fifo))
    assert proc.returncode == 2, proc.stderr
    assert str(fifo) in proc.stderr and "no process reads" in proc.stderr
    assert tree_state(tmp_path) == before


def test_output_through_a_symbolic_link_keeps_the_link(tmp_path: Path, server: str) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(target.name)
    proc = _snapshot(server, str(link))
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(link) == target.name
    assert json.loads(target.read_text())["schema"] == "triton-doctor/snapshot/v1"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.json", "real.json"]


def test_output_onto_a_regular_file_replaces_it_keeping_its_mode(tmp_path: Path,
                                                                 server: str) -> None:
    output = tmp_path / "snap.json"
    output.write_text("old")
    output.chmod(0o644)
    proc = _snapshot(server, str(output))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(output.read_text())["schema"] == "triton-doctor/snapshot/v1"
    assert stat.S_IMODE(output.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["snap.json"]


def test_output_onto_a_dangling_link_or_a_directory_is_a_usage_error(tmp_path: Path,
                                                                     server: str) -> None:
    (tmp_path / "dangling.json").symlink_to("missing.json")
    (tmp_path / "dir.json").mkdir()
    before = tree_state(tmp_path)
    for name, why in (("dangling.json", "symbolic link to a missing file"),
                      ("dir.json", "directory")):
        proc = _snapshot(server, str(tmp_path / name))
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr.lower()
    assert tree_state(tmp_path) == before
