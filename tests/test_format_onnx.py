"""The ONNX wire reader against ``onnx.load``, and against files that are not (whole) models."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from triton_doctor.checks.formats import onnx as reader
from triton_doctor.evidence import ModelFile

#: Every element type: ONNX name -> Triton name (TYPE_INVALID where Triton has none).
TRITON_NAMES = {
    "FLOAT": "TYPE_FP32", "UINT8": "TYPE_UINT8", "INT8": "TYPE_INT8", "UINT16": "TYPE_UINT16",
    "INT16": "TYPE_INT16", "INT32": "TYPE_INT32", "INT64": "TYPE_INT64",
    "STRING": "TYPE_STRING", "BOOL": "TYPE_BOOL", "FLOAT16": "TYPE_FP16",
    "DOUBLE": "TYPE_FP64", "UINT32": "TYPE_UINT32", "UINT64": "TYPE_UINT64",
    "BFLOAT16": "TYPE_BF16", "COMPLEX64": "TYPE_INVALID", "COMPLEX128": "TYPE_INVALID",
    "FLOAT8E4M3FN": "TYPE_INVALID", "INT4": "TYPE_INVALID", "UNDEFINED": "TYPE_INVALID",
}
NON_TENSOR_NAMES = {
    "sequence_type": "ONNX_TYPE_SEQUENCE", "map_type": "ONNX_TYPE_MAP",
    "optional_type": "ONNX_TYPE_OPTIONAL", "sparse_tensor_type": "ONNX_TYPE_SPARSETENSOR",
}


@pytest.fixture
def onnx() -> ModuleType:
    return pytest.importorskip("onnx")


@pytest.fixture
def models(onnx: ModuleType) -> ModuleType:
    """The fixture generator (it needs the onnx package)."""
    from fixtures.generate import onnx_models

    return onnx_models


def read_bytes(tmp_path: Path, data: bytes, name: str = "model.onnx") -> ModelFile:
    path = tmp_path / name
    path.write_bytes(data)
    return reader.read_onnx(str(path))


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def length_field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


# ---------------------------------------------------------------------------------------------
# What onnx.load sees, in the reader's terms

def onnx_view(onnx: ModuleType, path: str) -> dict[str, Any]:
    """Inputs, outputs and header facts as ``onnx.load`` reports them."""
    model = onnx.load(path, load_external_data=False)
    graph = model.graph
    backed = {t.name for t in graph.initializer} | {s.values.name for s in graph.sparse_initializer}

    def info(value: Any) -> tuple[Any, ...]:
        kind = value.type.WhichOneof("value")
        if kind is None:
            return (value.name, "", None, None, True)
        if kind != "tensor_type":
            return (value.name, NON_TENSOR_NAMES[kind], "TYPE_INVALID", None, False)
        tensor = value.type.tensor_type
        dims = None
        if tensor.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        source = onnx.TensorProto.DataType.Name(tensor.elem_type)
        return (value.name, source, TRITON_NAMES[source], dims, True)

    return {
        "inputs": [info(v) for v in graph.input if v.name not in backed],
        "outputs": [info(v) for v in graph.output],
        "initializer_inputs": [v.name for v in graph.input if v.name in backed],
        "ir_version": model.ir_version,
        "opsets": {("" if o.domain == "ai.onnx" else o.domain): o.version
                   for o in model.opset_import},
    }


def reader_view(found: ModelFile) -> dict[str, Any]:
    assert found.problem is None, found.problem
    assert found.kind == "onnx"
    assert found.onnx is not None and found.inputs is not None and found.outputs is not None

    def info(t: Any) -> tuple[Any, ...]:
        return (t.name, t.source_type, t.data_type, t.dims, t.is_tensor)

    return {
        "inputs": [info(t) for t in found.inputs],
        "outputs": [info(t) for t in found.outputs],
        "initializer_inputs": found.onnx.initializer_inputs,
        "ir_version": found.onnx.ir_version,
        "opsets": found.onnx.opsets,
    }


CASES: dict[str, dict[str, Any]] = {
    "dim_param": dict(inputs=[("INPUT__0", "FLOAT", ["batch", 3, 224, 224])],
                      outputs=[("OUTPUT__0", "FLOAT", ["batch", 1000])]),
    "unknown_dims": dict(inputs=[("x", "INT64", [None, 5, None])],
                         outputs=[("y", "INT32", [None, 5, None])]),
    "no_shape": dict(inputs=[("x", "FLOAT", None)], outputs=[("y", "FLOAT16", None)]),
    "scalar": dict(inputs=[("x", "DOUBLE", [])], outputs=[("y", "DOUBLE", [])]),
    "negative_and_big_dims": dict(inputs=[("x", "FLOAT", [-1, 2**40])],
                                  outputs=[("y", "FLOAT", [-1, 2**40])]),
    "initializer_input": dict(inputs=[("x", "FLOAT", [1])], outputs=[("y", "FLOAT", [1])],
                              with_initializer_input=True),
    "ir3_initializers_are_inputs": dict(inputs=[("x", "FLOAT", [2])],
                                        outputs=[("y", "FLOAT", [2])],
                                        ir_version=3, opset=8, initializer_bytes=300),
    "custom_domain": dict(inputs=[("x", "FLOAT", [2])], outputs=[("y", "FLOAT", [2])],
                          opset=17, extra_opsets={"com.example": 3, "ai.onnx.ml": 2}),
    "no_inputs": dict(inputs=[], outputs=[("y", "FLOAT", [2, 3]), ("s", "STRING", [1])]),
    "embedded_weights": dict(inputs=[("x", "UINT8", ["n"])], outputs=[("y", "FLOAT", ["n"])],
                             initializer_bytes=3 * 1024 * 1024 + 7),
    "non_tensor": dict(
        inputs=[("x", "FLOAT", ["n"]), ("m", "map(STRING,FLOAT)", None),
                ("sp", "sparse(FLOAT)", [4, 4])],
        outputs=[("seq", "seq(FLOAT)", None), ("opt", "optional(INT64)", None),
                 ("m_out", "map(STRING,FLOAT)", None), ("t", "BOOL", ["n"])],
        opset=18),
    "element_types": dict(
        inputs=[(f"in_{name}", name, [1]) for name in TRITON_NAMES if name != "UNDEFINED"],
        outputs=[("out", "FLOAT", [1])]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnx_load(case: str, onnx: ModuleType, models: ModuleType,
                           tmp_path: Path) -> None:
    path = models.build(str(tmp_path / "model.onnx"), **CASES[case])
    if case != "no_shape":  # the checker wants shapes on graph I/O; ONNX Runtime does not
        onnx.checker.check_model(path)
    found = reader.read_onnx(path)
    assert reader_view(found) == onnx_view(onnx, path)
    assert found.path == path
    assert found.size_bytes == os.path.getsize(path)


def test_case_details(models: ModuleType, tmp_path: Path) -> None:
    """Spot checks that the comparison above is not vacuous."""
    found = reader.read_onnx(models.build(str(tmp_path / "m.onnx"), **CASES["dim_param"]))
    assert found.inputs is not None and found.outputs is not None and found.onnx is not None
    assert [(t.name, t.data_type, t.dims) for t in found.inputs] == [
        ("INPUT__0", "TYPE_FP32", [-1, 3, 224, 224])]
    assert found.outputs[0].dims == [-1, 1000]
    assert found.onnx.opsets == {"": 13}
    assert found.onnx.ir_version == 8


def test_ir3_drops_initializer_inputs(models: ModuleType, tmp_path: Path) -> None:
    found = reader.read_onnx(models.build(str(tmp_path / "m.onnx"),
                                          **CASES["ir3_initializers_are_inputs"]))
    assert found.inputs is not None and found.onnx is not None
    assert [t.name for t in found.inputs] == ["x"]
    assert found.onnx.initializer_inputs == ["weight_0"]
    assert found.onnx.ir_version == 3


def test_non_tensor_types(models: ModuleType, tmp_path: Path) -> None:
    found = reader.read_onnx(models.build(str(tmp_path / "m.onnx"), **CASES["non_tensor"]))
    assert found.inputs is not None and found.outputs is not None
    kinds = {t.name: (t.source_type, t.data_type, t.is_tensor, t.dims)
             for t in found.inputs + found.outputs}
    assert kinds["seq"] == ("ONNX_TYPE_SEQUENCE", "TYPE_INVALID", False, None)
    assert kinds["m"] == ("ONNX_TYPE_MAP", "TYPE_INVALID", False, None)
    assert kinds["opt"] == ("ONNX_TYPE_OPTIONAL", "TYPE_INVALID", False, None)
    assert kinds["sp"] == ("ONNX_TYPE_SPARSETENSOR", "TYPE_INVALID", False, None)
    assert kinds["t"] == ("BOOL", "TYPE_BOOL", True, [-1])


def test_element_type_names(models: ModuleType, tmp_path: Path) -> None:
    found = reader.read_onnx(models.build(str(tmp_path / "m.onnx"), **CASES["element_types"]))
    assert found.inputs is not None
    assert {t.source_type: t.data_type for t in found.inputs} == {
        name: triton for name, triton in TRITON_NAMES.items() if name != "UNDEFINED"}


def test_ai_onnx_domain_is_the_default_domain(onnx: ModuleType, models: ModuleType,
                                              tmp_path: Path) -> None:
    model = onnx.load(models.build(str(tmp_path / "m.onnx"), **CASES["custom_domain"]))
    model.opset_import[0].domain = "ai.onnx"
    found = read_bytes(tmp_path, model.SerializeToString(), "renamed.onnx")
    assert found.onnx is not None
    assert found.onnx.opsets == {"": 17, "com.example": 3, "ai.onnx.ml": 2}


def test_external_data_present(models: ModuleType, tmp_path: Path) -> None:
    path = models.build(str(tmp_path / "model.onnx"), [("x", "FLOAT", [1])],
                        [("y", "FLOAT", [1])], initializer_bytes=2 * 1024 * 1024,
                        external_data=True)
    found = reader.read_onnx(path)
    assert found.problem is None and found.onnx is not None
    assert found.onnx.missing_external_data == []
    assert found.size_bytes < 4096


def test_external_data_missing(models: ModuleType, tmp_path: Path) -> None:
    path = models.build(str(tmp_path / "model.onnx"), [("x", "FLOAT", [1])],
                        [("y", "FLOAT", [1])], initializer_bytes=1000, external_data=True)
    os.remove(models.external_data_path(path))
    found = reader.read_onnx(path)
    assert found.problem is None and found.onnx is not None
    assert found.onnx.missing_external_data == ["model.onnx.data"]


def test_external_data_locations_relative_to_the_model(onnx: ModuleType, models: ModuleType,
                                                       tmp_path: Path) -> None:
    """Several files, one in a subdirectory, one absent; each named once, in graph order."""
    path = models.build(str(tmp_path / "model.onnx"), [("x", "FLOAT", [1])],
                        [("y", "FLOAT", [1])], initializer_bytes=models.WEIGHT_TENSOR_BYTES + 1,
                        external_data=True)
    model = onnx.load(path, load_external_data=False)
    locations = ["weights/a.bin", "gone.bin"]
    for tensor, location in zip(model.graph.initializer, locations, strict=True):
        entry = next(e for e in tensor.external_data if e.key == "location")
        entry.value = location
    extra = onnx.TensorProto(name="again", data_type=onnx.TensorProto.FLOAT, dims=[1],
                             data_location=onnx.TensorProto.EXTERNAL)
    extra.external_data.add(key="location", value="weights/a.bin")
    model.graph.initializer.append(extra)
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "a.bin").write_bytes(b"\0" * 8)
    found = read_bytes(tmp_path, model.SerializeToString())
    assert found.onnx is not None
    assert found.onnx.missing_external_data == ["gone.bin"]
    (tmp_path / "weights" / "a.bin").unlink()
    found = read_bytes(tmp_path, model.SerializeToString())
    assert found.onnx is not None
    assert found.onnx.missing_external_data == locations


def test_external_entries_without_external_location_are_ignored(
        onnx: ModuleType, models: ModuleType, tmp_path: Path) -> None:
    """ONNX Runtime reads external_data only when data_location is EXTERNAL."""
    model = onnx.load(models.build(str(tmp_path / "m.onnx"), [("x", "FLOAT", [1])],
                                   [("y", "FLOAT", [1])], initializer_bytes=10))
    model.graph.initializer[0].external_data.add(key="location", value="ignored.bin")
    found = read_bytes(tmp_path, model.SerializeToString(), "n.onnx")
    assert found.onnx is not None and found.onnx.missing_external_data == []


def test_initializer_payload_is_never_interpreted(models: ModuleType, tmp_path: Path) -> None:
    """Garbage inside raw_data changes nothing: the reader steps over payloads by length."""
    path = models.build(str(tmp_path / "m.onnx"), **CASES["embedded_weights"])
    before = reader.read_onnx(path)
    data = bytearray(Path(path).read_bytes())
    start = data.index(b"weight_0") + 16  # inside its raw_data, which is 3 MiB + 7 long
    data[start:start + 3 * 1024 * 1024] = b"\xff" * (3 * 1024 * 1024)
    after = read_bytes(tmp_path, bytes(data), "garbage.onnx")
    assert reader_view(after) == reader_view(before)


def test_graph_fields_merge_in_any_order(onnx: ModuleType, models: ModuleType,
                                         tmp_path: Path) -> None:
    """A second graph field (protobuf merges it) whose initializer backs an earlier input."""
    path = models.build(str(tmp_path / "m.onnx"), [("x", "FLOAT", [1]), ("w", "FLOAT", [1])],
                        [("y", "FLOAT", [1])])
    extra = onnx.GraphProto(initializer=[onnx.helper.make_tensor("w", 1, [1], [0.5])])
    data = Path(path).read_bytes() + length_field(7, extra.SerializeToString())
    merged = tmp_path / "merged.onnx"
    merged.write_bytes(data)
    found = reader.read_onnx(str(merged))
    assert reader_view(found) == onnx_view(onnx, str(merged))
    assert found.onnx is not None and found.onnx.initializer_inputs == ["w"]


# ---------------------------------------------------------------------------------------------
# Not a (whole) model: a problem, never an exception

def test_every_truncation_is_a_problem(models: ModuleType, tmp_path: Path) -> None:
    data = Path(models.build(str(tmp_path / "m.onnx"), [("x", "FLOAT", ["batch", 3])],
                             [("y", "FLOAT", ["batch", 3])], initializer_bytes=500,
                             with_initializer_input=True)).read_bytes()
    for cut in range(len(data)):
        found = read_bytes(tmp_path, data[:cut], "cut.onnx")
        assert found.problem, cut
        assert found.inputs is None or found.problem.startswith(("has no", "imports no")), cut
        if cut >= 2:  # past the leading ir_version field
            assert found.kind == "onnx", (cut, found.problem)


def test_truncation_message_names_the_byte(models: ModuleType, tmp_path: Path) -> None:
    data = Path(models.build(str(tmp_path / "m.onnx"), **CASES["embedded_weights"])).read_bytes()
    cut = len(data) // 2
    found = read_bytes(tmp_path, data[:cut], "cut.onnx")
    assert found.kind == "onnx"
    assert found.problem is not None
    assert found.problem.startswith("is truncated: a field at byte ")
    assert found.problem.endswith(f"runs past the end of the file ({cut} bytes)")
    assert found.size_bytes == cut


def test_random_mutations_never_raise(models: ModuleType, tmp_path: Path) -> None:
    """Mutated models must give a ModelFile every time (read_wire itself has no safety net)."""
    data = Path(models.build(str(tmp_path / "m.onnx"), **CASES["non_tensor"])).read_bytes()
    rng = random.Random(1234)
    path = str(tmp_path / "mutant.onnx")
    for _ in range(3000):
        mutant = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(mutant))
            action = rng.random()
            if action < 0.6:
                mutant[position] = rng.randrange(256)
            elif action < 0.8:
                del mutant[position]
            else:
                mutant.insert(position, rng.randrange(256))
        found = reader.read_wire(reader.Wire(bytes(mutant), len(mutant)), path, lambda: True)
        assert found.kind in ("onnx", "unknown", *reader.OTHER_KINDS)
        if found.problem is None:
            assert found.kind == "onnx" and found.inputs is not None and found.outputs is not None


@pytest.mark.parametrize("seed", range(40))
def test_random_bytes_are_not_onnx(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 5000)))
    found = read_bytes(tmp_path, data)
    assert found.kind != "onnx"
    assert found.problem is not None and found.problem.startswith("is not an ONNX model ("), found
    assert found.inputs is None and found.onnx is None


def test_empty_file(tmp_path: Path) -> None:
    found = read_bytes(tmp_path, b"")
    assert (found.kind, found.problem, found.size_bytes) == ("empty", "is empty (0 bytes)", 0)


def test_text_file(tmp_path: Path) -> None:
    found = read_bytes(tmp_path, b'name: "model"\nplatform: "onnxruntime_onnx"\n')
    assert found.kind == "unknown"
    assert found.problem == ("is not an ONNX model (it is text, beginning "
                             "'name: \"model\" platform: \"onnxruntime_onn')")


@pytest.mark.parametrize(("data", "kind", "says"), [
    (b"PK\x03\x04" + bytes(60), "zip", "zip archive"),
    (b"\x80\x04\x95" + bytes(60), "pickle", "pickle"),
    (b"ftrt" + bytes(60), "tensorrt", "TensorRT plan"),
    (b'<?xml version="1.0"?>\n<net name="m">', "xml", "OpenVINO"),
    (b"version https://git-lfs.github.com/spec/v1\nsize 12\n", "lfs-pointer", "git lfs pull"),
])
def test_other_formats_are_named(data: bytes, kind: str, says: str, tmp_path: Path) -> None:
    found = read_bytes(tmp_path, data)
    assert found.kind == kind
    assert found.problem is not None and found.problem.startswith("is not an ONNX model (")
    assert says in found.problem


def test_huge_length(tmp_path: Path) -> None:
    data = b"\x08\x08" + varint(7 << 3 | 2) + varint(2**62) + b"\x00" * 64
    found = read_bytes(tmp_path, data)
    assert found.kind == "onnx"
    assert found.problem == (
        "is malformed: the field at byte 2 declares 4611686018427387904 bytes, "
        "more than a protobuf message can hold (2 GiB)")


def test_overlong_varint(tmp_path: Path) -> None:
    found = read_bytes(tmp_path, b"\x08" + b"\xff" * 20)
    assert found.problem is not None and "longer than 10 bytes" in found.problem


def test_nested_overrun_is_malformed_not_truncated(tmp_path: Path) -> None:
    value_info = length_field(1, b"x") + varint(2 << 3 | 2) + varint(50) + b"\x00"
    graph = length_field(11, value_info)
    opset = length_field(8, b"\x10\x0d")
    found = read_bytes(tmp_path, b"\x08\x08" + length_field(7, graph) + opset)
    assert found.kind == "onnx"
    # 08 08 | 3a 08 | 5a 06 | 0a 01 'x' | 12 32 00: the type field at byte 9 claims 50 bytes.
    assert found.problem == ("is malformed: a field at byte 9 runs past the end of the message "
                             "that holds it (which ends at byte 12)")


def test_header_problems(tmp_path: Path) -> None:
    graph = length_field(7, length_field(12, length_field(1, b"y")))
    opset = length_field(8, b"\x10\x0d")
    no_graph = read_bytes(tmp_path, b"\x08\x08" + opset)
    no_opset = read_bytes(tmp_path, b"\x08\x08" + graph)
    no_ir = read_bytes(tmp_path, graph + opset)
    assert no_graph.problem is not None and no_graph.problem.startswith("has no graph")
    assert no_opset.problem is not None and no_opset.problem.startswith("imports no operator set")
    assert no_ir.problem is not None and no_ir.problem.startswith("has no IR version")
    assert no_ir.kind == "onnx" and no_ir.outputs is not None
    assert [t.name for t in no_ir.outputs] == ["y"] and no_ir.outputs[0].data_type is None


def test_unreadable_paths(tmp_path: Path) -> None:
    missing = reader.read_onnx(str(tmp_path / "absent.onnx"))
    directory = reader.read_onnx(str(tmp_path))
    for found in (missing, directory):
        assert found.kind == "unknown"
        assert found.problem is not None and found.problem.startswith("cannot be read: ")


def test_through_the_dispatcher(models: ModuleType, tmp_path: Path) -> None:
    from triton_doctor.checks.formats import read_model_file

    (tmp_path / "1" / "model.onnx").mkdir(parents=True)
    models.build(str(tmp_path / "1" / "model.onnx" / "model.onnx"), [("x", "FLOAT", [1])],
                 [("y", "FLOAT", [1])], initializer_bytes=10, external_data=True)
    found = read_model_file(str(tmp_path), "1/model.onnx", "onnxruntime")
    assert (found.path, found.kind, found.problem) == ("1/model.onnx", "onnx", None)
    assert found.onnx is not None and found.onnx.missing_external_data == []


# ---------------------------------------------------------------------------------------------
# Reading a file a window at a time

def hand_built_model(*, producer: bytes, nodes: int, weights: list[int]) -> bytes:
    """A model whose graph holds ``nodes`` small nodes, then initializers of the given payload
    sizes, then its input and output (the order onnx.save writes), so that a walk crosses many
    windows and steps over the weights to reach the graph's inputs and outputs.

    Before the graph, past the first page, come fields unknown to ONNX with 14-byte headers
    (a 4-byte key, a 10-byte value): the producer's length moves one across the page's edge.
    """
    unknown = (varint(1_000_000 << 3) + varint(2**64 - 1)) * (2 * reader.PAGE_BYTES // 14)
    dim = length_field(1, b"\x08" + varint(4))
    tensor = length_field(1, b"\x08\x01" + length_field(2, dim + length_field(1, b"\x12\x01n")))
    body = b"".join(length_field(1, length_field(1, b"x" * (i % 31)) + length_field(4, b"Relu"))
                    for i in range(nodes))
    for i, size in enumerate(weights):
        body += length_field(5, length_field(8, b"w%d" % i) + length_field(9, bytes(size)))
    body += length_field(11, length_field(1, b"x") + length_field(2, tensor))
    body += length_field(11, length_field(1, b"w0") + length_field(2, tensor))
    body += length_field(12, length_field(1, b"y") + length_field(2, tensor))
    return (b"\x08\x08" + length_field(2, producer) + unknown + length_field(7, body)
            + length_field(8, b"\x10\x11"))


def test_window_edges_change_nothing(tmp_path: Path) -> None:
    """A field header across the edge of a window, at each of its bytes, reads as from the
    whole bytes; so do truncations around the edges."""
    path = str(tmp_path / "model.onnx")
    for shift in range(14):
        data = hand_built_model(producer=b"p" * shift, nodes=2000, weights=[70_000, 300])
        whole = reader.read_wire(reader.Wire(data, len(data)), path, lambda: True)
        assert reader_view(read_bytes(tmp_path, data)) == reader_view(whole), shift
        assert [t.name for t in whole.inputs or []] == ["x"]
        assert (whole.inputs or [])[0].dims == [4, -1]
        assert whole.onnx is not None and whole.onnx.initializer_inputs == ["w0"]
        for cut in range(reader.PAGE_BYTES - reader.HEADER_BYTES, reader.PAGE_BYTES + 2):
            found = read_bytes(tmp_path, data[:cut])
            assert found == reader.read_wire(reader.Wire(data[:cut], cut), path,
                                             lambda: True), (shift, cut)
            assert found.problem is not None and found.problem.startswith(
                ("is truncated", "has no graph")), (shift, cut)


def test_stepping_over_weights_reads_little_of_them(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows grow while the walk reads on and drop back to a page after a skip: 200 weights
    of 40 KB cost a page each, not a grown window each (which would read more than the file)."""
    from triton_doctor.checks.formats import paged

    data = hand_built_model(producer=b"p", nodes=2000, weights=[40_000] * 200)
    read = []
    real_pread = os.pread

    def counted(fd: int, count: int, offset: int) -> bytes:
        read.append(count)
        return real_pread(fd, count, offset)

    monkeypatch.setattr(paged.os, "pread", counted)
    found = read_bytes(tmp_path, data)
    assert [t.name for t in found.inputs or []] == ["x"] and found.problem is None
    nodes_bytes = data.index(b"w0") - 2
    assert sum(read) < nodes_bytes + 200 * 2 * reader.PAGE_BYTES + reader.MAX_WINDOW
    assert sum(read) < len(data) // 3
