"""Read a TensorRT plan's header without TensorRT, a GPU or deserialising the engine.

NVIDIA documents no way to ask a plan which TensorRT version and GPU it was built for, yet
a mismatch with the server is the most common reason a plan fails to load. The layout used
here was inferred from real plans (TensorRT 7.0 to 10.6), so every field is a best effort:
whatever does not decode is left unknown ("" or None), never guessed.

Layout, as observed:

* an optional Ultralytics prefix: ``<u32 LE length N><N bytes of JSON metadata>``;
* TensorRT >= 8.6: an ``ftrt`` container, version bytes at 24..27 and a section table whose
  ``NGNE`` entry points to the engine blob;
* the engine blob (``ptrt``, the whole plan before 8.6): a short header holding the
  serialization version, then a tagged token stream that opens with the version as four u8
  tokens and continues with the build GPU's device properties;
* TensorRT <= 5: no magic; the file starts with a u64 equal to its own size ("legacy").
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

from triton_doctor.checks.formats import sniff
from triton_doctor.evidence import ModelFile, PlanFacts, too_deep
from triton_doctor.records import record

#: Bytes of a plan (or engine blob) that the reader looks at; the header is far smaller.
HEADER_BYTES = 64 * 1024
#: Longest Ultralytics metadata JSON that is parsed (real ones are a few hundred bytes).
MAX_METADATA_BYTES = 1024 * 1024
#: The version tokens must start within this many bytes of the engine blob.
VERSION_SCAN_BYTES = 64
#: Sections read from the ``ftrt`` table at most (samples have 1 or 2), and an entry's bytes.
MAX_SECTIONS = 16
SECTION_ENTRY_BYTES = 24

FTRT = b"ftrt"
PTRT = b"ptrt"
ENGINE_SECTION = b"NGNE"

#: Token types of the tagged stream that carry a payload, and the payload size.
PAYLOAD_SIZES = {0x02: 1, 0x07: 4, 0x08: 8, 0x0A: 1}
U8_TOKEN = 0x02
I32_TOKEN = 0x07
#: Flag byte of a token tag: 0x00 on TensorRT 7, 0x80 from 8.2 on.
TOKEN_FLAGS = (0x00, 0x80)
#: The device-properties value just before multiProcessorCount (its meaning is unknown).
SM_COUNT_ANCHOR = 512

NOT_A_PLAN = "is not a TensorRT plan (no 'ftrt'/'ptrt' magic)"


@record
class _Token:
    kind: int
    value: int | None
    end: int


def read_plan(path: str) -> ModelFile:
    """What the plan header at ``path`` says; never raises on bad input."""
    return sniff.read_opened(path, lambda handle, size: read_open_plan(handle, size, path))


def read_open_plan(handle: int, size: int, path: str) -> ModelFile:
    """``read_plan`` of the file open on ``handle``, ``size`` bytes long when opened (the
    caller closes it)."""
    try:
        with os.fdopen(handle, "rb", closefd=False) as opened:
            return _read_open_plan(opened, path, size)
    except OSError as error:
        return sniff.unreadable_file(path, error)


def _read_open_plan(handle: BinaryIO, path: str, size: int) -> ModelFile:
    if size == 0:
        return sniff.empty_file(path)
    head = handle.read(HEADER_BYTES)
    facts = PlanFacts()
    start = 0
    prefix = sniff.ultralytics_length(head, size)
    if prefix is not None:
        facts.metadata = _read_metadata(handle, prefix)
        start = 4 + prefix
        head = _read_at(handle, start, HEADER_BYTES)
    found = ModelFile(path=path, size_bytes=size, kind="tensorrt", tensorrt=facts)
    if head.startswith(FTRT):
        facts.container = "ftrt"
        found.problem = _read_container(handle, head, start, size - start, facts)
    elif head.startswith(PTRT):
        facts.container = "ptrt"
        _read_engine(head, facts)
    elif prefix is None and _is_legacy(head, size):
        facts.container = "legacy"
    else:
        found.kind = "unknown"
        found.tensorrt = None
        found.problem = NOT_A_PLAN
    return found


def _read_at(handle: BinaryIO, offset: int, count: int) -> bytes:
    handle.seek(offset)
    return handle.read(count)


def _u32(data: bytes, offset: int) -> int | None:
    if offset < 0 or offset + 4 > len(data):
        return None
    return int(struct.unpack_from("<I", data, offset)[0])


def _u64(data: bytes, offset: int) -> int | None:
    if offset < 0 or offset + 8 > len(data):
        return None
    return int(struct.unpack_from("<Q", data, offset)[0])


def _read_metadata(handle: BinaryIO, length: int) -> dict[str, Any]:
    """Ultralytics' JSON (image size, task, class names), or {} when it is not a JSON object
    (or one nested deeper than any real one, which a snapshot could not hold)."""
    if length > MAX_METADATA_BYTES:
        return {}
    raw = _read_at(handle, 4, length)
    try:
        parsed = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) and not too_deep(parsed) else {}


def _is_legacy(head: bytes, size: int) -> bool:
    """TensorRT <= 5 plans start with a u64 equal to the file size (no magic)."""
    return size > 8 and _u64(head, 0) == size


def _plausible_version(parts: tuple[int, ...]) -> bool:
    """Rejects version bytes that cannot be a TensorRT release (garbage, zeros)."""
    major, minor, patch, _build = parts
    return 1 <= major <= 50 and minor <= 50 and patch <= 50


def _format_version(parts: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in parts) if _plausible_version(parts) else ""


def _read_container(
    handle: BinaryIO, head: bytes, start: int, available: int, facts: PlanFacts
) -> str | None:
    """Fills ``facts`` from an ``ftrt`` container; returns a problem when it is truncated."""
    if len(head) >= 28:
        facts.tensorrt_version = _format_version(tuple(head[24:28]))
    located = _engine_in_table(handle, head, start, available)
    blob = located if located is not None else _first_engine(handle, head, start)
    if blob is not None:
        container_version = facts.tensorrt_version
        _read_engine(blob, facts)
        if container_version:
            facts.tensorrt_version = container_version
    declared = _u64(head, 16)
    if declared is None or len(head) < 32:
        return f"is truncated: {available} bytes, shorter than a TensorRT plan header"
    if available < declared:
        return (
            f"is truncated: the plan header says {declared} bytes but only {available} "
            "are there (an interrupted copy or download?)"
        )
    # The table's layout is inferred from observed plans: its offsets are only trusted once
    # the engine section was found where its entry says (a misread table is no corruption).
    beyond = next((offset for _, offset in _sections(head) if offset >= available), None)
    if located is not None and beyond is not None:
        return (f"is a corrupt plan: a section offset of {beyond} is beyond the file's "
                f"{available} bytes")
    return None


def _sections(head: bytes) -> Iterator[tuple[bytes, int]]:
    """(tag, offset) of each entry of the ``ftrt`` section table; an entry is 24 bytes: the
    tag, then at +8 the section's offset and at +16 its size (not needed here)."""
    count = _u32(head, 8) or 0
    for index in range(min(count, MAX_SECTIONS)):
        entry = 32 + SECTION_ENTRY_BYTES * index
        offset = _u64(head, entry + 8)
        if offset is None or entry + SECTION_ENTRY_BYTES > len(head):
            return  # the table is cut short
        yield head[entry : entry + 4], offset


