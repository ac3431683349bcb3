"""Snapshots: the Evidence of an incident saved as JSON, to judge again later or elsewhere.

The format is versioned (``triton-doctor/snapshot/v1``) and documented in docs/snapshots.md.
It holds what the collectors saw (config texts, server answers, metric samples, GPU and host
readings), never credentials: URLs are stored without user:password, and no request headers
are kept.
"""

from __future__ import annotations

import json
import time
from typing import Any

from triton_doctor.evidence import Evidence, EvidenceError, from_jsonable, to_jsonable
from triton_doctor.safe_files import read_file, write_file

SCHEMA = "triton-doctor/snapshot/v1"
#: A thousand models' snapshot is a few MiB; a larger file is refused, not read into memory.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024


class SnapshotError(ValueError):
    """A file that is not a readable snapshot of this version."""


def dump(evidence: Evidence) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "evidence": to_jsonable(evidence),
    }


def write(evidence: Evidence, path: str) -> None:
    """Write a file atomically (a reader never sees half a snapshot), and through a device or
    FIFO (``-o /dev/stdout``) without replacing it; see ``safe_files.write_file``."""
    write_file(path, (json.dumps(dump(evidence), indent=1) + "\n").encode("utf-8"))


def read(path: str) -> Evidence:
    try:
        data = json.loads(read_file(path, MAX_SNAPSHOT_BYTES).decode("utf-8"))
    except OSError as error:
        raise SnapshotError(f"{path}: cannot be read: {error.strerror or error}") from None
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested past Python
        raise SnapshotError(f"{path}: not a snapshot (not JSON: {error})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise SnapshotError(
            f"{path}: not a {SCHEMA} snapshot (schema: {found!r}); write one with "
            "`triton-doctor snapshot --url URL -o FILE`"
        )
    try:
        evidence: Evidence = from_jsonable(Evidence, data.get("evidence", {}))
    except EvidenceError as error:
        raise SnapshotError(
            f"{path}: the snapshot's evidence is malformed at {error}; was it edited? Take a "
            "new one with `triton-doctor snapshot --url URL -o FILE`") from None
    return evidence
