"""A fast, exact reader of config.pbtxt: text format straight to wire bytes, parsed by upb.

protobuf's pure-Python ``text_format`` costs about half a millisecond per config, most of a
repository check. This reader tokenizes the whole text with one regex, walks the tokens against
a field table derived once from the schema's descriptors, emits the message's wire encoding and
lets upb (C) build the message from it. It only answers when it is certain that ``text_format``
would build the very same message; on anything else (every error, unknown or duplicate fields,
two members of a oneof, numbers outside the plain decimal forms, enums by number, extensions)
it returns None and the caller falls back to ``text_format``, whose error words the doctor
reports.
"""

from __future__ import annotations

import math
import re
import struct
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor

# The tokens of text_format's Tokenizer (identifier, number, quoted string on one line), with
# whitespace and comments matched too so that findall partitions the text; any other character
# is a token of its own. Whitespace and comments come back as "" and are dropped. A string left
# open is one token to the end of its line (which the reader declines): matching it from every
# quote and backslash of a long line again would take quadratic time.
_TOKENS = (
    r"(?:\s+|#.*)"
    r"|([A-Za-z_][0-9A-Za-z_+-]*"
    r"|(?:[0-9+-]|\.[0-9])[0-9A-Za-z_.+-]*"
    r"|\"[^\"\n\\]*(?:\\.[^\"\n\\]*)*\"?"
    r"|'[^'\n\\]*(?:\\.[^'\n\\]*)*'?"
    r"|.)"
)
# Integers and floats in the forms whose value is certain (text_format also takes hex, octal,
# binary, underscores, "+", "inf", "1.5f", ...: those fall back).
_INTEGER = r"-?(?:0|[1-9][0-9]*)"
_FLOAT = r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_BOOLS = {"true": 1, "t": 1, "1": 1, "True": 1, "false": 0, "f": 0, "0": 0, "False": 0}
_QUOTES = ("'", '"')
# String bodies with only the escapes text_format's unescaper decodes without a warning (octal
# up to \377), and no \u or \U (which it decodes in two passes): others fall back.
_ESCAPED_BODY = r"(?:[^\\]|\\(?:[\\'\"abfnrtv]|[0-3][0-7]{2}|[0-7]{1,2}(?![0-7])|x[0-9A-Fa-f]))*"

# Field kinds in the table.
_MESSAGE, _INT, _FLOAT32, _FLOAT64, _STRING, _CHOICE = range(6)
# FieldDescriptor.TYPE_* (numbers fixed by descriptor.proto; named here so that importing this
# module does not load protobuf before the schema is needed).
_DOUBLE, _FLOAT_TYPE, _INT64, _UINT64, _INT32, _BOOL = 1, 2, 3, 4, 5, 8
_STRING_TYPE, _MESSAGE_TYPE, _UINT32, _ENUM = 9, 11, 13, 14
_INT_RANGES = {
    _INT32: (-(2**31), 2**31 - 1),
    _INT64: (-(2**63), 2**63 - 1),
    _UINT32: (0, 2**32 - 1),
    _UINT64: (0, 2**64 - 1),
}
_PACK_FLOAT32 = struct.Struct("<f").pack
_PACK_FLOAT64 = struct.Struct("<d").pack
_ONE_BYTE = [bytes((value,)) for value in range(0x80)]
_TABLES: dict[Descriptor, dict[str, tuple]] = {}


class _Decline(Exception):
    """Not certain what text_format would make of the text."""


def read(text: str, message_class: Any) -> Any | None:
    """The message ``text_format.Parse`` would build from ``text``; None when not certain."""
    table = _table(message_class.DESCRIPTOR)
    tokens = [token for token in _tokenizer().findall(text) if token]
    try:
        wire = _fields(tokens, 0, table, None)[1]
    except (_Decline, IndexError, UnicodeEncodeError):  # the last: lone surrogates
        return None
    return message_class.FromString(wire)


@cache
def _tokenizer() -> re.Pattern[str]:
    return re.compile(_TOKENS)


@cache
def _forms() -> tuple[Any, Any, Any]:
    """fullmatch of a plain integer, of a plain float, of a string body with plain escapes."""
    integer, real, escaped = (re.compile(form) for form in (_INTEGER, _FLOAT, _ESCAPED_BODY))
    return integer.fullmatch, real.fullmatch, escaped.fullmatch


