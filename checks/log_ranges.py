"""Read a large log file in ranges, one process per core, and join what each found.

A gigabyte of log takes seconds to search even at memory speed, one pass per run of words;
every core but one is otherwise idle. The file is cut at line starts into one range per core;
each range but the last is scanned by a forked child, which sends its evidence back as JSON
through a pipe, while this process scans the last; the parts are then joined in the log's
order (``log_scan.joined``). A child that fails leaves its range to this process, so the
answer never depends on the children.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from typing import BinaryIO

from triton_doctor.checks.log_scan import joined
from triton_doctor.evidence import LogEvidence, from_jsonable, to_jsonable

#: Smallest file read in ranges: below, forking costs more than it saves.
PARALLEL_BYTES = 64 * 1024 * 1024
MAX_WORKERS = 8
#: What the scan of one range is: the file, the range's bounds, its evidence.
ScanRange = Callable[[BinaryIO, int, int], LogEvidence]


def read_in_ranges(file: BinaryIO, scan: ScanRange, tail_lines: int) -> LogEvidence:
    """The evidence of the whole regular ``file``, its ranges scanned at once where it is large
    and there are cores for it; ``scan(file, start, end)`` reads one range."""
    size = os.fstat(file.fileno()).st_size
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if size < PARALLEL_BYTES or workers < 2:
        return scan(file, 0, size)
    *ranges, last_range = itertools.pairwise(_line_starts(file, size, workers))
    children = [_fork(file.name, scan, start, end) for start, end in ranges]
    last = scan(file, *last_range)
    parts = [_collect(child, file, scan, start, end)
             for child, (start, end) in zip(children, ranges, strict=True)]
    return joined([*parts, last], tail_lines)


def _line_starts(file: BinaryIO, size: int, workers: int) -> list[int]:
    """0, the line starts nearest to equal cuts, and ``size``: the ranges' bounds."""
    bounds = [0]
    for cut in range(1, workers):
        file.seek(size * cut // workers)
        file.readline()  # to the start of the next line
        start = file.tell()
        if bounds[-1] < start < size:
            bounds.append(start)
    return [*bounds, size]


def _fork(path: str | int, scan: ScanRange, start: int, end: int) -> tuple[int, int]:
    """(pid, read end of its pipe) of a child scanning ``start:end`` of the file."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 1
        try:
            os.close(reading)
            with open(path, "rb") as own:  # its own offset, not the parent's
                part = scan(own, start, end)
            with os.fdopen(writing, "w") as out:
                json.dump(to_jsonable(part), out)
            code = 0
        finally:
            os._exit(code)
    os.close(writing)
    return pid, reading


def _collect(child: tuple[int, int], file: BinaryIO, scan: ScanRange, start: int,
             end: int) -> LogEvidence:
    """The child's evidence; its range scanned here when the child failed."""
    pid, reading = child
    with os.fdopen(reading) as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        try:
            part: LogEvidence = from_jsonable(LogEvidence, json.loads(text))
            return part
        except ValueError:  # EvidenceError too: a child cut short
            pass
    return scan(file, start, end)
