"""Collect the host under tritonserver: /dev/shm, who holds each file in it, the server's memory.

The Python backend gives every stub a shared-memory region in /dev/shm, and clients register
system shared-memory regions there; a server killed with SIGKILL leaves its regions behind,
and a full /dev/shm fails model loads. A file nobody maps or holds open is an orphan, so for
each file the collector finds the processes that map it (``/proc/<pid>/maps``) or hold it
open (``/proc/<pid>/fd``). Files are matched by device and inode, not by path: a process in
a container sees its own /dev/shm under the same path, and its files are not these.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.evidence import HostEvidence, ShmSegment

SHM_DIR = Path("/dev/shm")
PROC = Path("/proc")
#: Past this many processes the owner scan stops (and says it is incomplete).
MAX_PROCESSES = 4096
#: The Python backend's region names: this prefix (its shm-region-prefix-name default), then
#: a UUID in current releases, a counter in old ones.
PYTHON_BACKEND_PREFIX = "triton_python_backend_shm_region_"
#: The stub's command line is ``<stub> <model.py> <region name> ...``: with a custom prefix,
#: it is the way to know a region is a stub's.
STUB = "triton_python_backend_stub"
SERVER = "tritonserver"

FileId = tuple[int, int]


def collect_host(server_pids: list[int] | None = None) -> HostEvidence:
    """/dev/shm's size and files with their owners, and the tritonserver processes' RSS.

    ``server_pids`` names the server's processes; without it, they are the processes whose
    executable is ``tritonserver`` (the Python stubs are not counted). Raises
    SourceUnavailable when /dev/shm does not exist or cannot be read: an empty part would
    read as "no shared memory at all". Processes that cannot be inspected (permissions, too
    many) only make ``owners_complete`` False.
    """
    psutil = _import_psutil()
    usage, stats = _read_shm()
    processes, listed_all = _processes(psutil)
    owners, read_all = _owners(stats, processes)
    pids = (
        list(server_pids) if server_pids is not None
        else sorted(pid for pid, command in processes.items() if _is_server(command))
    )
    return HostEvidence(
        dev_shm_total_bytes=usage.f_blocks * usage.f_frsize,
        dev_shm_used_bytes=(usage.f_blocks - usage.f_bfree) * usage.f_frsize,
        segments=_segments(stats, owners, _stub_regions(processes)),
        owners_complete=listed_all and read_all,
        server_pids=pids,
        server_rss_bytes=_rss(psutil, pids),
        server_started_at=_started_at(psutil, pids),
    )


def _import_psutil() -> Any:
    try:
        import psutil
    except ImportError:
        raise SourceUnavailable(
            "host: the psutil package is not installed (pip install psutil)"
        ) from None
    return psutil


def _read_shm() -> tuple[os.statvfs_result, dict[str, os.stat_result]]:
    """/dev/shm's file-system usage and its regular files' stats, by name."""
    if not SHM_DIR.is_dir():
        raise SourceUnavailable(
            f"host: {SHM_DIR} does not exist on this machine (it is Linux's POSIX shared-memory "
            "mount), so shared memory cannot be inspected here; run triton-doctor where "
            "tritonserver runs."
        )
    try:
        usage = os.statvfs(SHM_DIR)
        with os.scandir(SHM_DIR) as listing:
            stats = {entry.name: entry.stat(follow_symlinks=False)
                     for entry in listing if entry.is_file(follow_symlinks=False)}
    except OSError as error:
        raise SourceUnavailable(f"host: cannot read {SHM_DIR}: {error.strerror}.") from None
    return usage, stats


def _owners(stats: dict[str, os.stat_result],
            processes: dict[int, list[str]]) -> tuple[dict[str, set[int]], bool]:
    """The processes that map or hold open each /dev/shm file; and whether every process
    could be read (False when one was not ours to inspect)."""
    owners: dict[str, set[int]] = {name: set() for name in stats}
    files = {(stat.st_dev, stat.st_ino): name for name, stat in stats.items()}
    if not files:
        return owners, True
    complete = True
    device = os.stat(SHM_DIR).st_dev
    for pid in processes:
        try:
            held = _held_files(pid, device)
        except PermissionError:
            complete = False
            continue
        except OSError:  # the process ended while it was read
            continue
        for file_id in held & files.keys():
            owners[files[file_id]].add(pid)
    return owners, complete


def _stub_regions(processes: dict[int, list[str]]) -> set[str]:
    """The regions the running Python backend stubs name on their command lines."""
    return {
        command[2] for command in processes.values()
        if len(command) > 2 and Path(command[0]).name == STUB
    }


def _segments(stats: dict[str, os.stat_result], owners: dict[str, set[int]],
              stub_regions: set[str]) -> list[ShmSegment]:
    return [
        ShmSegment(
            name=name,
            size_bytes=stats[name].st_size,
            owner_pids=sorted(owners[name]),
            python_backend=name.startswith(PYTHON_BACKEND_PREFIX) or name in stub_regions,
        )
        for name in sorted(stats)
    ]


def _started_at(psutil: Any, pids: list[int]) -> float | None:
    """The server's start time when there is exactly one server process."""
    if len(pids) != 1:
        return None
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pids[0]).create_time()
    return None


def listening_servers(port: int) -> list[int] | None:
    """The tritonserver processes listening on TCP ``port`` here, so that a host running
    several servers is judged for the one asked about; None when none can be told (sockets
    of other users unreadable, or a proxy such as docker-proxy holds the port)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        listening = {c.pid for c in psutil.net_connections(kind="tcp")
                     if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                     and c.pid}
    except (OSError, psutil.Error):
        return None
    servers = []
    for pid in listening:
        with contextlib.suppress(psutil.Error):
            if _is_server(psutil.Process(pid).cmdline()):
                servers.append(pid)
    return sorted(servers) or None


def _processes(psutil: Any) -> tuple[dict[int, list[str]], bool]:
    """Every process's command line (its name when the command line is hidden), up to
    MAX_PROCESSES; and whether every process was listed."""
    processes: dict[int, list[str]] = {}
    for process in psutil.process_iter(["name", "cmdline"]):
        if len(processes) == MAX_PROCESSES:
            return processes, False
        info = process.info
        processes[process.pid] = info["cmdline"] or [info["name"] or ""]
    return processes, True


def _is_server(command: list[str]) -> bool:
    return Path(command[0]).name == SERVER


def _held_files(pid: int, device: int) -> set[FileId]:
    """(device, inode) of the files on ``device`` that process ``pid`` maps or holds open."""
    held: set[FileId] = set()
    # A maps line: address perms offset device inode path; the device is "%02x:%02x".
    name = f"{os.major(device):02x}:{os.minor(device):02x}"
    with open(PROC / str(pid) / "maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            if name in line:
                parts = line.split(maxsplit=5)
                if parts[3] == name:
                    held.add((device, int(parts[4])))
    fds = PROC / str(pid) / "fd"
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):  # closed meanwhile
            if os.readlink(fds / fd).startswith("/"):  # a file, not socket:[...] or pipe:[...]
                stat = os.stat(fds / fd)
                if stat.st_dev == device:
                    held.add((device, stat.st_ino))
    return held


def _rss(psutil: Any, pids: list[int]) -> int | None:
    """The summed resident memory of ``pids``; None when none of them could be read."""
    sizes = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            sizes.append(psutil.Process(pid).memory_info().rss)
    return sum(sizes) if sizes else None
