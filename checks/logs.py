"""Collect the server's log: the last lines of a file (``--log``) or of the container's log.

A server log grows without bound, so a file is read backwards from its end in blocks and only
the tail is kept. A pipe (``--log <(kubectl logs pod)``) cannot seek: ``check`` reads it
through, keeping the tail, until its writer closes it or the deadline passes (``kubectl logs
-f`` never closes it); ``watch`` keeps it open in a :class:`LogFollower` and takes, each poll,
only what has come since, without waiting.
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
#: At most this much of a file's end is read, however long its lines; and at most this much
#: of what waits in a followed pipe, per poll (the rest is read the next poll).
MAX_TAIL_BYTES = 16 * 1024 * 1024
#: Share of control characters above which the bytes are not a text log.
MAX_CONTROL_SHARE = 0.05
#: Every byte but the control characters that do not occur in text logs (tab, newline,
#: carriage return and the ANSI escape do), for counting those with ``bytes.translate``.
NOT_CONTROL = bytes(b for b in range(256) if (b >= 0x20 and b != 0x7F) or b in b"\t\n\r\x1b")
#: Lines of the log kept.
MAX_LINES = 2000


def read_log(path: str, max_lines: int = MAX_LINES, seconds: float = 5.0) -> LogEvidence:
    """The last ``max_lines`` lines of the log at ``path``, a pipe read for at most ``seconds``
    (the live ``--timeout``); raises SourceUnavailable naming the path when it is missing,
    unreadable or not text."""
    source = path
    try:
        file, is_pipe = _open(path)
        with file:
            if is_pipe:
                data, cut_off = _tail_of_stream(file.fileno(), max_lines, seconds)
                if cut_off:
                    source = (f"{path} (cut off after {seconds:g} s with the pipe still open: "
                              "lines written later are not here)")
            else:
                data = _tail_of_file(file, max_lines)
    except OSError as error:
        raise SourceUnavailable(f"cannot read the log {path}: {describe_os_error(error)}") from None
    return _evidence(path, source, data, max_lines)


class LogFollower:
    """The log for ``watch``, read each poll without waiting. A file's tail is read afresh (it
    is cheap); a pipe is opened once and kept open, and what has come since the last poll is
    added to a tail kept across polls. Reading a pipe until the timeout, as ``check`` does,
    held every poll for the whole timeout and showed only the lines of that one wait."""

    def __init__(self, path: str, max_lines: int = MAX_LINES) -> None:
        self.path = path
        self._max_lines = max_lines
        self._pipe: BinaryIO | None = None
        self._tail = _Tail(max_lines)

    def read(self) -> LogEvidence:
        """The log now; raises SourceUnavailable naming the path, as :func:`read_log` does (a
        pipe not yet opened is tried again the next poll)."""
        try:
            if self._pipe is None:
                file, is_pipe = _open(self.path)
                if not is_pipe:
                    with file:
                        data = _tail_of_file(file, self._max_lines)
                    return _evidence(self.path, self.path, data, self._max_lines)
                self._pipe = file
            closed = self._take_waiting(self._pipe.fileno())
        except OSError as error:
            raise SourceUnavailable(
                f"cannot read the log {self.path}: {describe_os_error(error)}") from None
        # A line still being written shows once its newline comes, or once the writer is gone.
        source = (f"{self.path} (the pipe's writer closed it: lines written later are not here)"
                  if closed else self.path)
        return _evidence(self.path, source, self._tail.data(closed), self._max_lines)

    def _take_waiting(self, fd: int) -> bool:
        """Add what the pipe holds now to the tail, up to MAX_TAIL_BYTES; whether every
        writer has closed it. The pipe stays open: a named pipe may get a new writer."""
        taken = 0
        while taken < MAX_TAIL_BYTES:
            try:
                chunk = os.read(fd, BLOCK_BYTES)
            except BlockingIOError:  # a writer holds it open but has written nothing new
                return False
            if not chunk:
                return True
            self._tail.add(chunk)
            taken += len(chunk)
        return False


def _open(path: str) -> tuple[BinaryIO, bool]:
    """(``path`` opened, whether it is a pipe); SourceUnavailable naming it unless it is a
    regular file or a pipe (a device is never opened)."""
    mode = os.stat(path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise SourceUnavailable(
            f"cannot read the log {path}: {kind_of(mode)}, not a file or a pipe")
    # Non-blocking open: a pipe nobody writes to yet must not hang the doctor.
    file = open(path, "rb",  # noqa: SIM115 (the caller closes it)
                opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))
    mode = os.fstat(file.fileno()).st_mode
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return file, stat.S_ISFIFO(mode)
    file.close()  # swapped for something else since the stat above
    raise SourceUnavailable(f"cannot read the log {path}: {kind_of(mode)}, not a file or a pipe")


def _evidence(path: str, source: str, data: bytes, max_lines: int) -> LogEvidence:
    """The last ``max_lines`` lines of ``data``; SourceUnavailable naming ``path`` when they
    are not a text log."""
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


class _Tail:
    """The last lines of a stream that comes a chunk at a time. A line longer than a block
    counts as several, which bounds what is kept; the line still being written is kept apart
    until its newline comes."""

    def __init__(self, max_lines: int) -> None:
        self._lines: collections.deque[bytes] = collections.deque(maxlen=max(max_lines, 1))
        self._partial = b""

    def add(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._lines.extend(line + b"\n" for line in lines)
        while len(self._partial) >= BLOCK_BYTES:
            self._lines.append(self._partial[:BLOCK_BYTES])
            self._partial = self._partial[BLOCK_BYTES:]

    def data(self, with_partial: bool) -> bytes:
        """The lines kept, and the one still being written when ``with_partial``."""
        return b"".join([*self._lines, self._partial if with_partial else b""])


def _tail_of_stream(fd: int, max_lines: int, seconds: float) -> tuple[bytes, bool]:
    """(last lines, cut off): a pipe cannot seek, so it is read through, keeping the last lines,
    until its writers close it or ``seconds`` pass (then cut off is True)."""
    tail = _Tail(max_lines)
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
            return tail.data(with_partial=True), False
        tail.add(chunk)
    return tail.data(with_partial=True), True


def from_container(evidence: ContainerEvidence) -> LogEvidence:
    """The log tail the Docker daemon returned with the container's inspect data."""
    return LogEvidence(source=f"container {evidence.name or evidence.id[:12]}",
                       lines=list(evidence.log_tail))
