"""Open, read and write files named by a repository or a user without hanging or destroying.

A FIFO named config.pbtxt blocks an ordinary ``open`` forever, ``/dev/zero`` given as a settings
file never ends, and writing ``-o /dev/null`` by temporary file and rename replaces the device
with a regular file. Every file a repository or a user names goes through ``open_descriptor``
or ``read_file`` (regular files only; ``read_file`` caps the size by the caller's kind), except
the server log, which may be a pipe and has its own bounded reader (checks/logs.py); every file
the tool writes goes through ``write_file``.
"""

from __future__ import annotations

import errno
import os
import stat

#: What a path that is not a regular file is, by the file type bits of its mode.
SPECIAL = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


class NotRegularFile(OSError):
    """A path that names something reading could block on or never finish: its ``str`` says
    what it is ("a FIFO (named pipe), not a regular file")."""

    def __init__(self, mode: int) -> None:
        super().__init__(f"{kind_of(mode)}, not a regular file")


class FileTooLarge(OSError):
    """A regular file over the size its kind may have; ``size`` is in bytes."""

    def __init__(self, size: int, cap: int) -> None:
        super().__init__(f"{size / 2**20:.1f} MiB, over the {_mib(cap)} read from such a file")
        self.size = size


#: What ``read_file`` asks for at a time once past the size the file had when opened.
READ_BYTES = 1 << 20


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a character device")."""
    return SPECIAL.get(stat.S_IFMT(mode), "a special file")


def _mib(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 1024} KiB"


def read_file(path: str | os.PathLike[str], cap: int) -> bytes:
    """The whole regular file at ``path``, at most ``cap`` bytes; raises FileTooLarge past it
    (measured on what is read, so a file growing while read is caught too).

    Read straight from the descriptor, asking for the size ``fstat`` gives: a buffered read
    of ``cap`` bytes would first allocate all of them (8 MiB for a config of 300 bytes)."""
    handle, status = open_descriptor(path)
    chunks: list[bytes] = []
    read, wanted = 0, min(status.st_size, cap) + 1
    try:
        while read <= cap and (chunk := os.read(handle, wanted)):
            chunks.append(chunk)
            read += len(chunk)
            # Less than asked is the end, confirmed by a read of one byte; all of it, the
            # file grew since fstat: read on.
            wanted = min(cap + 1 - read, READ_BYTES if len(chunk) == wanted else 1)
    finally:
        os.close(handle)
    if read > cap:
        raise FileTooLarge(max(status.st_size, read), cap)
    return b"".join(chunks)


def read_start(path: str | os.PathLike[str], count: int) -> tuple[bytes, int]:
    """(the first ``count`` bytes, fewer in a shorter file; its size) of the regular file at
    ``path``."""
    handle, status = open_descriptor(path)
    try:
        return read_at(handle, 0, count), status.st_size
    finally:
        os.close(handle)


def read_at(handle: int, offset: int, count: int) -> bytes:
    """``count`` bytes at ``offset`` of the open regular file ``handle``, fewer past its end;
    its position does not move."""
    data = os.pread(handle, count, offset)
    while len(data) < count and (more := os.pread(handle, count - len(data),
                                                  offset + len(data))):
        data += more
    return data


def open_descriptor(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on ``path`` (the caller closes it) and its status, if it
    is a regular file (after symbolic links); raises NotRegularFile for anything else.

    Stat first, so a device is never opened at all; the open itself does not block (a FIFO
    swapped in between is opened without waiting for a writer, then refused by ``fstat``).
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(mode)
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        status = os.fstat(handle)
    except OSError:
        os.close(handle)
        raise
    if not stat.S_ISREG(status.st_mode):
        os.close(handle)
        raise NotRegularFile(status.st_mode)
    return handle, status


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` without ever replacing something that is not a regular file.

    A new path or a regular file is written atomically (a temporary file renamed over it,
    keeping the old file's mode), so a reader never sees half of it. A device, FIFO or socket
    is written through (``-o /dev/null``, ``-o /dev/stdout``); a FIFO no process reads raises
    ENXIO instead of waiting. A symbolic link is written through to its target and stays a
    link: the kernel follows it (with its protections against links planted in shared
    directories), and a regular target is replaced atomically in its own directory.
    """
    try:
        handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OSError(errno.ENOENT, "a symbolic link to a missing file") from None
        _replace(os.fspath(path), data, None)
        return
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO (named pipe) that no process reads from") from None
        raise
    with os.fdopen(handle, "wb") as out:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            os.set_blocking(handle, True)
            out.write(data)
            return
    _replace(os.path.realpath(path), data, stat.S_IMODE(mode))


def _replace(path: str, data: bytes, mode: int | None) -> None:
    """Write a temporary file beside ``path`` and rename it over ``path``; a new file is
    private to its owner (0600), as snapshots may hold what a server said about itself."""
    import tempfile  # only writers need it, and ``check`` only reads

    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            if mode is not None:
                os.fchmod(out.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
