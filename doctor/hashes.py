"""SHA-256 and BLAKE2b from CPython's own modules where it has them.

``hashlib`` loads OpenSSL's binding first, 3 to 4 ms: a third of what a re-run answered by the
cache spends importing this tool. The digests are the same; another interpreter, or a CPython
whose module is named otherwise, gets them from ``hashlib``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

#: Where CPython keeps each algorithm of its own, by release (3.12 merged the SHA-2 modules).
_BUILTIN = {"sha256": ("_sha2", "_sha256"), "blake2b": ("_blake2",)}


@cache
def algorithm(name: str) -> Any:
    """The constructor of ``name`` (``sha256`` or ``blake2b``), as ``hashlib`` would give it."""
    for module in _BUILTIN[name]:
        try:
            return getattr(__import__(module), name)
        except (ImportError, AttributeError):
            continue
    import hashlib

    return getattr(hashlib, name)