def _engine_in_table(handle: BinaryIO, head: bytes, start: int,
                     available: int) -> bytes | None:
    """The first bytes of the engine blob where the ``NGNE`` entry of the section table says
    it is; None when no entry leads to one (an offset past the ``available`` bytes of the plan
    is not followed)."""
    for tag, offset in _sections(head):
        if tag == ENGINE_SECTION and offset < available:
            blob = _read_at(handle, start + offset, HEADER_BYTES)
            if blob.startswith(PTRT):
                return blob
    return None


def _first_engine(handle: BinaryIO, head: bytes, start: int) -> bytes | None:
    """Unknown table layout: the engine blob is the first ``ptrt`` in the header."""
    found = head.find(PTRT, 32)
    if found < 0:
        return None
    return _read_at(handle, start + found, HEADER_BYTES)


def _read_engine(blob: bytes, facts: PlanFacts) -> None:
    """Fills version and device properties from a ``ptrt`` blob."""
    version = _find_version_tokens(blob)
    if version is None:
        return
    parts, stream_at = version
    facts.tensorrt_version = _format_version(parts)
    props = _device_properties(blob, stream_at)
    if len(props) >= 2 and 1 <= props[0] <= 20 and 0 <= props[1] <= 9:
        facts.compute_capability = f"{props[0]}.{props[1]}"
        facts.multiprocessor_count = _sm_count(props, parts)


def _token_at(blob: bytes, offset: int) -> _Token | None:
    """The token whose tag ``[type, flag, 0x01, 0x00]`` starts at ``offset``, if any."""
    tag = blob[offset : offset + 4]
    if len(tag) < 4 or tag[2] != 0x01 or tag[3] != 0x00 or tag[1] not in TOKEN_FLAGS:
        return None
    kind = tag[0]
    width = PAYLOAD_SIZES.get(kind, 0)
    end = offset + 4 + width
    if end > len(blob):
        return None
    value = int.from_bytes(blob[offset + 4 : end], "little", signed=True) if width else None
    return _Token(kind, value, end)


def _find_version_tokens(blob: bytes) -> tuple[tuple[int, ...], int] | None:
    """The four u8 tokens that open the stream: (major, minor, patch, build), stream offset."""
    for offset in range(4, VERSION_SCAN_BYTES):
        parts: list[int] = []
        at = offset
        flag = blob[offset + 1 : offset + 2]
        while len(parts) < 4:
            token = _token_at(blob, at)
            if token is None or token.kind != U8_TOKEN or blob[at + 1 : at + 2] != flag:
                break
            parts.append((token.value or 0) & 0xFF)
            at = token.end
        if len(parts) == 4:
            return tuple(parts), at
    return None


def _device_properties(blob: bytes, offset: int) -> list[int]:
    """The first run of two or more i32 tokens after a marker: the device-properties block."""
    armed = False
    run: list[int] = []
    while True:
        token = _token_at(blob, offset)
        if token is None:
            return run if len(run) >= 2 else []
        if token.kind == I32_TOKEN and armed:
            run.append(token.value or 0)
        elif run:
            if len(run) >= 2:
                return run
            run = []
            armed = False
        if token.kind not in PAYLOAD_SIZES:
            armed = True
        offset = token.end


def _sm_count(props: list[int], version: tuple[int, ...]) -> int | None:
    """multiProcessorCount: the value after the 512 constant (index 9, or 10 from 8.6 on)."""
    for index in (9, 10):
        if index < len(props) and props[index - 1] == SM_COUNT_ANCHOR and props[index] > 0:
            return props[index]
    index = 10 if version[:2] >= (8, 6) else 9
    if index < len(props) and 0 < props[index] < 10_000:
        return props[index]
    return None
