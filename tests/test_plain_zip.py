"""The plain zip reader against ``zipfile``: the same names and the same bytes wherever it
answers, Unsure wherever ``zipfile`` would refuse, on torch's archives, on archives written
every other way here, and on thousands of damaged ones."""

from __future__ import annotations

import io
import os
import random
import warnings
import zipfile
from pathlib import Path

import pytest
from triton_doctor.checks.formats import torchscript
from triton_doctor.checks.formats.plain_zip import PlainZip, Unsure

MODELS = Path(__file__).resolve().parent.parent / "fixtures" / "models" / "torchscript"
CODE = (b"class Net(Module):\n  def forward(self: __torch__.Net,\n    x: Tensor) -> Tensor:\n"
        b"    return x\n")
#: Reads asked of every member: short ones, zipfile's least read, whole and past the end.
COUNTS = (1, 97, 4095, 4096, 4097, 1 << 20)


def _written(members: dict[str, bytes], method: int = zipfile.ZIP_STORED,
             comment: bytes = b"", prefix: bytes = b"", zip64: bool = False) -> bytes:
    out = io.BytesIO()
    out.write(prefix)
    with zipfile.ZipFile(out, "a" if prefix else "w", method) as archive:
        for name, data in members.items():
            with archive.open(name, "w", force_zip64=zip64) as member:
                member.write(data)
        archive.comment = comment
    return out.getvalue()


def _archives() -> dict[str, bytes]:
    rng = random.Random(5)
    members = {"net/data.pkl": b"\x80\x02c__torch__\nNet\n.", "net/code/__torch__.py": CODE,
               "net/big": bytes(rng.randrange(256) for _ in range(9000)),
               "net/version": b"3\n", "net/empty": b""}
    built = {path.name: path.read_bytes() for path in sorted(MODELS.glob("*.pt"))}
    built |= {
        "stored": _written(members),
        "deflated": _written(members, zipfile.ZIP_DEFLATED),
        "comment": _written(members, comment=b"made here"),
        # offsets counted from the archive's start, as a zip concatenated to a script has
        "prefixed": b"#!/bin/sh\n" + _written(members),
        "appended to a script": _written(members, prefix=b"#!/bin/sh\n"),
        "zip64 local headers": _written(members, zip64=True),
        "utf8 name": _written({"net/dätä.pkl": b"x", **members}),
        "duplicate": _duplicated(members),
        "bzip2": _written(members, zipfile.ZIP_BZIP2),
    }
    return built


def _duplicated(members: dict[str, bytes]) -> bytes:
    """An archive naming one member twice (zipfile warns, and reads the second)."""
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as archive:
        warnings.simplefilter("ignore", UserWarning)
        for name, data in [*members.items(), ("net/version", b"4\n")]:
            archive.writestr(name, data)
    return out.getvalue()


def _damaged(data: bytes, rng: random.Random) -> bytes:
    changed = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(changed))
        changed[where] = rng.randrange(256)
    if rng.random() < 0.2:
        changed = changed[:rng.randrange(len(changed))]
    return bytes(changed)


def _zipfile_answer(data: bytes, name: str, count: int) -> bytes | None:
    """``zipfile``'s bytes of the member; None when it refuses."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive, archive.open(name) as member:
            read: bytes = member.read(count)
            return read
    except Exception:
        return None


def _compare(data: bytes, path: Path) -> bool:
    """Whether the plain reader answered at all; asserts that every answer is zipfile's."""
    path.write_bytes(data)
    handle = os.open(path, os.O_RDONLY)
    try:
        try:
            plain = PlainZip(handle)
        except Unsure:
            return False
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            assert plain.names == archive.namelist()
            for name in set(plain.names):
                assert plain.size_of(name) == archive.getinfo(name).file_size
        for name in set(plain.names):
            for count in COUNTS:
                try:
                    mine = plain.read(name, count)
                except Unsure:
                    continue
                assert mine == _zipfile_answer(data, name, count), (name, count)
        return True
    finally:
        os.close(handle)


def test_it_answers_as_zipfile_on_whole_archives(tmp_path: Path) -> None:
    answered = {label for label, data in _archives().items()
                if _compare(data, tmp_path / "model.pt")}
    assert {"traced_two_inputs.pt", "dict_input.pt", "script_net.pt", "stored", "deflated",
            "duplicate", "zip64 local headers", "appended to a script"} <= answered
    # what it leaves to zipfile: a comment, bytes before the archive, a non-ASCII name, a
    # compression other than deflate
    assert not answered & {"comment", "prefixed", "utf8 name", "bzip2"}


@pytest.mark.parametrize("seed", range(4))
def test_it_answers_as_zipfile_on_damaged_archives(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    archives = list(_archives().values())
    answered = 0
    for _ in range(750):
        answered += _compare(_damaged(rng.choice(archives), rng), tmp_path / "model.pt")
    assert answered > 50  # damage that leaves the directory whole is still read plainly


def test_torchscript_reads_the_same_either_way(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Every archive, whole and damaged, read as torchscript does, then with the plain reader
    always unsure (so by zipfile alone): the same ModelFile."""
    rng = random.Random(11)
    archives = list(_archives().values())
    samples = archives + [_damaged(rng.choice(archives), rng) for _ in range(600)]
    path = tmp_path / "model.pt"
    found = []
    for data in samples:
        path.write_bytes(data)
        found.append(torchscript.read_torchscript(str(path)))

    def unsure(_: int) -> None:
        raise Unsure

    monkeypatch.setattr(torchscript, "PlainZip", unsure)
    for data, plain in zip(samples, found, strict=True):
        path.write_bytes(data)
        assert torchscript.read_torchscript(str(path)) == plain


def test_zip64_end_records_are_read_as_zipfile_reads_them(tmp_path: Path) -> None:
    """More entries than a plain end record counts: zipfile writes zip64 end records, as
    torch always does."""
    data = _written({f"net/{index}": str(index).encode() for index in range(70_000)})
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    handle = os.open(path, os.O_RDONLY)
    try:
        plain = PlainZip(handle)
        with zipfile.ZipFile(path) as archive:
            assert plain.names == archive.namelist()
        assert plain.read("net/69999", 10) == b"69999"
    finally:
        os.close(handle)


def test_a_local_header_that_names_another_member_is_left_to_zipfile(tmp_path: Path) -> None:
    data = bytearray(_written({"net/a": b"1", "net/b": b"2"}))
    at = data.index(b"net/a")  # the first local header's name
    data[at + 4] = ord("c")
    path = tmp_path / "model.pt"
    path.write_bytes(bytes(data))
    handle = os.open(path, os.O_RDONLY)
    try:
        plain = PlainZip(handle)
        with pytest.raises(Unsure):
            plain.read("net/a", 10)
        assert plain.read("net/b", 10) == b"2"
    finally:
        os.close(handle)
    assert _zipfile_answer(bytes(data), "net/a", 10) is None
