"""Read an ONNX model's header and graph inputs/outputs straight off the protobuf wire.

``onnx.load`` parses every initializer, so a 1 GB model costs about a second and a gigabyte of
memory. Here the file is walked field by field, read a page at a time where the walk goes
(not memory-mapped: a map of a file truncated meanwhile kills the process with SIGBUS);
length-delimited fields we do not need (nodes, tensor payloads, doc strings) are stepped over by
their length, so their pages are never read and the cost does not grow with the weights. The
``onnx`` package is not imported. Field numbers are those of onnx/onnx.proto.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterator
from typing import TypeAlias

from triton_doctor.checks.formats import sniff
from triton_doctor.checks.formats.paged import FileChanged, PagedFile
from triton_doctor.evidence import ModelFile, OnnxFacts, TensorInfo
from triton_doctor.records import field, record

# Protobuf wire types.
VARINT, I64, LEN, I32 = 0, 1, 2, 5

#: ModelProto fields and their wire types; a file using other low numbers is not ONNX.
MODEL_FIELDS = {
    1: VARINT, 2: LEN, 3: LEN, 4: LEN, 5: VARINT, 6: LEN, 7: LEN, 8: LEN,
    14: LEN, 20: LEN, 25: LEN, 26: LEN,
}
#: Field numbers above this may be added by a future ONNX, so they do not count against it.
LAST_KNOWN_MODEL_FIELD = 26
IR_VERSION, GRAPH, OPSET_IMPORT = 1, 7, 8
GRAPH_NODE = 1
GRAPH_INITIALIZER, GRAPH_INPUT, GRAPH_OUTPUT, GRAPH_SPARSE_INITIALIZER = 5, 11, 12, 15
#: Graph fields read at most, by kind: real models hold hundreds of inputs and outputs and
#: up to tens of thousands of initializers and nodes; a crafted graph of millions would cost
#: minutes and gigabytes (2 M inputs: 4.4 GB, 199 s). Nodes are only stepped over, so more.
GRAPH_BUDGETS = {
    GRAPH_INPUT: ("inputs", 100_000), GRAPH_OUTPUT: ("outputs", 100_000),
    GRAPH_INITIALIZER: ("initializers", 100_000),
    GRAPH_SPARSE_INITIALIZER: ("sparse initializers", 100_000),
    GRAPH_NODE: ("nodes", 1_000_000),
}
TENSOR_NAME, TENSOR_EXTERNAL_DATA, TENSOR_DATA_LOCATION = 8, 13, 14
DATA_LOCATION_EXTERNAL = 1

#: ONNX TensorProto.DataType numbers and names.
ELEM_TYPES = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
    7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
    14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1",
    24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2", 27: "FLOAT6E2M3", 28: "FLOAT6E3M2",
}
#: Triton's data type for each ONNX element type it supports (onnxruntime_backend's mapping).
TRITON_TYPES = {
    "FLOAT": "TYPE_FP32", "UINT8": "TYPE_UINT8", "INT8": "TYPE_INT8", "UINT16": "TYPE_UINT16",
    "INT16": "TYPE_INT16", "INT32": "TYPE_INT32", "INT64": "TYPE_INT64", "STRING": "TYPE_STRING",
    "BOOL": "TYPE_BOOL", "FLOAT16": "TYPE_FP16", "DOUBLE": "TYPE_FP64", "UINT32": "TYPE_UINT32",
    "UINT64": "TYPE_UINT64", "BFLOAT16": "TYPE_BF16",
}
#: TypeProto's oneof members other than tensor_type, named as ONNX Runtime's ONNXType names them.
NON_TENSOR_TYPES = {
    4: "ONNX_TYPE_SEQUENCE", 5: "ONNX_TYPE_MAP", 7: "ONNX_TYPE_OPAQUE",
    8: "ONNX_TYPE_SPARSETENSOR", 9: "ONNX_TYPE_OPTIONAL",
}
TYPE_TENSOR = 1

#: One protobuf message may not exceed 2 GiB, so a longer length is corruption, not truncation.
MAX_LENGTH = 2**31 - 1
#: Names longer than this are cut when decoded (a corrupt file must not cost a huge string).
MAX_TEXT = 65536
#: How a problem caused by a bug here (not by the file) begins.
INTERNAL_ERROR = "could not be read because of an error in triton-doctor's ONNX reader"
#: What a file that sniffs as another kind (see ModelFile.kind) is, in a problem sentence.
OTHER_KINDS = {
    "zip": "it is a zip archive, as TorchScript and other PyTorch files are",
    "pickle": "it is a Python pickle, as torch.save writes",
    "tensorrt": "it is a TensorRT plan",
    "xml": "it is XML, as an OpenVINO model.xml is",
    "lfs-pointer": "it is a Git LFS pointer: run git lfs pull",
}
#: How many leading bytes are quoted when a file turns out to be text.
TEXT_QUOTE = 40


class GraphTooLarge(Exception):
    """A graph field kind ran over its budget in GRAPH_BUDGETS; the sentence says which."""


class WireError(Exception):
    """The bytes stop being valid protobuf; ``sentence`` says where, for ModelFile.problem."""

    def __init__(self, sentence: str, *, truncated: bool = False,
                 key: tuple[int, int] | None = None) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.truncated = truncated
        #: (field number, wire type) of the field being read when it failed, once its key was read.
        self.key = key


Buffer: TypeAlias = bytes | PagedFile

#: The most bytes a field's key and length take (two varints of at most 10 bytes each): a
#: window holding these past a field's start decodes its header without running out.
HEADER_BYTES = 20
#: Window sizes: a page after a skip, so that a tensor header does not pull in its weights,
#: doubling while the walk reads on, so that a graph of many small nodes costs few reads.
PAGE_BYTES = 4 * 1024
MAX_WINDOW = 1024 * 1024


class Wire:
    """A protobuf byte buffer (usually a PagedFile) and the file size, for error messages.

    Fields are decoded from ``data``, a window of bytes starting at file offset ``base``,
    read once and indexed with local variables (fetching each byte through the paging buffer
    cost more than the walk itself). A bytes buffer is its own window.
    """

    __slots__ = ("base", "buf", "data", "last", "size", "span")

    def __init__(self, buf: Buffer, size: int) -> None:
        self.buf, self.size = buf, size
        self.base, self.span = 0, PAGE_BYTES
        #: Where in ``data`` the last field header that surely fits in it may start.
        self.data, self.last = (buf, len(buf)) if isinstance(buf, bytes) else (b"", 0)

    def load(self, pos: int) -> tuple[bytes, int]:
        """Move the window to start at ``pos``; it grows while the walk reads on through the
        last window and drops back to a page after a skip past it (or a step back)."""
        reads_on = self.base < pos <= self.base + len(self.data)
        self.span = min(2 * self.span, MAX_WINDOW) if reads_on else PAGE_BYTES
        data = self.data = self.buf[pos:pos + self.span]
        self.base = pos
        # Up to the end of the file, every header fits; before it, only those that start
        # HEADER_BYTES before the window's end.
        self.last = len(data) if pos + len(data) >= self.size else len(data) - HEADER_BYTES + 1
        return data, pos

    def varint(self, data: bytes, index: int, limit: int, at: int,
               end: int) -> tuple[int, int]:
        """(unsigned value, next index) of the varint at ``data[index]``, which may not reach
        ``data[limit]``, the end of the message at file offset ``end``; ``at`` is its field's
        start."""
        value = shift = 0
        while True:
            if index >= limit:
                raise self.overrun(at, end)
            byte = data[index]
            index += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value & 0xFFFF_FFFF_FFFF_FFFF, index
            shift += 7
            if shift >= 70:
                raise WireError(f"is malformed: the number at byte {at} is longer than 10 bytes")

    def overrun(self, at: int, end: int) -> WireError:
        """The error for a field at ``at`` that runs past ``end`` (the file's or a message's)."""
        if end >= self.size:
            return WireError(
                f"is truncated: a field at byte {at} runs past the end of the file "
                f"({self.size} bytes)", truncated=True)
        return WireError(
            f"is malformed: a field at byte {at} runs past the end of the message that holds it "
            f"(which ends at byte {end})")

    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """Each field of the message in [start, end) as (number, wire type, a, b).

        A varint field's value is ``a``; any other field's bytes are ``buf[a:b]``, which are
        not read here: skipping a payload only adds its length to the position. One-byte
        varints, nearly all of them, are decoded inline.
        """
        pos = start
        while pos < end:
            # Fields are decoded from this window while their headers lie in it (kept locally:
            # the caller may move the window to read what a field holds).
            data, base, last = self.data, self.base, self.last
            index = pos - base
            if index < 0 or index >= last:
                data, base = self.load(pos)
                index, last = 0, self.last
            stop = end - base  # the message's end, as an index into data
            if stop < last:
                last = stop
            limit = stop if stop < len(data) else len(data)  # where its bytes here end
            while index < last:
                first = index
                key = data[index]
                index += 1
                if key >= 0x80:
                    key, index = self.varint(data, first, limit, base + first, end)
                    if key >> 3 > 0x1FFF_FFFF:
                        raise WireError(f"is malformed: invalid field number {key >> 3} at "
                                        f"byte {base + first}")
                number, wire_type = key >> 3, key & 7
                if number == 0:
                    raise WireError(f"is malformed: invalid field number 0 at byte {base + first}")
                try:
                    if wire_type in (LEN, VARINT):
                        if index < limit and data[index] < 0x80:
                            value = data[index]
                            index += 1
                        else:
                            value, index = self.varint(data, index, limit, base + first, end)
                        if wire_type == VARINT:
                            yield number, wire_type, value, base + index
                            continue
                        length = value
                        if length > MAX_LENGTH:
                            raise WireError(
                                f"is malformed: the field at byte {base + first} declares "
                                f"{length} bytes, more than a protobuf message can hold (2 GiB)")
                    elif wire_type in (I64, I32):
                        length = 8 if wire_type == I64 else 4
                    else:
                        raise WireError(
                            f"is malformed: field {number} at byte {base + first} has wire type "
                            f"{wire_type}, which ONNX files never use")
                    if length > stop - index:
                        raise self.overrun(base + first, end)
                except WireError as error:
                    error.key = (number, wire_type)
                    raise
                payload = base + index
                index += length
                yield number, wire_type, payload, base + index
            pos = base + index

    def text(self, start: int, end: int) -> str:
        """A string field's value (cut at MAX_TEXT bytes, invalid UTF-8 replaced)."""
        stop = min(end, start + MAX_TEXT)
        first, last = start - self.base, stop - self.base
        if first >= 0 and last <= len(self.data):
            return self.data[first:last].decode("utf-8", "replace")
        return self.buf[start:stop].decode("utf-8", "replace")


