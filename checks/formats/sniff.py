"""Tell what a file is from its first bytes, whatever its name says.

A model file named for one backend is often something else: a Git LFS pointer checked out
without ``git lfs pull``, a zero-byte placeholder, a ``torch.save`` pickle, an engine exported
with a metadata prefix. Reading 64 bytes tells these apart before a format reader starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from triton_doctor.checks.unavailable import describe_os_error
from triton_doctor.evidence import ModelFile
from triton_doctor.safe_files import open_descriptor, read_at, read_start

#: The first bytes and size of files already read, by path: a model's reading records them,
#: so that its LFS scan does not open those files again.
Heads = dict[str, tuple[bytes, int]]

LFS_POINTER = b"version https://git-lfs.github.com/spec/"
ZIP_MAGIC = b"PK\x03\x04"
HEAD_BYTES = 256
_LFS_SIZE = re.compile(r"size ([0-9]{1,20})(?![0-9])")


def sniff_bytes(head: bytes, size: int) -> str:
    """The kind of a file from its first bytes and its size (see ``ModelFile.kind``)."""
    if size == 0:
        return "empty"
    if head.startswith(LFS_POINTER):
        return "lfs-pointer"
    if head.startswith(ZIP_MAGIC):
        return "zip"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    if head[:4] in (b"ftrt", b"ptrt"):
        return "tensorrt"
    if ultralytics_length(head, size) is not None:
        return "tensorrt"
    if head.lstrip().startswith(b"<?xml") or head.lstrip().startswith(b"<net"):
        return "xml"
    return "unknown"


def ultralytics_length(head: bytes, size: int) -> int | None:
    """N when the file starts with an Ultralytics prefix: ``<u32 LE N><N bytes of JSON>``,
    then the engine, so at least one byte must follow the ``4 + N`` bytes of the prefix."""
    if len(head) < 5 or head[4:5] != b"{":
        return None
    length = int.from_bytes(head[:4], "little")
    return length if 0 < length < size - 4 else None


def empty_file(path: str) -> ModelFile:
    """The finding for a zero-byte file, whichever reader met it."""
    return ModelFile(path=path, kind="empty", problem="is empty (0 bytes)")


def unreadable_file(path: str, error: OSError, missing: str = "no such file") -> ModelFile:
    """The finding for a file that cannot be opened; ``missing`` words ENOENT for the caller."""
    return ModelFile(path=path, problem=f"cannot be read: {describe_os_error(error, missing)}")


def describe_lfs_pointer(head: bytes) -> str:
    """The size in bytes the pointer records, for a message like "the real file is 96 bytes":
    its digits only (at most 20, an unsigned 64-bit number), since the file's text is the
    repository's and may hold anything; "" when it records none."""
    for line in head.decode("ascii", "replace").splitlines():
        size = _LFS_SIZE.match(line)
        if size:
            return size.group(1)
    return ""


def read_opened(path: str, read: Callable[[int, int], ModelFile], shown: str | None = None,
                missing: str = "no such file") -> ModelFile:
    """``read(descriptor, size)`` of the regular file at ``path``, opened for it and closed
    after; the file's problem, named ``shown`` (default ``path``), when it cannot be opened
    (``missing`` words ENOENT, as for ``unreadable_file``)."""
    try:
        handle, status = open_descriptor(path)
    except OSError as error:
        return unreadable_file(path if shown is None else shown, error, missing)
    try:
        return read(handle, status.st_size)
    finally:
        os.close(handle)


def head_of(handle: int) -> bytes:
    """The first bytes of the file open on ``handle``."""
    return read_at(handle, 0, HEAD_BYTES)


def read_head(path: str) -> tuple[bytes, int]:
    """(first bytes, size) of a regular file; raises OSError (NotRegularFile for a FIFO or
    device, which an ordinary open would block on or read forever)."""
    return read_start(path, HEAD_BYTES)
