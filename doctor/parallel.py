"""Reading and judging a large repository on every core: the items shared out to forked
processes.

A fork starts in a millisecond with everything imported. Spawning a fresh interpreter would
pay the start-up that a check is measured by. Each child reads its share and sends the results
back through a pipe, pickled: only this process's own objects go through it, never bytes of the
repository. A child that fails has its share read again here, so a fault shows up as it would
in a single process. The results come back in the order of ``items``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
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
              unpack: Callable[[Any], Out] = _same) -> list[Out]:
    """``[work(item) for item in items]``, shared out to ``jobs`` processes (this one
    included); ``pack`` makes a result picklable in the child, ``unpack`` restores it here.
    A share whose child cannot be started or fails is worked through here."""
    jobs = min(jobs, len(items))
    if jobs < 2 or not can_fork():
        return [work(item) for item in items]
    shares = [list(range(start, len(items), jobs)) for start in range(jobs)]
    children = [(_fork(work, [items[i] for i in share], pack), share) for share in shares[1:]]
    mine = shares[0] + [index for child, share in children if child is None for index in share]
    results: list[Any] = [None] * len(items)
    running = [child for child, _ in children if child is not None]
    try:
        for index in mine:
            results[index] = work(items[index])
        for child, share in children:
            if child is None:
                continue
            pid, reading = child
            running.remove(child)
            with os.fdopen(reading, "rb") as pipe:
                payload = pipe.read()
            _, status = os.waitpid(pid, 0)
            outs = ([unpack(out) for out in _decoded(payload)] if status == 0 and payload
                    else [work(items[index]) for index in share])
            for index, out in zip(share, outs, strict=True):
                results[index] = out
    finally:
        _reap(running)
    return results


def _reap(children: list[tuple[int, int]]) -> None:
    """End the children not waited for (this process's own share raised), closing their
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


def _fork(work: Callable[[Item], Out], share: list[Item],
          pack: Callable[[Out], Any]) -> tuple[int, int] | None:
    """A child working through ``share``: its pid, and the pipe its results come back on;
    None when no child can be started (out of processes or descriptors)."""
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
        payload = _encoded([pack(work(item)) for item in share])
        with os.fdopen(writing, "wb") as pipe:
            pipe.write(payload)
        code = 0
    finally:
        os._exit(code)  # never back into the parent's code, nor its exit handlers


def _encoded(outs: list[Any]) -> bytes:
    """A child's results as they go through the pipe: by ``marshal`` when they are plain data
    (strings, numbers, lists...: no import, as a run of fingerprints only), else pickled."""
    import marshal

    try:
        return b"m" + marshal.dumps(outs)
    except ValueError:  # a record, or a subclass of a plain type: marshal refuses both
        import pickle

        return b"p" + pickle.dumps(outs, protocol=pickle.HIGHEST_PROTOCOL)


def _decoded(payload: bytes) -> list[Any]:
    """What ``_encoded`` wrote: this process's own child's, through its own pipe."""
    if payload[:1] == b"m":
        import marshal

        return list(marshal.loads(memoryview(payload)[1:]))
    import pickle

    return list(pickle.loads(memoryview(payload)[1:]))