def signed64(value: int) -> int:
    """An int64/int32 varint's value: protobuf writes negatives as 64-bit two's complement."""
    return value - (1 << 64) if value >= 1 << 63 else value


@record
class TopLevel:
    """What the ModelProto's own fields say, before anything nested is parsed."""

    ir_version: int | None = None
    graphs: list[tuple[int, int]] = field(default_factory=list)
    opsets: list[tuple[int, int]] = field(default_factory=list)
    fields_seen: int = 0
    first_is_ir_version: bool = False
    graph_key_seen: bool = False
    #: The first field that ModelProto does not have (or has with another wire type).
    foreign: str | None = None
    error: WireError | None = None


def read_top_level(wire: Wire) -> TopLevel:
    """Walk the ModelProto's fields, keeping where the graph and opsets are; stop at an error."""
    top = TopLevel()
    pos_of_field = 0
    try:
        for number, wire_type, a, b in wire.fields(0, wire.size):
            note_model_field(top, number, wire_type, a, b, pos_of_field)
            pos_of_field = b
    except WireError as error:
        top.error = error
        if error.key == (GRAPH, LEN):
            top.graph_key_seen = True
        elif error.key is not None and top.foreign is None:
            note_foreign(top, *error.key, pos_of_field)
    return top


def note_model_field(top: TopLevel, number: int, wire_type: int, a: int, b: int,
                     at: int) -> None:
    """Record one ModelProto field (nested messages only by their byte range)."""
    if top.fields_seen == 0 and number == IR_VERSION and wire_type == VARINT:
        top.first_is_ir_version = 1 <= a <= 255
    top.fields_seen += 1
    note_foreign(top, number, wire_type, at)
    if MODEL_FIELDS.get(number) != wire_type:
        return  # protobuf treats a field with an unexpected wire type as an unknown field
    if number == IR_VERSION:
        top.ir_version = signed64(a)
    elif number == GRAPH:
        top.graph_key_seen = True
        top.graphs.append((a, b))  # a repeated message field merges: read every occurrence
    elif number == OPSET_IMPORT:
        top.opsets.append((a, b))


