"""Small helpers the rule modules share: Triton's spellings of names, dims and messages."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from triton_doctor.evidence import INT64_MAX
from triton_doctor.triton import model_config


def dims_product(sizes: Iterable[int], start: int = 1) -> int | None:
    """``start`` times the sizes (each >= 0), or None once that leaves int64, where core's count
    overflows. It stops there: multiplied out, a million dims make a number of a million digits
    and minutes of work."""
    product = start  # core keeps element counts and byte sizes in int64
    for size in sizes:
        product *= size
        if product > INT64_MAX:
            return None
    return product


#: Names listed in one message: a model may have 100,000 tensors, and a message per stray
#: tensor naming them all is output quadratic in the repository's size.
MAX_LISTED_NAMES = 256


def names_text(names: list[str], limit: int = MAX_LISTED_NAMES) -> str:
    """``a, b, c`` ("none" for none); past ``limit`` names, the first ones and the count."""
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names):,} in all)"


def dims_text(dims: Iterable[int]) -> str:
    """``[-1,3,224]`` as Triton prints shapes."""
    return "[" + ",".join(str(d) for d in dims) + "]"


def enum_name(message: Any, field: str, value: int) -> str:
    """The enum value's name, e.g. ``KIND_GPU`` for instance_group.kind; "" for a number the
    schema does not define (text format accepts ``kind: 99``), as protobuf's C++ Name() does."""
    return _enum_names(message.DESCRIPTOR, field).get(value, "")


@cache
def _enum_names(descriptor: Any, field: str) -> dict[int, str]:
    """Names by number of a field's enum, read from the schema once: every tensor, group and
    control of every model asks."""
    enum = descriptor.fields_by_name[field].enum_type
    return {number: str(value.name) for number, value in enum.values_by_number.items()}


@cache
def type_name(value: int) -> str:
    """``TYPE_FP32`` for the enum value; kept, since every tensor of every model asks."""
    return model_config.data_type_name(value)


#: Bytes per element of each data type (TYPE_STRING has no fixed size).
ELEMENT_BYTES = {
    "TYPE_BOOL": 1, "TYPE_UINT8": 1, "TYPE_UINT16": 2, "TYPE_UINT32": 4, "TYPE_UINT64": 8,
    "TYPE_INT8": 1, "TYPE_INT16": 2, "TYPE_INT32": 4, "TYPE_INT64": 8,
    "TYPE_FP16": 2, "TYPE_FP32": 4, "TYPE_FP64": 8, "TYPE_BF16": 2,
}


def tensor_bytes(tensor: Any) -> int | None:
    """Bytes of ``tensor`` (a message with data_type and dims: a warmup input, an initial
    state) when its dims are fixed; None for strings, variable dims, or a size past int64
    (where the server's own byte count overflows)."""
    data_type = enum_name(tensor, "data_type", tensor.data_type)
    if data_type not in ELEMENT_BYTES or any(d < 0 for d in tensor.dims):
        return None
    return dims_product(tensor.dims, start=ELEMENT_BYTES[data_type])


def is_ensemble(config: Any) -> bool:
    return bool(config.platform == "ensemble")


def first_line(text: str, width: int) -> str:
    """The first non-blank line of ``text``, shortened to ``width``: a server's reason or a log
    message may be a whole traceback, which a finding quotes once, as the server's words."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= width else line[:width - 1].rstrip() + "…"
