"""Read an OpenVINO IR ``model.xml``'s inputs and outputs as Triton's OpenVINO backend names them.

The backend names a tensor by ``get_any_name()``: the lexicographically smallest of the
tensor's names, which the IR lists in the ``names`` attribute of the producing output port.
Inputs are the ``Parameter`` layers, outputs the ``Result`` layers (their tensor is the one
feeding them), in document order. IR v10 files get the legacy treatment OpenVINO applies on
load: the operation names join the tensor names, and element types are widened.

The XML is parsed only after a guard: files over 64 MiB, any DOCTYPE or ENTITY declaration
(entity expansion bombs, external entities) and non-UTF-8 encodings are refused, since the
standard library has no hardened XML parser and real IR files never use any of these.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from triton_doctor.checks.formats import sniff
from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.records import field, record
from triton_doctor.safe_files import FileTooLarge, read_file

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

MAX_XML_BYTES = 64 * 1024 * 1024

#: IR element types (``data@element_type``) as Triton's OpenVINO backend maps them; the
#: backend has no mapping for bf16, f64 or sub-byte types, which autocomplete reports as
#: TYPE_INVALID (openvino_backend ``OpenVINOElementToModelConfigDataType``).
ELEMENT_TYPES = {
    "boolean": "TYPE_BOOL", "u8": "TYPE_UINT8", "u16": "TYPE_UINT16", "u32": "TYPE_UINT32",
    "u64": "TYPE_UINT64", "i8": "TYPE_INT8", "i16": "TYPE_INT16", "i32": "TYPE_INT32",
    "i64": "TYPE_INT64", "f16": "TYPE_FP16", "f32": "TYPE_FP32",
}
#: Port ``precision`` spellings (older IR) for the same element types.
PRECISIONS = {
    "BOOL": "boolean", "BOOLEAN": "boolean", "U8": "u8", "U16": "u16", "U32": "u32",
    "U64": "u64", "I8": "i8", "I16": "i16", "I32": "i32", "I64": "i64", "FP16": "f16",
    "FP32": "f32", "FP64": "f64", "BF16": "bf16", "U1": "u1", "U4": "u4", "I4": "i4",
}
#: Bytes that must not appear: a declaration, or the start of a UTF-16/32 document.
FORBIDDEN = (b"<!DOCTYPE", b"<!ENTITY")
WIDE_ENCODING_MARKS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
#: A name separator in ``names="a,b"``: a comma not escaped as ``\,``.
NAME_SPLIT = re.compile(r"(?<!\\),")


@record
class _Layer:
    node: ET.Element
    #: Output ports in order: (port id, element).
    outputs: list[tuple[str, ET.Element]] = field(default_factory=list)


def read_openvino(path: str) -> ModelFile:
    """The IR's inputs and outputs as Triton's OpenVINO backend would report them."""
    try:
        data = read_file(path, MAX_XML_BYTES)
    except FileTooLarge as error:
        return ModelFile(
            path=path, size_bytes=error.size, kind="openvino",
            problem=f"is {error.size} bytes, over the {MAX_XML_BYTES // 2**20} MiB this tool "
            "reads from an IR .xml (the weights belong in the .bin)",
        )
    except OSError as error:
        return sniff.unreadable_file(path, error)
    return parse_ir(path, data)


def parse_ir(path: str, data: bytes) -> ModelFile:
    """``read_openvino`` on bytes already read."""
    if not data:
        return sniff.empty_file(path)
    found = ModelFile(path=path, size_bytes=len(data))
    refused = _refuse(data)
    if refused:
        found.problem = refused
        return found
    import xml.etree.ElementTree as ET  # only a run with OpenVINO models reads XML

    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        found.problem = f"is not well-formed XML ({error}); OpenVINO cannot read it"
        return found
    except (ValueError, RecursionError, MemoryError) as error:
        found.problem = f"cannot be parsed as XML ({type(error).__name__})"
        return found
    if root.tag != "net":
        found.problem = f"is XML but not an OpenVINO IR (root element <{root.tag}>, not <net>)"
        return found
    found.kind = "openvino"
    _read_net(root, found)
    return found


def _refuse(data: bytes) -> str | None:
    """Why the bytes are not parsed at all, or None."""
    if data.startswith(WIDE_ENCODING_MARKS) or b"\x00" in data[:1024]:
        return "is not UTF-8 text; OpenVINO IR .xml files are UTF-8"
    for marker in FORBIDDEN:
        if marker in data:
            return (
                f"has a {marker.decode()} declaration, which OpenVINO IR never has; not parsed "
                "(entities can expand into gigabytes or pull in local files)"
            )
    return None


def _ir_version(root: ET.Element) -> int:
    try:
        return int(root.get("version", "0"))
    except ValueError:
        return 0


def _layers(root: ET.Element) -> list[_Layer]:
    found = []
    for node in root.iterfind("layers/layer"):
        layer = _Layer(node)
        layer.outputs = [(port.get("id", ""), port) for port in node.iterfind("output/port")]
        found.append(layer)
    return found


def _read_net(root: ET.Element, found: ModelFile) -> None:
    version = _ir_version(root)
    layers = _layers(root)
    by_id = {layer.node.get("id", ""): layer for layer in layers}
    producers = {
        (edge.get("to-layer", ""), edge.get("to-port", "")):
            (edge.get("from-layer", ""), edge.get("from-port", ""))
        for edge in root.iterfind("edges/edge")
    }
    found.inputs = [
        _parameter(layer, version) for layer in layers if layer.node.get("type") == "Parameter"
    ]
    found.outputs = [
        _result(layer, by_id, producers, version)
        for layer in layers if layer.node.get("type") == "Result"
    ]


def _port_names(port: ET.Element | None) -> list[str]:
    if port is None:
        return []
    raw = port.get("names", "")
    return [name.replace("\\,", ",").strip() for name in NAME_SPLIT.split(raw) if name.strip()]


def _any_name(names: list[str], legacy: str, version: int) -> str:
    """OpenVINO's ``get_any_name()``: the smallest name; IR v10 adds the operation name."""
    if version == 10 and legacy:
        names = [*names, legacy]
    return min(names) if names else legacy