def note_foreign(top: TopLevel, number: int, wire_type: int, at: int) -> None:
    """Remember the first field that shows the bytes are some other protobuf (or none)."""
    expected = MODEL_FIELDS.get(number)
    if top.foreign is not None or expected == wire_type:
        return
    if expected is not None:
        top.foreign = f"field {number} at byte {at} has wire type {wire_type}, not {expected}"
    elif number <= LAST_KNOWN_MODEL_FIELD:
        top.foreign = f"field {number} at byte {at} is not a field of an ONNX ModelProto"


def looks_like_onnx(top: TopLevel) -> bool:
    """Whether the top-level fields make the file plausibly an ONNX model, even a broken one.

    Every writer puts ir_version first, so a file that starts with it and breaks only by
    running short (or inside the graph) is a damaged model. Without it, a complete graph field
    is needed. Random bytes almost never get this far without using a field ModelProto lacks.
    """
    if top.foreign is not None:
        return False
    error = top.error
    if top.first_is_ir_version:
        return error is None or error.truncated or top.graph_key_seen
    return bool(top.graphs) and (error is None or error.truncated)


def describe_not_onnx(wire: Wire, top: TopLevel,
                      may_quote: Callable[[], bool]) -> tuple[str, str]:
    """(kind, problem sentence) for a file that is not an ONNX model, saying what it is, and,
    where ``may_quote()``, how a text file begins."""
    head = bytes(wire.buf[:sniff.HEAD_BYTES])
    kind = sniff.sniff_bytes(head, wire.size)
    if kind in OTHER_KINDS:
        return kind, f"is not an ONNX model ({OTHER_KINDS[kind]})"
    text = head_text(head)
    if text and all(char.isprintable() or char in "\r\n\t" for char in text):
        if not may_quote():
            return "unknown", "is not an ONNX model (it is text)"
        quoted = " ".join(text.split())[:TEXT_QUOTE]
        return "unknown", f"is not an ONNX model (it is text, beginning {quoted!r})"
    if top.foreign is not None:
        reason = top.foreign
    elif top.error is not None:
        reason = top.error.sentence.removeprefix("is malformed: ").removeprefix("is truncated: ")
    else:
        reason = "it has no graph and no IR version"
    return "unknown", f"is not an ONNX model (its bytes are not an ONNX ModelProto: {reason})"


