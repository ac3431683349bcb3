"""The hashes taken from CPython's own modules are hashlib's, and hashlib answers where those
modules are missing."""

from __future__ import annotations

import hashlib

import pytest
from triton_doctor import hashes

DATA = "model\x1fTD304\x1finput[0]\x1fé \ud800".encode("utf-8", "surrogatepass")


def test_the_builtin_digests_are_hashlibs() -> None:
    assert hashes.algorithm("sha256")(DATA).hexdigest() == hashlib.sha256(DATA).hexdigest()
    blake = hashes.algorithm("blake2b")(DATA, digest_size=16).hexdigest()
    assert blake == hashlib.blake2b(DATA, digest_size=16).hexdigest()


def test_they_come_without_hashlib_where_cpython_has_them() -> None:
    for name in ("sha256", "blake2b"):
        assert hashes.algorithm(name).__module__ in {"_sha2", "_sha256", "_blake2"}


def test_hashlib_answers_where_the_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    hashes.algorithm.cache_clear()
    monkeypatch.setitem(hashes._BUILTIN, "sha256", ("_no_such_module",))
    try:
        assert hashes.algorithm("sha256") is hashlib.sha256
    finally:
        hashes.algorithm.cache_clear()
