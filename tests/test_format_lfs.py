"""Git LFS pointers found among a model directory's files (checks/formats/lfs.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from triton_doctor.checks.formats.lfs import MAX_POINTER_BYTES, find_pointers
from triton_doctor.checks.repository import collect_repository

POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 4096\n"


def _write(root: Path, relative: str, data: bytes) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_pointers_inside_a_directory_model_are_found_with_their_size(tmp_path: Path) -> None:
    _write(tmp_path, "m/1/model.savedmodel/saved_model.pb", POINTER)
    _write(tmp_path, "m/1/model.savedmodel/variables/variables.index", b"real bytes")
    _write(tmp_path, "m/config.pbtxt", b'platform: "tensorflow_savedmodel"\n')
    (model,) = collect_repository(tmp_path).models
    assert model.lfs_pointers == {"1/model.savedmodel/saved_model.pb": "4096"}


def test_only_files_small_enough_to_be_pointers_are_read(tmp_path: Path) -> None:
    _write(tmp_path, "big.bin", POINTER + b"\0" * MAX_POINTER_BYTES)
    _write(tmp_path, "empty.bin", b"")
    _write(tmp_path, "small.bin", POINTER)
    tree = ["big.bin", "empty.bin", "small.bin", "missing.bin", "sub/"]
    assert find_pointers(str(tmp_path), tree) == {"small.bin": "4096"}


def test_a_fifo_is_passed_over_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "weights.bin")
    assert find_pointers(str(tmp_path), ["weights.bin"]) == {}


def test_only_the_digits_of_the_recorded_size_are_kept(tmp_path: Path) -> None:
    """The pointer's text is the repository's: terminal escapes after the size stay out."""
    head = POINTER.replace(b"size 4096\n", b"size 12\x1b[31m\xff\n")
    _write(tmp_path, "weights.bin", head)
    assert find_pointers(str(tmp_path), ["weights.bin"]) == {"weights.bin": "12"}


def test_a_config_in_pointer_form_is_left_to_the_config_reader(tmp_path: Path) -> None:
    """config.pbtxt is read whole already: a pointer there is a config that does not parse."""
    _write(tmp_path, "m/config.pbtxt", POINTER)
    _write(tmp_path, "m/configs/prod.pbtxt", POINTER)
    _write(tmp_path, "m/1/tokenizer.json", POINTER)
    (model,) = collect_repository(tmp_path).models
    assert list(model.lfs_pointers) == ["1/tokenizer.json"]
    assert model.config.syntax_error is not None


def test_a_file_the_model_read_is_looked_at_as_read_not_opened_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model file and a model.py are opened once, by their readers; the scan looks at what
    those read, and opens the other small files itself."""
    _write(tmp_path, "vision/config.pbtxt", b'backend: "onnxruntime"\n')
    _write(tmp_path, "vision/1/model.onnx", POINTER)
    _write(tmp_path, "vision/1/labels.txt", POINTER)
    _write(tmp_path, "vision/2/model.onnx", b"\x08\x07" + b"\0" * 2000)  # too large for one
    _write(tmp_path, "scorer/config.pbtxt", b'backend: "python"\n')
    _write(tmp_path, "scorer/1/model.py", POINTER)
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args, **kwargs: opened.append(
        os.path.relpath(path, tmp_path)) or real_open(path, *args, **kwargs))
    models = {model.name: model for model in collect_repository(tmp_path).models}
    assert models["vision"].lfs_pointers == {"1/labels.txt": "4096", "1/model.onnx": "4096"}
    assert models["scorer"].lfs_pointers == {"1/model.py": "4096"}
    files = sorted(name for name in opened if not name.endswith("config.pbtxt"))
    assert files == ["scorer/1/model.py", "vision/1/labels.txt", "vision/1/model.onnx",
                     "vision/2/model.onnx"]
