"""A read-only byte buffer over an open file, read a page at a time where it is indexed.

It replaces a memory map for walking a large file's structure: like a map, only the pages
touched are read, so skipping a payload costs nothing; unlike a map, a file truncated while it
is read cannot kill the process with SIGBUS: a short read raises ``FileChanged`` instead.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import overload

#: Bytes per read: small enough that a tensor header does not pull in its weights.
PAGE_BYTES = 4 * 1024
#: Pages kept, least recently used dropped first (1 MiB).
MAX_PAGES = 64


class FileChanged(OSError):
    """The file is shorter than when it was opened: it was truncated or rewritten meanwhile."""

    def __init__(self, size: int, offset: int) -> None:
        super().__init__(f"changed while it was read (it had {size} bytes; byte {offset} is "
                         "gone): read it again once whatever writes it has finished")


class PagedFile:
    """``buf[i]`` and ``buf[a:b]`` over the first ``size`` bytes of the file ``fd``."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self._pages: OrderedDict[int, bytes] = OrderedDict()
        self._base = 0
        self._page = b""
        self._length = 0

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> bytes: ...
    def __getitem__(self, index: int | slice) -> int | bytes:
        if isinstance(index, slice):
            start, stop, _ = index.indices(self.size)
            return b"".join(self._span(start, stop))
        offset = index - self._base
        if 0 <= offset < self._length:  # the hot path: a varint's next byte
            return self._page[offset]
        if not 0 <= index < self.size:
            raise IndexError(index)
        self._select(index // PAGE_BYTES)
        return self._page[index - self._base]

    def _span(self, start: int, stop: int) -> list[bytes]:
        pieces = []
        while start < stop:
            self._select(start // PAGE_BYTES)
            offset = start - self._base
            pieces.append(self._page[offset:offset + stop - start])
            start = self._base + self._length
        return pieces

    def _select(self, number: int) -> None:
        """Make page ``number`` the current one, reading it if it is not kept."""
        page = self._pages.get(number)
        if page is None:
            start = number * PAGE_BYTES
            want = min(PAGE_BYTES, self.size - start)
            page = os.pread(self.fd, want, start)
            if len(page) < want:
                raise FileChanged(self.size, start + len(page))
            self._pages[number] = page
            if len(self._pages) > MAX_PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        self._base, self._page, self._length = number * PAGE_BYTES, page, len(page)
