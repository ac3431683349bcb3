"""Read a TorchScript archive's forward() signature without torch and without unpickling.

Triton's PyTorch backend loads only ``torch.jit.save`` archives. Users often ship a
``torch.save`` file instead (a state_dict, or a whole pickled module), which fails with an
opaque libtorch error. A TorchScript archive is a zip whose single top-level folder ``<p>/``
holds ``data.pkl`` (the module object tree), ``code/`` (the TorchScript source of every
class) and ``version``; a ``torch.save`` zip has no ``code/``.

Nothing from the file is executed, imported or unpickled: ``data.pkl`` is only disassembled
with ``pickletools.genops`` (to learn the module's class name) and the code is parsed with
``ast``. Members are read with size caps, so a zip bomb costs at most a few MiB.
"""

from __future__ import annotations

import ast
import functools
import os
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from triton_doctor.checks.formats import sniff
from triton_doctor.checks.formats.plain_zip import (
    END,
    END_BYTES,
    END_RECORD,
    LOCATOR_BYTES,
    LOCATOR_RECORD,
    ZIP64_END,
    ZIP64_END_BYTES,
    ZIP64_END_RECORD,
    ZIP64_LOCATOR,
    PlainZip,
    Unsure,
)
from triton_doctor.evidence import ModelFile, TensorInfo, TorchScriptArg, TorchScriptFacts

if TYPE_CHECKING:
    import zipfile

#: Largest code file parsed (real ones are kilobytes).
MAX_CODE_BYTES = 4 * 1024 * 1024
#: Bytes of data.pkl disassembled: the class name is its first opcodes.
MAX_PICKLE_SCAN_BYTES = 1024 * 1024
#: Budgets for the zip's central directory, which ``zipfile`` reads whole into objects (3 M
#: entries cost 1.6 GB); real TorchScript archives hold one entry per tensor, far fewer.
MAX_ZIP_ENTRIES = 100_000
MAX_ZIP_DIRECTORY_BYTES = 8 * 1024 * 1024
#: The longest comment a zip's end record can announce.
MAX_ZIP_COMMENT = 65535

#: torch.save's legacy (non-zip) format starts with this number, pickled.
LEGACY_TORCH_MAGIC = 0x1950A86A20F9469CFC6C

NOT_TORCHSCRIPT = (
    "is a torch.save archive, not TorchScript: it has no code/ folder "
    "(save it with torch.jit.save / torch.jit.trace(...).save)"
)
PICKLE = (
    "is a pickle (torch.save of a whole module?), not a TorchScript archive: the PyTorch "
    "backend loads only torch.jit.save archives (torch.jit.script(model).save(path) or "
    "torch.jit.trace(model, example).save(path))"
)
LEGACY_PICKLE = (
    "is a legacy torch.save file (a pickle), not a TorchScript archive: the PyTorch backend "
    "loads only torch.jit.save archives (torch.jit.script(model).save(path) or "
    "torch.jit.trace(model, example).save(path))"
)
PT2_AS_TORCHSCRIPT = (
    "is a PyTorch 2 export package (torch.export / AOTInductor), not TorchScript: "
    "platform pytorch_libtorch loads only torch.jit.save archives; serve it as model.pt2 "
    "with platform torch_aoti"
)
PICKLE_STRING_OPS = frozenset(
    {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING",
     "BINSTRING", "STRING"}
)
#: Errors that mean "this zip is corrupt", from opening it or reading a member (with
#: ``zipfile``'s own BadZipFile and LargeZipFile, where it reads the archive).
ZIP_ERRORS = (OSError, EOFError, ValueError, NotImplementedError, RuntimeError, zlib.error)


def read_torchscript(path: str) -> ModelFile:
    """What the archive at ``path`` declares; never raises on bad input."""
    return sniff.read_opened(path, lambda handle, size: read_open_torchscript(
        handle, size, path))


