"""The names and members of a plain zip archive, read by its byte layout (APPNOTE 4.3).

``zipfile`` costs a reading process 8 ms to import (it brings ``shutil``, ``bz2`` and
``lzma``) and builds an object per entry. The archives torch writes are plain: no comment,
nothing before the first entry, no zip64 field in an entry (torch writes zip64 end records
only), ASCII names, members stored or deflated. For those this answers what ``zipfile`` would,
byte for byte. Anything else, and anything that does not add up (a signature, a length, a
CRC), raises Unsure: the caller then reads the archive with ``zipfile``, whose words name what
is wrong.
"""

from __future__ import annotations

import os
import struct
import zlib

#: APPNOTE's signatures and fixed sizes (4.3.7-16): the local and central headers, the end record,
#: its zip64 locator and the zip64 end record.
CENTRAL = b"PK\x01\x02"
LOCAL = b"PK\x03\x04"
END = b"PK\x05\x06"
ZIP64_END = b"PK\x06\x06"
ZIP64_LOCATOR = b"PK\x06\x07"
CENTRAL_BYTES, LOCAL_BYTES, END_BYTES = 46, 30, 22
ZIP64_END_BYTES, LOCATOR_BYTES = 56, 20
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_LOCAL = struct.Struct("<4s2B4HL2L2H")
END_RECORD = struct.Struct("<4s4H2LH")
ZIP64_END_RECORD = struct.Struct("<4sQ2H2L4Q")
LOCATOR_RECORD = struct.Struct("<4sLQL")
#: General purpose flags that need what only ``zipfile`` does (or refuses): encryption,
#: compressed patched data, strong encryption.
_UNREAD_FLAGS = 1 << 0 | 1 << 5 | 1 << 6
#: The newest "version needed to extract" ``zipfile`` accepts.
MAX_EXTRACT_VERSION = 63
STORED, DEFLATED = 0, 8
#: The most compressed bytes read at once for a deflated member.
MAX_COMPRESSED_BYTES = 8 * 1024 * 1024
#: What ``zipfile`` reads of a member at least (its MIN_READ_SIZE): a read of fewer bytes
#: still reaches the end of a member this short, and checks its CRC there.
ZIPFILE_MIN_READ = 4096


class Unsure(Exception):
    """Not certain what ``zipfile`` would make of the archive."""


#: One entry as the central directory records it: where its local header is, its compression
#: method, compressed size, size, CRC-32 and the name's bytes.
Entry = tuple[int, int, int, int, int, bytes]


