"""Collect the server's log: the last lines of a file (``--log``) or of the container's log.

A server log grows without bound, so a file is read backwards from its end in blocks and only
the tail is kept; a pipe (``--log <(kubectl logs pod)``) is read through, keeping the tail, until
its writer closes it or the deadline passes (``kubectl logs -f`` never closes it).
"""

from __future__ import annotations

import collections
import os
import select
import stat
import time
from typing import BinaryIO

from triton_doctor.checks.unavailable import SourceUnavailable, describe_os_error
from triton_doctor.evidence import ContainerEvidence, LogEvidence
from triton_doctor.safe_files import kind_of

BLOCK_BYTES = 64 * 1024
#: At most this much of a file's end is read, however long its lines.
MAX_TAIL_BYTES = 16 * 1024 * 1024
#: Share of control characters above which the bytes are not a text log.
MAX_CONTROL_SHARE = 0.05
#: Every byte but the control characters that do not occur in text logs (tab, newline,
#: carriage return and the ANSI escape do), for counting those with ``bytes.translate``.
NOT_CONTROL = bytes(b for b in range(256) if (b >= 0x20 and b != 0x7F) or b in b"\t\n\r\x1b")


def read_log(path: str, max_lines: int = 2000, seconds: float = 5.0) -> LogEvidence:
    """The last ``max_lines`` lines of the log at ``path``, a pipe read for at most ``seconds``
    (the live ``--timeout``); raises SourceUnavailable naming the path when it is missing,
    unreadable or not text."""
    source = path
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a device is never opened
            raise SourceUnavailable(
                f"cannot read the log {path}: {kind_of(mode)}, not a file or a pipe")
        # Non-blocking open: a pipe nobody writes to yet must not hang the doctor.
        with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK),
                  ) as file:
            mode = os.fstat(file.fileno()).st_mode
            if stat.S_ISREG(mode):
                data = _tail_of_file(file, max_lines)
            elif stat.S_ISFIFO(mode):
                data, cut_off = _tail_of_stream(file.fileno(), max_lines, seconds)
                if cut_off:
                    source = (f"{path} (cut off after {seconds:g} s with the pipe still open: "
                              "lines written later are not here)")
            else:  # swapped for something else since the stat above
                raise SourceUnavailable(
                    f"cannot read the log {path}: {kind_of(mode)}, not a file or a pipe")
    except OSError as error:
        raise SourceUnavailable(f"cannot read the log {path}: {describe_os_error(error)}") from None
    if data.startswith(b"\x1f\x8b"):
        raise SourceUnavailable(f"cannot read the log {path}: gzip-compressed; zcat it first")
    # Runs of NUL are the hole a copytruncate rotation leaves before the writer's next line.
    data = data.replace(b"\0", b"")
    if len(data.translate(None, NOT_CONTROL)) > MAX_CONTROL_SHARE * len(data):
        raise SourceUnavailable(f"cannot read the log {path}: binary data, not a text log")
    lines = [line.rstrip("\r") for line in data.decode("utf-8", "replace").split("\n")]
    if lines[-1] == "":
        lines.pop()
    return LogEvidence(source=source, lines=lines[-max_lines:] if max_lines > 0 else [])



def _tail_of_file(file: BinaryIO, max_lines: int) -> bytes:
    """Blocks from the end until they hold ``max_lines`` whole lines (or the file or the byte
    limit ends); the first, partial line is dropped unless the file starts there."""
    end = file.seek(0, os.SEEK_END)
    position, data = end, b""
    while position > 0 and data.count(b"\n") <= max_lines and end - position < MAX_TAIL_BYTES:
        step = min(BLOCK_BYTES, position)
        position -= step
        file.seek(position)
        data = file.read(step) + data
    if position > 0:
        data = data.partition(b"\n")[2]
    return data


def _tail_of_stream(fd: int, max_lines: int, seconds: float) -> tuple[bytes, bool]:
    """(last lines, cut off): a pipe cannot seek, so it is read through, keeping the last lines
    (a line longer than a block counts as several, which bounds what is kept), until its
    writers close it or ``seconds`` pass (then cut off is True)."""
    tail: collections.deque[bytes] = collections.deque(maxlen=max(max_lines, 1))
    pending = b""
    deadline = time.monotonic() + seconds
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            chunk = os.read(fd, BLOCK_BYTES)
        except BlockingIOError:  # a writer holds the pipe open but has written nothing new
            waiting.poll(left * 1000)
            continue
        if not chunk:  # every writer closed it
            return b"".join([*tail, pending]), False
        *lines, pending = (pending + chunk).split(b"\n")
        tail.extend(line + b"\n" for line in lines)
        while len(pending) >= BLOCK_BYTES:
            tail.append(pending[:BLOCK_BYTES])
            pending = pending[BLOCK_BYTES:]
    return b"".join([*tail, pending]), True


def from_container(evidence: ContainerEvidence) -> LogEvidence:
    """The log tail the Docker daemon returned with the container's inspect data."""
    return LogEvidence(source=f"container {evidence.name or evidence.id[:12]}",
                       lines=list(evidence.log_tail))