def read_open_torchscript(handle: int, size: int, path: str,
                          head: bytes | None = None) -> ModelFile:
    """``read_torchscript`` of the file open on ``handle``, ``size`` bytes long when opened
    (the caller closes it); ``head``: its first bytes, where the caller read them."""
    try:
        head = sniff.head_of(handle) if head is None else head
    except OSError as error:
        return sniff.unreadable_file(path, error)
    kind = sniff.sniff_bytes(head, size)
    if kind == "empty":
        return sniff.empty_file(path)
    found = ModelFile(path=path, size_bytes=size)
    if kind == "pickle":
        found.kind = "pickle"
        found.problem = LEGACY_PICKLE if _is_legacy_torch_save(head) else PICKLE
    elif kind != "zip":
        found.problem = "is not a TorchScript archive (not a zip file)"
    else:
        _read_zip(handle, path, found)
    return found


def _read_zip(descriptor: int, path: str, found: ModelFile) -> None:
    """The archive read as a plain zip (plain_zip), or by ``zipfile`` where that is not
    certain of the answer."""
    found.kind = "zip"
    try:
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            found.not_read = _directory_over_budget(handle)
            if found.not_read is not None:
                return
            try:
                plain = PlainZip(descriptor)
                _read_archive(plain.names, functools.partial(_plain_member, plain), path, found)
                return
            except Unsure:
                _forget(found)
            _read_by_zipfile(handle, path, found)
    except ZIP_ERRORS as error:
        _corrupt(found, error)


def _read_by_zipfile(handle: BinaryIO, path: str, found: ModelFile) -> None:
    import zipfile  # only for an archive that is not plain: with shutil, 8 ms to import

    try:
        with zipfile.ZipFile(handle) as archive:
            _read_archive(archive.namelist(), functools.partial(_zipfile_member, archive),
                          path, found)
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as error:
        _corrupt(found, error)


def _forget(found: ModelFile) -> None:
    """Undo what reading the archive found so far (it is read again another way)."""
    found.kind, found.torchscript, found.inputs, found.problem = "zip", None, None, None


def _corrupt(found: ModelFile, error: Exception) -> None:
    _forget(found)
    found.problem = f"is a corrupt or truncated zip archive ({error})"


def _directory_over_budget(handle: BinaryIO) -> str | None:
    """Why the zip's central directory is too large to read, from its end records alone;
    None when it is within budget (or has no end record: ``zipfile`` then says it is bad)."""
    size = handle.seek(0, 2)
    tail_start = max(0, size - END_BYTES - MAX_ZIP_COMMENT - LOCATOR_BYTES
                     - ZIP64_END_BYTES)
    handle.seek(tail_start)
    tail = handle.read()
    at = _end_record(tail)
    if at is None:
        return None
    _, _, _, _, entries, directory_bytes, _, _ = END_RECORD.unpack_from(tail, at)
    locator = at - LOCATOR_BYTES
    if locator >= 0 and tail[locator:locator + 4] == ZIP64_LOCATOR:
        # zipfile reads the zip64 record just before the locator (CPython 3.11's
        # _EndRecData64); others follow the locator's offset: the larger claim counts.
        record_at = LOCATOR_RECORD.unpack_from(tail, locator)[2]
        before = tail[max(0, locator - ZIP64_END_BYTES):locator]
        for record in (before, _read_at(handle, record_at, ZIP64_END_BYTES, size)):
            if record[:4] == ZIP64_END and len(record) == ZIP64_END_BYTES:
                count, length = ZIP64_END_RECORD.unpack(record)[7:9]
                entries, directory_bytes = max(entries, count), max(directory_bytes, length)
    if entries > MAX_ZIP_ENTRIES:
        return (f"its zip directory lists {entries} entries, over the {MAX_ZIP_ENTRIES} "
                "that are read")
    if directory_bytes > MAX_ZIP_DIRECTORY_BYTES:
        return (f"its zip directory is {directory_bytes} bytes, over the "
                f"{MAX_ZIP_DIRECTORY_BYTES // 2**20} MiB that are read")
    return None


