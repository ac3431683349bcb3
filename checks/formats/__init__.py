"""Read the model file a backend would load, by its byte layout only.

Each reader takes a path (or a descriptor open on it) and returns a ``ModelFile``; none of
them raises on bad input, and none executes, imports or unpickles anything: ONNX is walked on
the protobuf wire, TorchScript is read as a zip (code with ``ast``), TensorRT plans by their
header, OpenVINO IR as XML.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from triton_doctor.checks.formats import sniff
from triton_doctor.evidence import ModelFile

#: ENOENT for a file that was just listed in its version directory: a dangling link.
LISTED_BUT_MISSING = "does not exist (dangling symbolic link?)"


def _onnx(handle: int, size: int, head: bytes, path: str, **options: Callable[[], bool]
          ) -> ModelFile:
    from triton_doctor.checks.formats.onnx import read_open_onnx

    return read_open_onnx(handle, size, path, **options)


def _plan(handle: int, size: int, head: bytes, path: str) -> ModelFile:
    from triton_doctor.checks.formats.tensorrt import read_open_plan

    return read_open_plan(handle, size, path)


def _torchscript(handle: int, size: int, head: bytes, path: str) -> ModelFile:
    from triton_doctor.checks.formats.torchscript import read_open_torchscript

    return read_open_torchscript(handle, size, path, head)


def _openvino(handle: int, size: int, head: bytes, path: str) -> ModelFile:
    """The IR's XML, read whole within its cap by path (rare beside the others)."""
    from triton_doctor.checks.formats.openvino import read_openvino

    return read_openvino(path)


#: Readers by backend, each imported when it first reads a file (a repository of ONNX models
#: never loads the zip, XML or plan readers); other backends' files are only sniffed. Each
#: takes the descriptor open on the file, its size and first bytes, and its path.
READERS: dict[str, Callable[..., ModelFile]] = {
    "onnxruntime": _onnx,
    "pytorch": _torchscript,
    "tensorrt": _plan,
    "openvino": _openvino,
}
#: What a reader meeting bytes it did not expect may raise; any of them is that file's problem.
PARSE_ERRORS = (ValueError, OverflowError, struct.error, RecursionError, MemoryError)


def read_model_file(model_path: str, relative: str, backend: str, *,
                    may_quote: Callable[[], bool] = lambda: True,
                    heads: sniff.Heads | None = None) -> ModelFile:
    """The file ``relative`` (``1/model.onnx``) of a model directory, as ``backend`` sees it;
    a problem quotes the file's own text only where ``may_quote()`` (asked then) says so;
    ``heads`` gets the file's first bytes and size.

    ``relative`` was listed in its directory a moment before, so one that is gone now is a
    dangling symbolic link, and is called so (as config.pbtxt is). A reader that fails on
    bytes it did not foresee makes that the file's problem, never the end of the check.
    """
    try:
        return _read(model_path, relative, backend, may_quote, {} if heads is None else heads)
    except PARSE_ERRORS as error:
        return ModelFile(path=relative, problem=f"cannot be parsed: {type(error).__name__}: "
                         f"{error} (the file is corrupt, or triton-doctor misreads it)")


def _read(model_path: str, relative: str, backend: str, may_quote: Callable[[], bool],
          heads: sniff.Heads) -> ModelFile:
    path = os.path.join(model_path, relative)
    if os.path.isdir(path):
        if backend != "onnxruntime":
            return ModelFile(path=relative, kind="directory")
        # The ONNX Runtime backend loads <dir>/model.onnx, whatever the directory is called
        # (how models with external data are usually shipped).
        inner = os.path.join(path, "model.onnx")
        if not os.path.exists(inner):  # a FIFO or device there is read_onnx's to refuse
            return ModelFile(path=relative, kind="directory",
                             problem="is a directory without a model.onnx file in it (ONNX "
                             "Runtime loads <directory>/model.onnx)")
        from triton_doctor.checks.formats.onnx import read_onnx

        found = read_onnx(inner, may_quote=may_quote)
        found.path = relative
        return found
    found = sniff.read_opened(path, lambda handle, size: _read_open(
        handle, size, path, relative, backend, may_quote, heads), relative, LISTED_BUT_MISSING)
    found.path = relative
    return found


def _read_open(handle: int, size: int, path: str, relative: str, backend: str,
               may_quote: Callable[[], bool], heads: sniff.Heads) -> ModelFile:
    """``_read`` of the file open on ``handle``: sniffed from its first bytes, then read by
    its backend's reader from the same descriptor (one open of the file in all)."""
    try:
        head = sniff.head_of(handle)
    except OSError as error:
        return sniff.unreadable_file(relative, error, missing=LISTED_BUT_MISSING)
    heads[path] = head, size
    kind = sniff.sniff_bytes(head, size)
    if kind == "empty":
        return sniff.empty_file(relative)
    if kind == "lfs-pointer":
        target = sniff.describe_lfs_pointer(head)
        return ModelFile(
            path=relative, size_bytes=size, kind=kind,
            problem="is a Git LFS pointer, not the model"
            + (f" (the real file is {target} bytes)" if target else ""),
        )
    reader = READERS.get(backend)
    if reader is None:
        return ModelFile(path=relative, size_bytes=size, kind=kind)
    # Only the ONNX reader quotes a file's text (how a text file that is no model begins).
    return (reader(handle, size, head, path, may_quote=may_quote) if backend == "onnxruntime"
            else reader(handle, size, head, path))
