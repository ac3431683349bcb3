"""The TorchScript reader, on files torch 2.13.0 wrote and on bad archives built here."""

from __future__ import annotations

import pickle
import random
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from triton_doctor.checks.formats.torchscript import (
    NOT_TORCHSCRIPT,
    PT2_AS_TORCHSCRIPT,
    read_torchscript,
)
from triton_doctor.evidence import ModelFile, TorchScriptArg, TorchScriptFacts

MODELS = Path(__file__).resolve().parent.parent / "fixtures" / "models" / "torchscript"
#: data.pkl as torch writes it: protocol 2, GLOBAL '__torch__ Net', then the object tree.
NET_PICKLE = b"\x80\x02c__torch__\nNet\nq\x00)\x81}q\x01b."
NET_CODE = (
    "class Net(Module):\n"
    "  __parameters__ = []\n"
    "  def forward(self: __torch__.Net,\n"
    "    x: Tensor,\n"
    "    *,\n"
    "    k: int=2) -> List[Tensor]:\n"
    "    return [x]\n"
)


def facts_of(found: ModelFile) -> TorchScriptFacts:
    assert found.kind == "torchscript", found
    assert found.problem is None
    assert found.torchscript is not None
    return found.torchscript


def write_zip(path: Path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def archive_members(code: str = NET_CODE, pkl: bytes = NET_PICKLE) -> dict[str, bytes]:
    return {
        "net/data.pkl": pkl,
        "net/code/__torch__.py": code.encode(),
        "net/constants.pkl": b"\x80\x02).",
        "net/version": b"3\n",
        "net/byteorder": b"little",
    }


def test_scripted_module() -> None:
    found = read_torchscript(str(MODELS / "script_net.pt"))
    facts = facts_of(found)
    assert facts.forward_args == [
        TorchScriptArg("input_ids", "Tensor"),
        TorchScriptArg("attention_mask", "Tensor"),
        TorchScriptArg("scale", "float"),
    ]
    assert found.inputs is not None
    assert [(i.name, i.source_type, i.is_tensor) for i in found.inputs] == [
        ("input_ids", "Tensor", True), ("attention_mask", "Tensor", True),
        ("scale", "float", False),
    ]
    assert all(i.data_type is None and i.dims is None for i in found.inputs)
    assert found.outputs is None
    assert found.size_bytes == (MODELS / "script_net.pt").stat().st_size


def test_traced_module_with_a_mangled_class() -> None:
    facts = facts_of(read_torchscript(str(MODELS / "traced_two_inputs.pt")))
    assert facts.forward_args == [TorchScriptArg("a", "Tensor"), TorchScriptArg("b", "Tensor")]


def test_dict_input() -> None:
    found = read_torchscript(str(MODELS / "dict_input.pt"))
    facts = facts_of(found)
    assert facts.forward_args == [TorchScriptArg("inputs", "Dict[str, Tensor]")]
    assert found.inputs is not None and found.inputs[0].is_tensor is False


def test_state_dict_is_not_torchscript() -> None:
    found = read_torchscript(str(MODELS / "state_dict.pt"))
    assert (found.kind, found.problem) == ("zip", NOT_TORCHSCRIPT)
    assert found.torchscript is None and found.inputs is None


def test_legacy_torch_save_is_a_pickle() -> None:
    found = read_torchscript(str(MODELS / "legacy_pickle.pt"))
    assert found.kind == "pickle"
    assert found.problem is not None and "legacy torch.save" in found.problem


def test_plain_pickle_named_model_pt(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}, protocol=4))
    found = read_torchscript(str(path))
    assert found.kind == "pickle"
    assert found.problem is not None
    assert found.problem.startswith("is a pickle (torch.save of a whole module?)")


def test_hand_built_archive_with_keyword_only_args(tmp_path: Path) -> None:
    facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", archive_members())))
    assert facts.forward_args == [TorchScriptArg("x", "Tensor"), TorchScriptArg("k", "int")]


def test_stack_global_pickle(tmp_path: Path) -> None:
    """Protocol 4 names the class with STACK_GLOBAL on two memoised strings."""
    pkl = (
        b"\x80\x04\x95\x20\x00\x00\x00\x00\x00\x00\x00"
        b"\x8c\t__torch__\x94\x8c\x03Net\x94\x93)\x81."
    )
    members = archive_members(pkl=pkl)
    facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", members)))
    assert facts.forward_args is not None and len(facts.forward_args) == 2