def _end_record(tail: bytes) -> int | None:
    """Where ``zipfile`` finds the end-of-central-directory record in the file's ``tail``:
    at the very end when it has no comment, else the last signature with 22 bytes after it."""
    if len(tail) >= END_BYTES and tail[-END_BYTES:-END_BYTES + 4] == END \
            and tail[-2:] == b"\0\0":
        return len(tail) - END_BYTES
    at = tail.rfind(END)
    return at if at >= 0 and at + END_BYTES <= len(tail) else None


def _read_at(handle: BinaryIO, offset: int, count: int, size: int) -> bytes:
    """``count`` bytes at ``offset``, or b"" when they do not all lie within the file."""
    if offset + count > size:
        return b""
    handle.seek(offset)
    return handle.read(count)


def _archive_prefix(names: list[str]) -> str:
    """``<p>/`` when every entry sits in one top-level folder (how torch writes), else ""."""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        return f"{tops.pop()}/"
    return ""


#: A member's bytes by (name, limit, whole): up to ``limit`` of them; None when absent, or
#: when ``whole`` and larger.
Member = Callable[[str, int, bool], "bytes | None"]


def _read_archive(names: list[str], member: Member, path: str, found: ModelFile) -> None:
    prefix = _archive_prefix(names)
    listed = set(names)
    if f"{prefix}archive_format" in listed:
        # torch.export / AOTInductor package: recognised, not read further.
        found.problem = None if path.endswith(".pt2") else PT2_AS_TORCHSCRIPT
        return
    if not any(name.startswith(f"{prefix}code/") for name in names):
        found.problem = (
            NOT_TORCHSCRIPT if f"{prefix}data.pkl" in listed
            else "is a zip archive but not a PyTorch file (no data.pkl or code/ folder)"
        )
        return
    found.kind = "torchscript"
    facts = TorchScriptFacts()
    found.torchscript = facts
    pickle_head = member(f"{prefix}data.pkl", MAX_PICKLE_SCAN_BYTES, False)
    global_name = _first_global(pickle_head) if pickle_head else None
    if global_name is None:
        return
    module, class_name = global_name
    code_path = f"{prefix}code/{module.replace('.', '/')}.py"
    code = member(code_path, MAX_CODE_BYTES, True)
    facts.forward_args = _forward_args(code, class_name) if code is not None else None
    if facts.forward_args is not None:
        found.inputs = [
            TensorInfo(name=arg.name, source_type=arg.annotation,
                       is_tensor=arg.annotation == "Tensor")
            for arg in facts.forward_args
        ]


def _plain_member(archive: PlainZip, name: str, limit: int, whole: bool) -> bytes | None:
    """A ``Member`` of the plain archive (one too large to be read whole is not read)."""
    size = archive.size_of(name)
    if size is None or (whole and size > limit):
        return None
    return _within(archive.read(name, limit + 1), limit, whole)