def _fields(
    tokens: list[str], i: int, table: dict[str, tuple], end: str | None
) -> tuple[int, bytes]:
    """Read fields from ``tokens[i]`` up to the ``end`` token (None: the end of the text).

    One loop reads every value kind inline (a call per value costs a fifth of the time).
    """
    out: list[bytes] = []
    seen: set[str] = set()
    count = len(tokens)
    while True:
        if i == count:
            if end is None:
                return i, b"".join(out)
            raise _Decline
        name = tokens[i]
        if name == end:
            return i + 1, b"".join(out)
        field = table.get(name)
        if field is None:
            raise _Decline
        kind, tag, repeated, detail, oneof = field
        if not repeated:
            if name in seen or oneof in seen:
                raise _Decline
            seen.add(name)
            if oneof:
                seen.add(oneof)
        i += 1
        if tokens[i] == ":":
            i += 1
        elif kind != _MESSAGE:
            raise _Decline
        listing = repeated and tokens[i] == "["
        if listing:
            i += 1
            if tokens[i] == "]":
                i += 1
                listing = None  # an empty list: no values
        while listing is not None:
            token = tokens[i]
            i += 1
            if kind == _CHOICE:  # enums by name and bools: encodings computed with the table
                encoded = detail.get(token)
                if encoded is None:
                    raise _Decline
                out.append(encoded)
            elif kind == _MESSAGE:
                if token == "{":
                    i, body = _fields(tokens, i, detail, "}")
                elif token == "<":
                    i, body = _fields(tokens, i, detail, ">")
                else:
                    raise _Decline
                out.append(tag + _length(len(body)) + body)
            elif kind == _INT:
                low, high, integer = detail
                if len(token) > 24 or not integer(token):  # int() refuses long digit strings
                    raise _Decline
                value = int(token)
                if not low <= value <= high:
                    raise _Decline
                out.append(tag + _varint(value if value >= 0 else value + 2**64))
            elif kind == _STRING:
                if (
                    len(token) > 1
                    and token[0] == token[-1] in _QUOTES
                    and "\\" not in token
                    and (i == count or tokens[i][0] not in _QUOTES)
                ):  # the common case: one quoted token without escapes
                    data = token[1:-1].encode("utf-8")
                    out.append(tag + _length(len(data)) + data)
                else:
                    i = _string(tokens, i - 1, tag, out)
            else:
                out.append(_float(token, kind, tag, detail))
            if not listing:
                break
            token = tokens[i]
            i += 1
            if token == "]":
                break
            if token != ",":
                raise _Decline
        if i < count and tokens[i] in (",", ";"):
            i += 1


def _string(tokens: list[str], i: int, tag: bytes, out: list[bytes]) -> int:
    """Append the string starting at ``tokens[i]`` (adjacent quoted tokens are one string, as
    in text_format); the index after it."""
    pieces = []
    while i < len(tokens) and tokens[i][0] in _QUOTES:
        pieces.append(_string_bytes(tokens[i]))
        i += 1
    if not pieces:
        raise _Decline
    data = b"".join(pieces)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Decline from None
    out.append(tag + _length(len(data)) + data)
    return i


def _float(token: str, kind: int, tag: bytes, real: Any) -> bytes:
    """A float or double field's encoding; declines what a float32 turns into infinity."""
    if not real(token):
        raise _Decline
    number = float(token)
    if not math.isfinite(number):
        raise _Decline
    try:
        return tag + (_PACK_FLOAT32(number) if kind == _FLOAT32 else _PACK_FLOAT64(number))
    except OverflowError:
        raise _Decline from None


def _string_bytes(token: str) -> bytes:
    """One quoted token's bytes, decoded as text_format decodes them (its own unescaper)."""
    if len(token) < 2 or token[-1] != token[0]:
        raise _Decline
    body = token[1:-1]
    try:
        if "\\" not in body:
            return body.encode("utf-8")
        if not _forms()[2](body):
            raise _Decline
        from google.protobuf import text_encoding

        return text_encoding.CUnescape(body)
    except (ValueError, UnicodeError):
        raise _Decline from None


def _length(size: int) -> bytes:
    return _ONE_BYTE[size] if size < 0x80 else _varint(size)


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _table(descriptor: Descriptor) -> dict[str, tuple]:
    """Field name -> (kind, tag bytes, repeated, detail, oneof key) for one message type.

    Built on first use and kept in ``_TABLES`` (registered before its fields are filled, so a
    recursive schema ends). Fields of types no Triton config uses (bytes, fixed, sint, groups)
    are left out, so they fall back like unknown names.
    """
    table = _TABLES.get(descriptor)
    if table is not None:
        return table
    table = _TABLES[descriptor] = {}
    for field in descriptor.fields:
        oneof = f"#{field.containing_oneof.name}" if field.containing_oneof else ""
        entry = _field_entry(field)
        if entry is not None:
            kind, wire_type, detail = entry
            tag = _varint(field.number << 3 | wire_type)
            if kind == _CHOICE:
                detail = {name: tag + _varint(value) for name, value in detail.items()}
            table[field.name] = (kind, tag, field.is_repeated, detail, oneof)
    return table


def _field_entry(field: FieldDescriptor) -> tuple[int, int, Any] | None:
    """(kind, wire type, detail) of a field the reader handles; None for the others."""
    kind = field.type
    if kind == _MESSAGE_TYPE:
        return _MESSAGE, 2, _table(field.message_type)
    if kind == _STRING_TYPE:
        return _STRING, 2, None
    integer, real, _ = _forms()
    if kind in _INT_RANGES:
        return _INT, 0, (*_INT_RANGES[kind], integer)
    if kind == _FLOAT_TYPE:
        return _FLOAT32, 5, real
    if kind == _DOUBLE:
        return _FLOAT64, 1, real
    if kind == _BOOL:
        return _CHOICE, 0, _BOOLS
    if kind == _ENUM:
        return _CHOICE, 0, {value.name: value.number % 2**64 for value in field.enum_type.values}
    return None
