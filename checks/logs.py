"""Collect the server's log: a file, a pipe or standard input (``--log``), or a container's.

The whole log is read, once, through a :class:`LogScan` (what the log rules know of it, and
its last lines), whatever its size: the answer to an incident is often hours back. A pipe
(``kubectl logs pod | triton-doctor check --log -``) is read until its writer closes it, or
until it has been silent for the live ``--timeout`` (``kubectl logs -f`` never closes it);
``watch`` keeps a :class:`LogFollower`, which each poll feeds the scan only what the log has
gained since, without waiting.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import BinaryIO

from triton_doctor.checks.log_ranges import ScanRange, read_in_ranges
from triton_doctor.checks.log_scan import TAIL_LINES, LogScan
from triton_doctor.checks.unavailable import SourceUnavailable, describe_os_error
from triton_doctor.evidence import ContainerEvidence, LogEvidence
from triton_doctor.safe_files import kind_of

#: What one read takes: large, since the scan's cost is per block and per word.
READ_BYTES = 2 * 1024 * 1024
#: What one poll of ``watch`` takes of a followed pipe at most (the rest comes next poll).
BLOCK_BYTES = 64 * 1024
MAX_POLL_BYTES = 16 * 1024 * 1024
#: The start of the log tested for text: share of control characters above which it is not.
SNIFF_BYTES = 64 * 1024
MAX_CONTROL_SHARE = 0.05
#: Every byte but the control characters that do not occur in text logs (tab, newline,
#: carriage return and the ANSI escape do), for counting those with ``bytes.translate``.
NOT_CONTROL = bytes(b for b in range(256) if (b >= 0x20 and b != 0x7F) or b in b"\t\n\r\x1b")
#: ``--log -``: standard input.
STDIN = "-"


def read_log(path: str, max_lines: int = TAIL_LINES, seconds: float = 5.0) -> LogEvidence:
    """All of the log at ``path`` (``-``: standard input), a pipe read until it closes or is
    silent for ``seconds``; the last ``max_lines`` lines kept to show. Raises SourceUnavailable
    naming the path when it is missing, unreadable or not text."""
    name = "standard input" if path == STDIN else path
    scan = _Sniffed(LogScan(name, max_lines), name)
    cut_off = False
    try:
        if path == STDIN:
            if os.isatty(0):
                raise SourceUnavailable("--log - reads the log from standard input, which is "
                                        "a terminal: pipe the log in (kubectl logs POD | "
                                        "triton-doctor check --log -)")
            cut_off = _read_stream(sys.stdin.buffer.fileno(), scan, seconds)
            evidence = scan.evidence()
        else:
            file, is_pipe = _open(path)
            with file:
                if is_pipe:
                    cut_off = _read_stream(file.fileno(), scan, seconds)
                    evidence = scan.evidence()
                else:
                    evidence = read_in_ranges(file, _range_scan(name, max_lines), max_lines)
                    evidence.path = path
    except OSError as error:
        raise SourceUnavailable(f"cannot read the log {name}: {describe_os_error(error)}") from None
    if cut_off:
        evidence.source = (f"{name} (cut off after {seconds:g} s of silence with the pipe "
                           "still open: lines written later are not here)")
    return evidence


def _range_scan(name: str, max_lines: int) -> ScanRange:
    """How one range of a log file is read: the first range is tested for text."""

    def scan(file: BinaryIO, start: int, end: int) -> LogEvidence:
        part: LogScan | _Sniffed = LogScan(name, max_lines)
        if start == 0:
            part = _Sniffed(part, name)
        file.seek(start)
        while start < end and (block := file.read(min(READ_BYTES, end - start))):
            part.feed(block)
            start += len(block)
        return part.evidence()

    return scan


class LogFollower:
    """The log for ``watch``, read each poll without waiting: a file from where the last poll
    stopped (from its start again when it shrank: rotated or truncated), a pipe opened once and
    kept open, taking what has come since. ``from_end``: a file's lines from the first read on,
    not those it already held (the exporter's: it alerts on what happens while it runs; its
    line numbers then count from there)."""

    def __init__(self, path: str, max_lines: int = TAIL_LINES, from_end: bool = False) -> None:
        self.path = path
        self._max_lines = max_lines
        self._pipe: BinaryIO | None = None
        self._scan = _Sniffed(LogScan(path, max_lines), path)
        #: Where the next read starts; None until a file is first opened from its end.
        self._offset: int | None = None if from_end else 0

    def read(self) -> LogEvidence:
        """The log now; raises SourceUnavailable naming the path, as :func:`read_log` does (a
        pipe not yet opened is tried again the next poll)."""
        try:
            if self._pipe is None:
                file, is_pipe = _open(self.path)
                if not is_pipe:
                    with file:
                        return self._read_file(file)
                self._pipe = file
            closed = self._take_waiting(self._pipe.fileno())
        except OSError as error:
            raise SourceUnavailable(
                f"cannot read the log {self.path}: {describe_os_error(error)}") from None
        # A line still being written shows once its newline comes, or once the writer is gone.
        evidence = self._scan.evidence(final=closed)
        if closed:
            evidence.source = f"{self.path} (the pipe's writer closed it: lines written later " \
                              "are not here)"
        return evidence

    def _read_file(self, file: BinaryIO) -> LogEvidence:
        size = os.fstat(file.fileno()).st_size
        if self._offset is None:
            self._offset = size
        if size < self._offset:  # rotated or truncated: its lines are new
            self._scan = _Sniffed(LogScan(self.path, self._max_lines), self.path)
            self._offset = 0
        file.seek(self._offset)
        while block := file.read(READ_BYTES):
            self._scan.feed(block)
            self._offset += len(block)
        evidence = self._scan.evidence(final=False)
        evidence.path = self.path
        return evidence

    def _take_waiting(self, fd: int) -> bool:
        """Feed what the pipe holds now, up to MAX_POLL_BYTES; whether every writer has closed
        it. The pipe stays open: a named pipe may get a new writer."""
        taken = 0
        while taken < MAX_POLL_BYTES:
            try:
                chunk = os.read(fd, BLOCK_BYTES)
            except BlockingIOError:  # a writer holds it open but has written nothing new
                return False
            if not chunk:
                return True
            self._scan.feed(chunk)
            taken += len(chunk)
        return False


class _Sniffed:
    """A LogScan that first makes sure the log is text: SourceUnavailable naming it when its
    first bytes are gzip or binary."""

    def __init__(self, scan: LogScan, name: str) -> None:
        self._scan = scan
        self._name = name
        self._start = b""

    def feed(self, data: bytes) -> None:
        if len(self._start) < SNIFF_BYTES:
            self._start += data[:SNIFF_BYTES]
            self._sniff()
        self._scan.feed(data)

    def evidence(self, final: bool = True) -> LogEvidence:
        return self._scan.evidence(final)

    def _sniff(self) -> None:
        if self._start.startswith(b"\x1f\x8b"):
            raise SourceUnavailable(f"cannot read the log {self._name}: gzip-compressed; zcat "
                                    "it first (zcat LOG.gz | triton-doctor check --log -)")
        text = self._start.replace(b"\0", b"")  # the hole a copytruncate rotation leaves
        if len(text.translate(None, NOT_CONTROL)) > MAX_CONTROL_SHARE * len(text):
            raise SourceUnavailable(f"cannot read the log {self._name}: binary data, not a "
                                    "text log")


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


def _read_stream(fd: int, scan: _Sniffed, seconds: float) -> bool:
    """Feed ``scan`` a pipe until its writers close it; True when it was cut off instead,
    silent for ``seconds`` with a writer still holding it."""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    while True:
        if not waiting.poll(seconds * 1000):
            return True
        try:
            chunk = os.read(fd, READ_BYTES)
        except BlockingIOError:  # woken, but another reader took it
            continue
        if not chunk:  # every writer closed it
            return False
        scan.feed(chunk)


def from_container(evidence: ContainerEvidence) -> LogEvidence:
    """What the log rules know of the log tail the Docker daemon returned with the container's
    inspect data (only its end: ``whole`` is False)."""
    scan = LogScan(f"container {evidence.name or evidence.id[:12]}")
    scan.feed("".join(f"{line}\n" for line in evidence.log_tail).encode("utf-8", "replace"))
    log = scan.evidence()
    log.whole = False
    return log
