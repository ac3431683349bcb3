"""Reading and judging a large repository on every core: the items shared out to forked
processes.

A fork starts in a millisecond with everything imported. Spawning a fresh interpreter would
pay the start-up that a check is measured by. Every process, this one included, takes runs of
items from a pipe of tickets until none is left; a child sends each run's results back through
a pipe of its own as it finishes it (marshalled or pickled: only this process's own objects go
through it, never bytes of the repository), and this one takes them in between its own runs,
so that little is left to receive once the last run is done. A run a child does not send back
(it failed) is worked through here, so a fault shows up as it would in a single process. The
results come back in the order of ``items``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")
Out = TypeVar("Out")

#: Models to read or judge before sharing them out to other processes pays for forking.
PARALLEL_FROM = 64
#: The most processes a run starts unasked, however many CPUs the machine has.
MAX_PROCESSES = 8


def available_cores() -> int:
    """The CPUs this process may use: its affinity, where the platform tells, bounded by a
    container's CPU quota (cgroup v2 ``cpu.max``: a pod allowed 2 CPUs on a 64-core node gets
    2, not 64), and by MAX_PROCESSES."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as limits:
            quota, period = limits.read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return min(cores, MAX_PROCESSES)


def processes(jobs: int | None, models: int) -> int:
    """How many processes share ``models``: ``jobs`` when the user chose, else every CPU
    available once there are PARALLEL_FROM models, else one."""
    if jobs is not None:
        return jobs
    return available_cores() if models >= PARALLEL_FROM else 1


def can_fork() -> bool:
    """Whether forking is safe here: the platform has it and no thread runs beside this one
    (a child of a threaded process may inherit a lock held forever)."""
    threading = sys.modules.get("threading")
    return hasattr(os, "fork") and (threading is None or threading.active_count() == 1)


def _same(value: Any) -> Any:
    return value


def map_apart(work: Callable[[Item], Out], items: Sequence[Item], jobs: int,
              pack: Callable[[Out], Any] = _same,
              unpack: Callable[[Any], Out] = _same,
              meanwhile: Callable[[], None] | None = None) -> list[Out]:
    """``[work(item) for item in items]``, shared out to ``jobs`` processes (this one
    included); ``pack`` makes a result picklable in the child, ``unpack`` restores it here.

    The items are handed out in small runs as each process asks for the next (a pipe of
    tickets), so that a process that is slowed down, or this one while it runs ``meanwhile``
    (work of its own, run before it takes a run), takes fewer. A child that cannot be started
    or fails has its runs worked through here. Where several items raise, which error this
    raises may differ from a single process's (the work of a check catches its own)."""
    jobs = min(jobs, len(items))
    runs = _runs(len(items), jobs) if jobs >= 2 and can_fork() else []
    tickets = _tickets(len(runs)) if runs else None
    if tickets is None:
        if meanwhile is not None:
            meanwhile()
        return [work(item) for item in items]
    children: list[tuple[int, int]] = []
    results: list[Any] = [None] * len(items)
    done = [False] * len(runs)
    inboxes: dict[int, bytearray] = {}

    def store(reading: int, wait: bool) -> None:
        for number, outs in _received(reading, inboxes[reading], wait):
            results[slice(*runs[number])] = [unpack(out) for out in outs]
            done[number] = True

    try:
        for _ in range(jobs - 1):
            child = _fork(work, items, runs, tickets, pack)
            if child is not None:
                children.append(child)
                inboxes[child[1]] = bytearray()
        if meanwhile is not None:
            meanwhile()
        for number in _taken(tickets):
            results[slice(*runs[number])] = [work(item) for item in items[slice(*runs[number])]]
            done[number] = True
            for _, reading in children:  # what the children finished meanwhile
                store(reading, wait=False)
        while children:
            pid, reading = children[0]
            store(reading, wait=True)
            children.pop(0)
            os.close(reading)
            os.waitpid(pid, 0)
        for number, (begin, stop) in enumerate(runs):  # a child's that failed
            if not done[number]:
                results[begin:stop] = [work(item) for item in items[begin:stop]]
    finally:
        os.close(tickets)
        _reap(children)
    return results


def _received(reading: int, inbox: bytearray, wait: bool) -> list[tuple[int, list[Any]]]:
    """The runs a child has sent whole since last asked: what its pipe holds now (with
    ``wait``, all it sends until it ends) added to ``inbox``, and each complete frame taken
    out of it. A frame a child that failed left half-written is never taken."""
    os.set_blocking(reading, wait)
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(reading, 1 << 20):
            inbox += chunk
    runs: list[tuple[int, list[Any]]] = []
    while len(inbox) >= 4 and len(inbox) >= 4 + (size := int.from_bytes(inbox[:4], "big")):
        runs += _decoded(bytes(inbox[4:4 + size]))
        del inbox[:4 + size]
    return runs