def head_text(head: bytes) -> str:
    """``head`` as UTF-8, allowing a character cut at its end; "" when it is not UTF-8."""
    for cut in range(4):
        try:
            return head[:len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


@record
class GraphFacts:
    """What the graph fields say: inputs and outputs, initializer names, external files."""

    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    initializers: set[str] = field(default_factory=set)
    #: External data files in the order first named (a dict keeps them distinct and ordered).
    external: dict[str, None] = field(default_factory=dict)
    #: Fields seen so far by field number, for GRAPH_BUDGETS.
    counts: dict[int, int] = field(default_factory=dict)


def read_graph(wire: Wire, start: int, end: int, facts: GraphFacts) -> None:
    """Collect a GraphProto's inputs, outputs and initializers; nodes are skipped whole.
    Raises GraphTooLarge when a kind of field runs over its budget."""
    for number, wire_type, a, b in wire.fields(start, end):
        if wire_type != LEN:
            continue
        if number in GRAPH_BUDGETS:
            count = facts.counts[number] = facts.counts.get(number, 0) + 1
            what, budget = GRAPH_BUDGETS[number]
            if count > budget:
                raise GraphTooLarge(f"its graph has over {budget} {what}, more than any real "
                                    "model holds")
        if number == GRAPH_INITIALIZER:
            read_initializer(wire, a, b, facts)
        elif number == GRAPH_SPARSE_INITIALIZER:
            read_sparse_initializer(wire, a, b, facts)
        elif number == GRAPH_INPUT:
            facts.inputs.append(read_value_info(wire, a, b))
        elif number == GRAPH_OUTPUT:
            facts.outputs.append(read_value_info(wire, a, b))


def read_initializer(wire: Wire, start: int, end: int, facts: GraphFacts) -> None:
    """Note an initializer's name and external file (a dense TensorProto)."""
    name, location = read_tensor(wire, start, end)
    facts.initializers.add(name)
    note_external(facts, location)


def read_sparse_initializer(wire: Wire, start: int, end: int, facts: GraphFacts) -> None:
    """A SparseTensorProto backs an input by its ``values`` tensor's name; both its tensors
    may be stored externally."""
    for number, wire_type, a, b in wire.fields(start, end):
        if number in (1, 2) and wire_type == LEN:  # values, indices
            name, location = read_tensor(wire, a, b)
            if number == 1:
                facts.initializers.add(name)
            note_external(facts, location)


def note_external(facts: GraphFacts, location: str | None) -> None:
    """Keep each external data file once, in the order the graph names them."""
    if location is not None:
        facts.external.setdefault(location)


def read_tensor(wire: Wire, start: int, end: int) -> tuple[str, str | None]:
    """(name, external location or None) of a TensorProto; its payload is stepped over."""
    name = ""
    location: str | None = None
    external = False
    for number, wire_type, a, b in wire.fields(start, end):
        if number == TENSOR_NAME and wire_type == LEN:
            name = wire.text(a, b)
        elif number == TENSOR_EXTERNAL_DATA and wire_type == LEN:
            key, value = read_string_pair(wire, a, b)
            if key == "location":
                location = value
        elif number == TENSOR_DATA_LOCATION and wire_type == VARINT:
            external = signed64(a) == DATA_LOCATION_EXTERNAL
    return name, (location if external else None)


def read_string_pair(wire: Wire, start: int, end: int) -> tuple[str, str]:
    """A StringStringEntryProto's (key, value)."""
    key = value = ""
    for number, wire_type, a, b in wire.fields(start, end):
        if wire_type == LEN and number == 1:
            key = wire.text(a, b)
        elif wire_type == LEN and number == 2:
            value = wire.text(a, b)
    return key, value


def read_value_info(wire: Wire, start: int, end: int) -> TensorInfo:
    """A ValueInfoProto as a TensorInfo; a missing type leaves data_type and dims None."""
    name = ""
    type_range: tuple[int, int] | None = None
    for number, wire_type, a, b in wire.fields(start, end):
        if wire_type == LEN and number == 1:
            name = wire.text(a, b)
        elif wire_type == LEN and number == 2:
            type_range = (a, b)
    info = TensorInfo(name=name)
    if type_range is not None:
        read_type(wire, *type_range, info)
    return info


def read_type(wire: Wire, start: int, end: int, info: TensorInfo) -> None:
    """Fill ``info`` from a TypeProto: the last oneof member set wins, as in protobuf."""
    chosen: tuple[int, int, int] | None = None
    for number, wire_type, a, b in wire.fields(start, end):
        if wire_type == LEN and (number == TYPE_TENSOR or number in NON_TENSOR_TYPES):
            chosen = (number, a, b)
    if chosen is None:
        return
    number, a, b = chosen
    if number != TYPE_TENSOR:
        info.is_tensor = False
        info.source_type = NON_TENSOR_TYPES[number]
        info.data_type = "TYPE_INVALID"
        return
    elem_type, info.dims = read_tensor_type(wire, a, b)
    info.source_type = ELEM_TYPES.get(elem_type, f"DATA_TYPE_{elem_type}")
    info.data_type = TRITON_TYPES.get(info.source_type, "TYPE_INVALID")


def read_tensor_type(wire: Wire, start: int, end: int) -> tuple[int, list[int] | None]:
    """(elem_type, dims) of a TypeProto.Tensor; dims None when it has no shape (unknown rank)."""
    elem_type = 0
    dims: list[int] | None = None
    for number, wire_type, a, b in wire.fields(start, end):
        if number == 1 and wire_type == VARINT:
            elem_type = signed64(a)
        elif number == 2 and wire_type == LEN:  # repeated occurrences merge
            dims = dims if dims is not None else []
            dims.extend(read_shape(wire, a, b))  # in place: a copy per shape was quadratic
    return elem_type, dims


def read_shape(wire: Wire, start: int, end: int) -> list[int]:
    """A TensorShapeProto's dims: dim_value, or -1 for a dim_param or an unknown dimension."""
    dims = []
    for number, wire_type, a, b in wire.fields(start, end):
        if number == 1 and wire_type == LEN:
            dims.append(read_dim(wire, a, b))
    return dims


def read_dim(wire: Wire, start: int, end: int) -> int:
    """One Dimension: the last of dim_value / dim_param wins (a oneof)."""
    dim = -1
    for number, wire_type, a, _ in wire.fields(start, end):
        if number == 1 and wire_type == VARINT:
            dim = signed64(a)
        elif number == 2 and wire_type == LEN:
            dim = -1
    return dim


def read_opset(wire: Wire, start: int, end: int) -> tuple[str, int]:
    """An OperatorSetIdProto as (domain, version), "ai.onnx" written as ""."""
    domain = ""
    version = 0
    for number, wire_type, a, b in wire.fields(start, end):
        if number == 1 and wire_type == LEN:
            domain = wire.text(a, b)
        elif number == 2 and wire_type == VARINT:
            version = signed64(a)
    return ("" if domain == "ai.onnx" else domain), version


def read_wire(wire: Wire, path: str, may_quote: Callable[[], bool]) -> ModelFile:
    """The ModelFile for the file ``wire`` pages through: kind first, then the nested parts."""
    top = read_top_level(wire)
    if not looks_like_onnx(top):
        kind, problem = describe_not_onnx(wire, top, may_quote)
        return ModelFile(path=path, size_bytes=wire.size, kind=kind, problem=problem)
    if top.error is not None:
        return ModelFile(path=path, size_bytes=wire.size, kind="onnx", problem=top.error.sentence)
    graph = GraphFacts()
    try:
        for start, end in top.graphs:
            read_graph(wire, start, end, graph)
        opsets = dict(read_opset(wire, start, end) for start, end in top.opsets)
    except WireError as error:
        return ModelFile(path=path, size_bytes=wire.size, kind="onnx", problem=error.sentence)
    except GraphTooLarge as error:
        return ModelFile(path=path, size_bytes=wire.size, kind="onnx", not_read=str(error))
    missing, outside = check_external(path, list(graph.external))
    facts = OnnxFacts(
        ir_version=top.ir_version or 0,
        opsets=opsets,
        initializer_inputs=[info.name for info in graph.inputs if info.name in graph.initializers],
        missing_external_data=missing,
        outside_external_data=outside,
    )
    found = ModelFile(path=path, size_bytes=wire.size, kind="onnx", onnx=facts,
                      problem=header_problem(top))
    if top.graphs:
        found.inputs = [info for info in graph.inputs if info.name not in graph.initializers]
        found.outputs = graph.outputs
    return found


def header_problem(top: TopLevel) -> str | None:
    """What ONNX Runtime refuses in a well-formed file, checked in its order (graph/model.cc)."""
    if not top.graphs:
        return ("has no graph (ONNX Runtime: \"ModelProto does not have a graph.\"); "
                "the file may be truncated")
    if not top.opsets:
        return ("imports no operator set (ONNX Runtime: \"Missing opset in the model.\"); "
                "the file may be truncated")
    if top.ir_version is None:
        return "has no IR version (ONNX Runtime: \"Missing model IR version.\")"
    return None


def check_external(path: str, locations: list[str]) -> tuple[list[str], list[str]]:
    """(locations that are not files next to the model at ``path``, locations outside its
    directory: absolute, or climbing out with ``..`` once normalised).

    Outside is a lexical test, as in ONNX Runtime since PR #26776: a location that stays in
    the directory but resolves through a symbolic link to elsewhere (the Hugging Face cache
    links 1/model.onnx.data into blobs/) loads, so it is neither outside nor missing. Nothing
    outside the model's directory is looked up for existence: that would make the report tell
    whether a file such as /etc/shadow exists anywhere on the host.
    """
    missing: list[str] = []
    outside: list[str] = []
    if not locations:  # most models: resolving the directory would cost a tenth of the read
        return missing, outside
    directory = os.path.realpath(os.path.dirname(path))
    for location in locations:
        normal = posixpath.normpath(location.replace("\\", "/"))
        if normal == ".." or normal.startswith("../") or posixpath.isabs(normal):
            outside.append(location)
            continue
        # Resolving follows the links in the repository; a target it leads out to is taken as
        # present, so what exists outside never shows in the report.
        target = os.path.realpath(os.path.join(directory, normal))
        if os.path.commonpath([directory, target]) == directory and not os.path.isfile(target):
            missing.append(location)
    return missing, outside


def read_onnx(path: str, *, may_quote: Callable[[], bool] = lambda: True) -> ModelFile:
    """Read ``path`` as an ONNX model; never raises: trouble goes into ``ModelFile.problem``,
    which quotes the beginning of a text file only where ``may_quote()`` says so."""
    return sniff.read_opened(path, lambda handle, size: read_open_onnx(
        handle, size, path, may_quote=may_quote))


def read_open_onnx(handle: int, size: int, path: str, *,
                   may_quote: Callable[[], bool] = lambda: True) -> ModelFile:
    """``read_onnx`` of the file open on ``handle``, ``size`` bytes long when opened (the
    caller closes it)."""
    try:
        if size == 0:
            return sniff.empty_file(path)
        return read_wire(Wire(PagedFile(handle, size), size), path, may_quote)
    except FileChanged as error:
        return ModelFile(path=path, problem=str(error))
    except OSError as error:
        return sniff.unreadable_file(path, error)
    except Exception as error:  # a reader bug must not stop the other checks
        return ModelFile(path=path, problem=f"{INTERNAL_ERROR}: {error!r}")
