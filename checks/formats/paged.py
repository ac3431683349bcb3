"""A read-only view of an open file's first ``size`` bytes, read where it is sliced.

It replaces a memory map for walking a large file's structure: like a map, only the parts
asked for are read, so skipping a payload costs nothing; unlike a map, a file truncated while it
is read cannot kill the process with SIGBUS: a short read raises ``FileChanged`` instead.
"""

from __future__ import annotations

import os


class FileChanged(OSError):
    """The file is shorter than when it was opened: it was truncated or rewritten meanwhile."""

    def __init__(self, size: int, offset: int) -> None:
        super().__init__(f"changed while it was read (it had {size} bytes; byte {offset} is "
                         "gone): read it again once whatever writes it has finished")


class PagedFile:
    """``buf[a:b]`` over the first ``size`` bytes of the file ``fd``: one read per slice."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: slice) -> bytes:
        start, stop, _ = index.indices(self.size)
        want = max(0, stop - start)
        data = os.pread(self.fd, want, start)
        if len(data) < want:
            raise FileChanged(self.size, start + len(data))
        return data