def test_zip_that_is_not_pytorch(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "model.pt", {"readme.txt": b"hi", "weights/a.bin": b"\0" * 10})
    found = read_torchscript(path)
    assert found.kind == "zip"
    assert found.problem == "is a zip archive but not a PyTorch file (no data.pkl or code/ folder)"


def test_random_bytes_data_pkl(tmp_path: Path) -> None:
    members = archive_members(pkl=random.Random(3).randbytes(4096))
    facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", members)))
    assert facts.forward_args is None


def test_random_bytes_code_file(tmp_path: Path) -> None:
    members = archive_members()
    members["net/code/__torch__.py"] = random.Random(4).randbytes(4096)
    facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", members)))
    assert facts.forward_args is None


def test_code_with_a_syntax_error(tmp_path: Path) -> None:
    members = archive_members(code="class Net(Module):\n  def forward(self, x: Tensor) ->:\n")
    facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", members)))
    assert facts.forward_args is None


def test_code_without_the_class(tmp_path: Path) -> None:
    for code in ("class Other(Module):\n  def forward(self, x: Tensor):\n    return x\n",
                 "class Net(Module):\n  def helper(self, x: Tensor):\n    return x\n"):
        members = archive_members(code=code)
        facts = facts_of(read_torchscript(write_zip(tmp_path / "net.pt", members)))
        assert facts.forward_args is None


def test_memoised_strings_fetched_again(tmp_path: Path) -> None:
    """STACK_GLOBAL on strings pushed back from the memo (BINGET)."""
    pkl = b"\x80\x04\x8c\t__torch__\x94\x8c\x03Net\x9400\x8c\x04junk\x940h\x00h\x01\x93)\x81."
    facts = facts_of(read_torchscript(write_zip(tmp_path / "n.pt", archive_members(pkl=pkl))))
    assert facts.forward_args == [TorchScriptArg("x", "Tensor"), TorchScriptArg("k", "int")]


def test_code_without_data_pkl_or_version(tmp_path: Path) -> None:
    members = archive_members()
    del members["net/data.pkl"], members["net/version"]
    facts = facts_of(read_torchscript(write_zip(tmp_path / "n.pt", members)))
    assert facts.forward_args is None