def _zipfile_member(archive: zipfile.ZipFile, name: str, limit: int,
                    whole: bool) -> bytes | None:
    """A ``Member`` of the archive ``zipfile`` reads."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if whole and info.file_size > limit:
        return None
    with archive.open(info) as opened:
        data: bytes = opened.read(limit + 1)
    return _within(data, limit, whole)


def _within(data: bytes, limit: int, whole: bool) -> bytes | None:
    """What was read of a member (``limit`` bytes and one more, if it has them): all of it,
    its first ``limit`` bytes, or None for a ``whole`` member larger than that."""
    if len(data) <= limit:
        return data
    return None if whole else data[:limit]


def _is_legacy_torch_save(head: bytes) -> bool:
    """Legacy torch.save pickles a magic number first (protocol 2, LONG1)."""
    import pickletools  # only a run with TorchScript models disassembles pickles

    try:
        for opcode, arg, _ in pickletools.genops(head):
            if opcode.name == "PROTO":
                continue
            return opcode.name == "LONG1" and arg == LEGACY_TORCH_MAGIC
    except Exception:  # genops over arbitrary bytes: any failure just means "no"
        return False
    return False


def _first_global(data: bytes) -> tuple[str, str] | None:
    """(module, class) of the first GLOBAL / STACK_GLOBAL opcode, found by disassembly only:
    read off the bytes where the pickle opens as torch writes it (``_leading_global``), else
    by ``pickletools``."""
    leading = _leading_global(data)
    return _global_pair(leading) if leading is not None else _disassembled_global(data)


def _leading_global(data: bytes) -> str | None:
    """The argument ``pickletools`` gives a GLOBAL opcode right after PROTO (``module name``),
    when its two lines are plain ASCII, with no escape to undo; None otherwise, when the
    disassembly decides. Importing ``pickletools`` costs a process 5-6 ms."""
    if data[:1] != b"\x80" or data[2:3] != b"c":
        return None
    first = data.find(b"\n", 3)
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if second < 0:
        return None
    lines = data[3:first], data[first + 1:second]
    if any(b"\\" in line or not line.isascii() for line in lines):
        return None
    return f"{lines[0].decode('ascii')} {lines[1].decode('ascii')}"


def _global_pair(argument: str) -> tuple[str, str] | None:
    """(module, class) of a GLOBAL opcode's argument; None when either is empty."""
    module, _, qualname = argument.partition(" ")
    return (module, qualname) if module and qualname else None


def _disassembled_global(data: bytes) -> tuple[str, str] | None:
    """``_first_global`` by ``pickletools``' disassembly of the opcodes."""
    import pickletools

    strings: list[str] = []
    memo: dict[int, str] = {}
    memo_count = 0
    try:
        for opcode, arg, _ in pickletools.genops(data):
            name = opcode.name
            if name == "GLOBAL":
                return _global_pair(str(arg))
            if name == "STACK_GLOBAL":
                return (strings[-2], strings[-1]) if len(strings) >= 2 else None
            if name in PICKLE_STRING_OPS:
                strings.append(arg if isinstance(arg, str) else str(arg))
            elif name == "MEMOIZE":
                if strings:
                    memo[memo_count] = strings[-1]
                memo_count += 1
            elif name in ("BINGET", "LONG_BINGET", "GET") and isinstance(arg, int) and arg in memo:
                strings.append(memo[arg])
    except Exception:  # genops over arbitrary bytes (or a truncated head): stop there
        return None
    return None


def _forward_args(code: bytes, class_name: str) -> list[TorchScriptArg] | None:
    """forward()'s arguments (after self), from the class's code."""
    try:
        tree = ast.parse(code.decode("utf-8", "replace"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    forward = _find_forward(tree, class_name.rsplit(".", 1)[-1])
    if forward is None:
        return None
    try:
        return _arguments(forward)
    except RecursionError:
        return None


def _find_forward(tree: ast.Module, class_name: str) -> ast.FunctionDef | None:
    """The forward of the first class ``class_name`` that has one, in ``ast.walk``'s order.
    The walk visits every top-level statement before anything nested, so the module's own
    classes (where torch writes them) are looked through first, and the walk made only when
    none of them has it."""
    for nodes in (tree.body, ast.walk(tree)):
        for node in nodes:
            if isinstance(node, ast.ClassDef) and node.name == class_name:
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "forward":
                        return item
    return None


def _unparse(node: ast.expr | None) -> str:
    """The annotation as written; a plain name (``Tensor``, most of them) is its own text,
    without ``ast.unparse``'s cost (a tenth of reading the archive)."""
    if node is None:
        return ""
    return node.id if type(node) is ast.Name else ast.unparse(node)


def _arguments(forward: ast.FunctionDef) -> list[TorchScriptArg]:
    """Arguments in order; the first positional one is ``self`` and is left out."""
    spec = forward.args
    positional = [*spec.posonlyargs, *spec.args]
    return [TorchScriptArg(arg.arg, _unparse(arg.annotation))
            for arg in [*positional[1:], *spec.kwonlyargs]]