#: What a child's result pipe is asked to hold (Linux's default cap), so that a child is not
#: held up while this process is busy with a run of its own or ``meanwhile``; 64 KiB elsewhere.
PIPE_BYTES = 1 << 20
#: Runs of items per process, before the last ones taper (see ``_runs``).
RUNS_PER_PROCESS = 24
#: The runs taper once the items left would fill fewer than this many full runs a process.
TAPER_RUNS = 4
#: The most runs: their tickets must fit in one write to an empty pipe (4 bytes each).
MAX_RUNS = 1024


def _runs(count: int, jobs: int) -> list[tuple[int, int]]:
    """``range(count)`` cut into consecutive (start, stop) runs, taken in this order: about
    RUNS_PER_PROCESS for each of ``jobs`` processes, then shorter ones as the items left run
    out (at most the items left over ``jobs * TAPER_RUNS``), so that the process taking the
    last run finishes about when the others do: runs of one size leave it up to a whole run
    behind them. No run is shorter than a share of MAX_RUNS // 2, so there are at most that
    many."""
    shortest = max(1, -(-count // (MAX_RUNS // 2)))
    full = max(shortest, -(-count // (jobs * RUNS_PER_PROCESS)))
    runs = []
    start = 0
    while start < count:
        size = max(shortest, min(full, -(-(count - start) // (jobs * TAPER_RUNS))))
        runs.append((start, min(start + size, count)))
        start += size
    return runs


def _tickets(count: int) -> int | None:
    """A pipe holding the numbers ``0 .. count-1``, 4 bytes each, its writing end closed: the
    descriptor to read them from, shared by every process forked after; None when no pipe can
    be made, or it could not hold them all."""
    try:
        reading, writing = os.pipe()
    except OSError:
        return None
    try:
        data = b"".join(number.to_bytes(4, "big") for number in range(count))
        written = os.write(writing, data)
    except OSError:
        written = 0
    finally:
        os.close(writing)
    if written != count * 4:
        os.close(reading)
        return None
    return reading


def _taken(tickets: int) -> Iterator[int]:
    """The runs this process takes, one at a time, until none is left. Every ticket is 4 bytes
    and a pipe's read is atomic, so no two processes take the same run."""
    while ticket := os.read(tickets, 4):
        yield int.from_bytes(ticket, "big")


def _reap(children: list[tuple[int, int]]) -> None:
    """End the children not waited for (this process's own work raised), closing their
    pipes."""
    if not children:
        return
    import signal  # only after a failure

    for pid, reading in children:
        with contextlib.suppress(OSError):
            os.close(reading)
        with contextlib.suppress(ChildProcessError, OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _fork(work: Callable[[Item], Out], items: Sequence[Item], runs: list[tuple[int, int]],
          tickets: int, pack: Callable[[Out], Any]) -> tuple[int, int] | None:
    """A child working through the runs it takes from ``tickets``: its pid, and the pipe its
    results come back on, by run; None when no child can be started (out of processes or
    descriptors)."""
    try:
        reading, writing = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(reading)
        os.close(writing)
        return None
    if pid:
        os.close(writing)
        return pid, reading
    code = 1
    try:
        os.close(reading)
        with contextlib.suppress(ImportError, AttributeError, OSError):  # Linux's alone
            import fcntl

            fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        with os.fdopen(writing, "wb") as pipe:
            for number in _taken(tickets):  # each run sent as a frame: its size, then itself
                frame = _encoded([(number, [pack(work(item))
                                            for item in items[slice(*runs[number])]])])
                pipe.write(len(frame).to_bytes(4, "big") + frame)
                pipe.flush()
        code = 0
    finally:
        os._exit(code)  # never back into the parent's code, nor its exit handlers


def _encoded(outs: list[Any]) -> bytes:
    """A child's results as they go through the pipe: by ``marshal`` when they are plain data
    (strings, numbers, lists...: no import, as a run of fingerprints only), else pickled."""
    if _plain(outs):
        import marshal

        return b"m" + marshal.dumps(outs)
    import pickle

    return b"p" + pickle.dumps(outs, protocol=pickle.HIGHEST_PROTOCOL)


#: What marshal gives back as it was: exactly these types (it turns a bytearray into bytes,
#: and refuses a subclass or a record).
_PLAIN = frozenset({str, int, float, bool, type(None), bytes})


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    if kind is dict:
        return all(_plain(key) and _plain(item) for key, item in value.items())
    return False


def _decoded(payload: bytes) -> list[Any]:
    """What ``_encoded`` wrote: this process's own child's, through its own pipe."""
    if payload[:1] == b"m":
        import marshal

        return list(marshal.loads(memoryview(payload)[1:]))
    import pickle

    return list(pickle.loads(memoryview(payload)[1:]))