def _parameter(layer: _Layer, version: int) -> TensorInfo:
    node = layer.node
    port = layer.outputs[0][1] if layer.outputs else None
    data = node.find("data")
    element = _element_type(data, port)
    if version == 10 and element == "f16":
        element = "f32"  # OpenVINO keeps IR v10 inputs at the legacy f32
    shape = data.get("shape") if data is not None else None
    dims = _parse_shape(shape) if shape is not None else _port_dims(port)
    return TensorInfo(
        name=_any_name(_port_names(port), node.get("name", ""), version),
        data_type=_triton_type(element), dims=dims, source_type=element,
        layout=_layout(port),
    )


def _result(
    layer: _Layer, by_id: dict[str, _Layer], producers: dict[tuple[str, str], tuple[str, str]],
    version: int,
) -> TensorInfo:
    """A Result is named and typed by the output port that feeds it."""
    node = layer.node
    in_port = node.find("input/port")
    in_port_id = in_port.get("id", "0") if in_port is not None else "0"
    source_id, source_port = producers.get((node.get("id", ""), in_port_id), ("", ""))
    source = by_id.get(source_id)
    port = None
    legacy = node.get("name", "")
    if source is not None:
        ids = [port_id for port_id, _ in source.outputs]
        if source_port in ids:
            index = ids.index(source_port)
            port = source.outputs[index][1]
            legacy = source.node.get("name", "") + (f".{index}" if len(ids) > 1 else "")
    names = _port_names(port)
    element = _element_type(None, port if port is not None else in_port)
    if version == 10:
        element = _legacy_output_type(element)
    dims = _port_dims(port if port is not None else in_port)
    name = _any_name(names, legacy, version) if names or version == 10 else node.get("name", "")
    return TensorInfo(
        name=name, data_type=_triton_type(element), dims=dims, source_type=element,
        layout=_layout(in_port) or _layout(port),
    )


def _layout(port: ET.Element | None) -> str:
    """The port's layout annotation ("[N,C,H,W]") from its ``rt_info``, or ""."""
    if port is None:
        return ""
    for attribute in port.iterfind("rt_info/attribute"):
        if attribute.get("name") == "layout":
            return attribute.get("layout", "")
    return ""


def _legacy_output_type(element: str) -> str:
    """IR v10 outputs: OpenVINO widens integers to i32 and everything else to f32."""
    if not element:
        return element
    if element in ("i64", "u64", "i32", "u32"):
        return "i32"
    return "f32"


def _element_type(data: ET.Element | None, port: ET.Element | None) -> str:
    """The IR element type ("f32"), from ``data@element_type`` or the port's precision."""
    if data is not None and data.get("element_type"):
        return data.get("element_type", "").strip().lower()
    precision = port.get("precision", "") if port is not None else ""
    return PRECISIONS.get(precision.strip().upper(), precision.strip().lower())


def _triton_type(element: str) -> str | None:
    if not element:
        return None
    return ELEMENT_TYPES.get(element, "TYPE_INVALID")


def _dim(text: str) -> int:
    """One dimension: a number, or -1 for "?", "-1" and ranges like "1..10"."""
    text = text.strip()
    return int(text) if text.isdigit() else -1


def _parse_shape(shape: str) -> list[int] | None:
    """``data@shape`` ("1,3,?,224"): "" is a scalar, "..." a dynamic rank (None)."""
    shape = shape.strip()
    if shape == "":
        return []
    if shape == "...":
        return None
    return [_dim(part) for part in shape.split(",")]


def _port_dims(port: ET.Element | None) -> list[int] | None:
    if port is None:
        return None
    return [_dim(dim.text or "") for dim in port.iterfind("dim")]