def test_huge_members_are_not_read(tmp_path: Path) -> None:
    """A 64 MiB code file (a few KB compressed) is skipped, a huge data.pkl only sampled."""
    members = archive_members()
    members["net/code/__torch__.py"] = NET_CODE.encode() + b"#" * (64 * 1024 * 1024)
    members["net/data.pkl"] = NET_PICKLE + b"\0" * (64 * 1024 * 1024)
    path = write_zip(tmp_path / "bomb.pt", members)
    del members
    tracemalloc.start()
    try:
        found = read_torchscript(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    facts = facts_of(found)
    assert facts.forward_args is None
    assert peak < 16 * 1024 * 1024


@pytest.mark.parametrize("cut", [10, 100, 1000, 2000, 3000])
def test_truncated_archive(tmp_path: Path, cut: int) -> None:
    data = (MODELS / "script_net.pt").read_bytes()
    path = tmp_path / "model.pt"
    path.write_bytes(data[:cut])
    found = read_torchscript(str(path))
    assert found.kind == "zip"
    assert found.problem is not None and "corrupt or truncated zip" in found.problem


def test_corrupt_member(tmp_path: Path) -> None:
    """A flipped byte inside compressed code: a CRC or inflate error, reported, not raised."""
    path = tmp_path / "net.pt"
    write_zip(path, archive_members())
    data = bytearray(path.read_bytes())
    offset = data.index(b"net/code/__torch__.py") + len("net/code/__torch__.py") + 5
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    found = read_torchscript(str(path))
    assert (found.kind, found.torchscript) == ("zip", None)
    assert found.problem is not None and "corrupt or truncated zip" in found.problem


@pytest.mark.parametrize(
    ("name", "problem"), [("model.pt2", None), ("model.pt", PT2_AS_TORCHSCRIPT)]
)
def test_pt2_package(tmp_path: Path, name: str, problem: str | None) -> None:
    members = {
        "model/archive_format": b"pt2",
        "model/archive_version": b"0",
        "model/models/model.json": b"{}",
        "model/data/aotinductor/model/model.so": b"\x7fELF",
    }
    found = read_torchscript(write_zip(tmp_path / name, members))
    assert (found.kind, found.problem, found.torchscript) == ("zip", problem, None)


def test_not_a_zip_empty_and_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(random.Random(5).randbytes(300).replace(b"\x80", b"\x81").replace(b"P", b"Q"))
    found = read_torchscript(str(path))
    assert found.kind == "unknown"
    assert found.problem == "is not a TorchScript archive (not a zip file)"
    path.write_bytes(b"")
    assert read_torchscript(str(path)).kind == "empty"
    unreadable = read_torchscript(str(tmp_path))
    assert unreadable.problem is not None and unreadable.problem.startswith("cannot be read")


@pytest.mark.parametrize("code", [
    NET_CODE,
    # the module's own class has no forward: a nested one of the name does
    "class Net(Module):\n  x = 1\ndef f():\n  class Net:\n    def forward(self, nested): pass\n",
    # a nested one first in the file, the module's own after it: the walk takes the latter
    "def f():\n  class Net:\n    def forward(self, nested): pass\n"
    "class Net(Module):\n  def forward(self, top): pass\n",
    "class Other:\n  def forward(self, a): pass\n",
])
def test_forward_is_found_as_a_walk_of_the_whole_module_finds_it(code: str) -> None:
    import ast

    from triton_doctor.checks.formats import torchscript

    def walked(tree: ast.Module) -> ast.FunctionDef | None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "Net":
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "forward":
                        return item
        return None

    tree = ast.parse(code)
    assert torchscript._find_forward(tree, "Net") is walked(tree)


def _pickle_heads() -> list[bytes]:
    """data.pkl heads of the fixture archives, the one torch writes here, and variations of
    it that the quick reading must leave to the disassembly (escapes, other bytes, cut short,
    other opcodes), plus random damage."""
    heads = [NET_PICKLE]
    for path in sorted(MODELS.glob("*.pt")):
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                heads += [archive.read(name)[:4096] for name in archive.namelist()
                          if name.endswith("data.pkl")]
    heads += [
        b"\x80\x02c__torch__\\x41\nNet\nq\x00.",  # an escape to undo
        b"\x80\x02c__t\xc3\xb6rch__\nNet\nq\x00.",  # not ASCII
        b"\x80\x02c__torch__\nNet",  # the second line cut short
        b"\x80\x02c__torch__",
        b"\x80\x02c\nNet\n.",  # no module
        b"\x80\x02ctwo words\nNet\n.",
        b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x03mod\x94\x8c\x03Cls\x94\x93\x94.",
        b"c__torch__\nNet\n.",  # no PROTO
        b"\x80",
        b"",
    ]
    rng = random.Random(17)
    for _ in range(300):
        damaged = bytearray(NET_PICKLE)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.choice(b"\n\\\x80c\xc3 a")
        heads.append(bytes(damaged))
    return heads


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pickletools on damaged escapes
def test_the_first_global_read_off_the_bytes_equals_the_disassembly() -> None:
    from triton_doctor.checks.formats import torchscript

    heads = _pickle_heads()
    quick = [head for head in heads if torchscript._leading_global(head) is not None]
    assert len(quick) > 100  # the way torch writes it is read off the bytes
    for head in heads:
        assert torchscript._first_global(head) == torchscript._disassembled_global(head), head


def test_reading_archives_torch_wrote_imports_no_disassembler_nor_zipfile() -> None:
    import subprocess
    import sys

    script = ("import sys\n"
              "from triton_doctor.checks.formats.torchscript import read_torchscript\n"
              "for name in ('traced_two_inputs.pt', 'dict_input.pt', 'script_net.pt'):\n"
              f"    assert read_torchscript({str(MODELS)!r} + '/' + name).torchscript\n"
              "print('pickletools' in sys.modules, 'zipfile' in sys.modules)\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)
    assert ran.stdout.split() == ["False", "False"]