class PlainZip:
    """The archive on the open file ``fd``: its names, in order (as ``ZipFile.namelist``),
    and its members read on demand."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self.names: list[str] = []
        self._entries: dict[str, Entry] = {}
        self._read_directory()

    def _read_directory(self) -> None:
        directory_at, directory_bytes, records_end = self._end_records()
        if directory_at + directory_bytes != records_end:
            raise Unsure  # bytes before the first entry (zipfile reads past them)
        directory = self._read(directory_at, directory_bytes)
        if len(directory) != directory_bytes:
            raise Unsure
        at = 0
        while at < directory_bytes:
            if at + CENTRAL_BYTES > directory_bytes:
                raise Unsure
            (signature, _, _, needed, _, flags, method, _, _, crc, compressed, size, name_bytes,
             extra_bytes, comment_bytes, _, _, _, offset) = _CENTRAL.unpack_from(directory, at)
            at += CENTRAL_BYTES
            name = directory[at:at + name_bytes]
            extra = directory[at + name_bytes:at + name_bytes + extra_bytes]
            at += name_bytes + extra_bytes + comment_bytes
            if (signature != CENTRAL or needed > MAX_EXTRACT_VERSION or flags & _UNREAD_FLAGS
                    or method not in (STORED, DEFLATED) or at > directory_bytes
                    or not _plain_name(name) or _has_zip64(extra)
                    or (method == STORED and compressed != size)):
                raise Unsure
            text = name.decode("ascii")
            self.names.append(text)
            self._entries[text] = (offset, method, compressed, size, crc, name)

    def _end_records(self) -> tuple[int, int, int]:
        """Where the central directory starts, its size, and where the records after it (the
        end record, and the zip64 record and locator torch writes before it) start: as
        ``zipfile`` finds them, for an archive without a comment."""
        end_at = self._size - END_BYTES
        end = self._read(end_at, END_BYTES) if end_at >= 0 else b""
        if len(end) != END_BYTES:
            raise Unsure
        signature, _, _, _, _, directory_bytes, directory_at, comment = END_RECORD.unpack(end)
        if signature != END or comment:
            raise Unsure
        locator_at = end_at - LOCATOR_BYTES
        locator = self._read(locator_at, LOCATOR_BYTES) if locator_at >= 0 else b""
        if locator[:4] != ZIP64_LOCATOR:
            return directory_at, directory_bytes, end_at
        _, disk, _, disks = LOCATOR_RECORD.unpack(locator)
        record = self._read(locator_at - ZIP64_END_BYTES, ZIP64_END_BYTES)
        if disk or disks > 1 or len(record) != ZIP64_END_BYTES or record[:4] != ZIP64_END:
            raise Unsure
        directory_bytes, directory_at = ZIP64_END_RECORD.unpack(record)[-2:]
        return directory_at, directory_bytes, locator_at - ZIP64_END_BYTES

    def size_of(self, name: str) -> int | None:
        """The member's size, uncompressed; None when the archive has no such member."""
        entry = self._entries.get(name)
        return entry[3] if entry is not None else None

    def read(self, name: str, count: int) -> bytes:
        """The first ``count`` bytes of member ``name`` (all of a shorter one), as
        ``ZipFile.open(name).read(count)`` gives them, CRC checked where that reads the
        member to its end."""
        offset, method, compressed, size, crc, raw_name = self._entries[name]
        header = self._read(offset, LOCAL_BYTES)
        if len(header) != LOCAL_BYTES:
            raise Unsure
        signature, _, _, _, _, _, _, _, _, _, name_bytes, extra_bytes = _LOCAL.unpack(header)
        start = offset + LOCAL_BYTES + name_bytes + extra_bytes
        if (signature != LOCAL or self._read(offset + LOCAL_BYTES, name_bytes) != raw_name
                or start + compressed > self._size):
            raise Unsure
        whole = count >= size
        if whole and method == DEFLATED and compressed <= MAX_COMPRESSED_BYTES:
            data = _inflated(self._read(start, compressed), size)
        elif method == STORED and (whole or count >= ZIPFILE_MIN_READ):
            data = self._read(start, min(count, size))
        else:  # part of a deflated member: zipfile inflates only what it returns
            raise Unsure
        if len(data) != min(count, size) or (whole and zlib.crc32(data) != crc):
            raise Unsure
        return data

    def _read(self, offset: int, count: int) -> bytes:
        if offset < 0 or count < 0:
            raise Unsure
        try:
            return os.pread(self._fd, count, offset)
        except (OSError, OverflowError):
            raise Unsure from None


def _plain_name(name: bytes) -> bool:
    """Printable ASCII: the same text whether read as UTF-8 or cp437, and nothing that
    ``zipfile`` rewrites (it cuts a name at a NUL)."""
    return bool(name) and not name.translate(None, _PRINTABLE_ASCII)


#: The bytes of a plain name, each of them deleted by ``bytes.translate`` to see what is left.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))


def _has_zip64(extra: bytes) -> bool:
    """Whether the extra field holds a zip64 record, or does not parse as ``zipfile`` reads
    it (either is Unsure's)."""
    while len(extra) >= 4:
        kind, length = struct.unpack_from("<2H", extra)
        if kind == 1 or length + 4 > len(extra):
            return True
        extra = extra[length + 4:]
    return False


def _inflated(data: bytes, size: int) -> bytes:
    """A deflated member whole; Unsure when the stream is corrupt or not ``size`` bytes."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, size + 1) + inflater.flush()
    except zlib.error:
        raise Unsure from None
    if not inflater.eof or len(out) != size:
        raise Unsure
    return out
