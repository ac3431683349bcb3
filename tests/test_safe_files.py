"""Reading a repository's files whole or by their start: exact bytes, the cap, no buffer the
size of the cap for a small file, and one open of a model file."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from triton_doctor.safe_files import READ_BYTES, FileTooLarge, read_file, read_start

from tests.helpers import ROOT


@pytest.mark.parametrize("size", [0, 1, 300, READ_BYTES - 1, READ_BYTES + 7, 3 * READ_BYTES])
def test_read_file_gives_every_byte(tmp_path, size):
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert read_file(path, cap=4 * READ_BYTES) == data
    assert read_file(path, cap=size) == data  # exactly at the cap is allowed


def test_read_file_refuses_past_the_cap(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(FileTooLarge) as raised:
        read_file(path, cap=1000)
    assert raised.value.size == 1001


def test_a_small_file_does_not_cost_a_buffer_the_size_of_the_cap(tmp_path):
    """A config of a few hundred bytes read under an 8 MiB cap: a buffered read of the cap
    allocated all of it first, 80 us a file."""
    path = tmp_path / "config.pbtxt"
    path.write_bytes(b'name: "m"\n' * 30)
    tracemalloc.start()
    try:
        read_file(path, cap=64 * 2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


@pytest.mark.parametrize(("size", "count"), [(0, 256), (100, 256), (256, 256), (5000, 256)])
def test_read_start_gives_the_first_bytes_and_the_size(tmp_path, size, count):
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert read_start(path, count) == (data[:count], size)


def test_neither_opens_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for read in (lambda: read_file(fifo, 10), lambda: read_start(fifo, 10),
                 lambda: read_file(tmp_path, 10)):
        with pytest.raises(OSError, match="not a regular file"):
            read()


@pytest.mark.parametrize(("model", "backend", "read_alone"), [
    ("rules/TD306/pass/resnet50/1/model.onnx", "onnxruntime", "onnx:read_onnx"),
    ("rules/TD311/fail/pair_scorer/1/model.pt", "pytorch", "torchscript:read_torchscript"),
    ("demo-repository/detector_trt/1/model.plan", "tensorrt", "tensorrt:read_plan"),
])
def test_a_model_file_is_opened_once_and_read_as_its_reader_reads_it_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, backend: str,
        read_alone: str) -> None:
    """Its first bytes tell what it is, and its backend's reader goes on from the same
    descriptor: the answer is the reader's own on the path."""
    import importlib

    from triton_doctor.checks import formats

    version = tmp_path / "1"
    version.mkdir()
    name = Path(model).name
    (version / name).write_bytes((ROOT / "fixtures" / model).read_bytes())
    module, function = read_alone.split(":")
    alone = getattr(importlib.import_module(f"triton_doctor.checks.formats.{module}"), function)
    expected = alone(str(version / name))
    expected.path = f"1/{name}"
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args, **kwargs: opened.append(
        os.fspath(path)) or real_open(path, *args, **kwargs))
    found = formats.read_model_file(str(tmp_path), f"1/{name}", backend)
    assert found == expected and found.problem is None
    assert opened == [str(version / name)]
