"""Random config.pbtxt texts over the whole ModelConfig schema, driven by its descriptors.

The fast config reader (doctor/triton/config_reader.py) must agree with protobuf's
``text_format`` on every text; these texts exercise every message type and field kind the
schema reaches, in every spelling the text format allows (comments, separators, both bracket
kinds, list syntax, number, bool, enum and string forms), and ``mutate`` breaks them the ways
hand-edited files break. ``tests/test_config_reader.py`` and ``bench/config_reader.py`` use it.

``config(rng, wild=0.0)``: a text ``text_format`` accepts when ``wild`` is 0 and written only
in forms the fast reader takes; ``wild`` is the chance that a value is written in a form
text_format may accept or reject but the reader declines (hex, octal, "inf", enum numbers,
out-of-range numbers, bad escapes ...).
"""

from __future__ import annotations

import random
from typing import Any

from triton_doctor.triton.model_config import schema

# FieldDescriptor.TYPE_* numbers (descriptor.proto).
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _BOOL, _STRING, _MESSAGE, _UINT32, _ENUM = (
    1, 2, 3, 4, 5, 8, 9, 11, 13, 14,
)  # fmt: skip
_RANGES = {
    _INT32: (-(2**31), 2**31 - 1),
    _INT64: (-(2**63), 2**63 - 1),
    _UINT32: (0, 2**32 - 1),
    _UINT64: (0, 2**64 - 1),
}
_FLOATS = [
    "0", "-0", "1", "1.5", "-0.25", "0.1", ".5", "-.5", "1.", "1e-3", "2.5E+2", "1e10",
    "3.4028235e38", "-3.4028234e38", "1.4e-45", "1e-46", "123456789.123456789", "0.0",
    "16777217", "2.2250738585072014e-308",
]  # fmt: skip
_DOUBLE_ONLY = ["1e308", "-1.7976931348623157e308"]  # float32 makes them inf: the reader declines
_WILD_FLOATS = [
    "inf", "-inf", "nan", "infinity", "-Infinity", "NaN", "1.5f", "2F", "0x10", "01.5",
    "1_0.5", "+1.5", "1e400", "3.4028236e38", "1e39", "1e308", "00", "1.5.5", "e5", "-", "true",
]  # fmt: skip
_WILD_INTS = [
    "0x1F", "0X10", "017", "00", "+3", "1_0", "0b101", "0o17", "-0x1", "1.0", "1e3", "true",
    "99999999999999999999999", "-99999999999999999999", "4294967296", "-2147483649",
    "9223372036854775808", "18446744073709551616", "-1", "--1", "1-1", "", "inf", "9" * 30,
]  # fmt: skip
_BOOLS = ["true", "false", "t", "f", "True", "False", "1", "0"]
_WILD_BOOLS = ["TRUE", "yes", "2", "tRue", "-1", "0x1", '"true"', "01"]
_PLAIN_CHARS = "abcXYZ019 _-./:#{}[]<>,;é€😀\t"
_ESCAPES = [r"\n", r"\t", r"\\", r"\"", r"\'", r"\101", r"\x41", r"\x4", r"\r", r"\0", r"\a"]
_WILD_ESCAPES = [r"\u00e9", r"\q", r"\x", r"\777", r"\xff", r"\ud800", r"\U0001F600", r"\8", "\\"]
_SPACES = [" ", " ", " ", "\n", "  ", "\n  ", "\t", "\r\n", " # a comment\n", "\n# note: {\n"]


class _Writer:
    """Writes one config; ``fields`` collects the full names of the fields it wrote."""

    def __init__(self, rng: random.Random, wild: float) -> None:
        self.rng = rng
        self.wild = wild
        self.fields: set[str] = set()

    def odd(self) -> bool:
        return self.wild > 0 and self.rng.random() < self.wild

    def space(self) -> str:
        return self.rng.choice(_SPACES) if self.rng.random() < 0.5 else " "

    def message(self, descriptor: Any, depth: int) -> str:
        rng = self.rng
        chosen_oneofs: dict[str, str] = {}
        for oneof in descriptor.oneofs:
            if rng.random() < 0.6:
                chosen_oneofs[oneof.name] = rng.choice(oneof.fields).name
        parts = []
        keep = 0.45 if depth > 0 else 0.25
        for field in descriptor.fields:
            oneof = field.containing_oneof
            chosen = oneof is None or chosen_oneofs.get(oneof.name) == field.name
            if not chosen and not self.odd():  # a second member of a oneof: wild texts only
                continue
            if rng.random() > keep:
                continue
            parts.extend(self.field(field, depth))
        rng.shuffle(parts)
        return "".join(parts)

    def field(self, field: Any, depth: int) -> list[str]:
        """The field written once or more (repeated fields also in list syntax)."""
        self.fields.add(field.full_name)
        rng = self.rng
        is_message = field.type == _MESSAGE
        colon = (":" if rng.random() < 0.5 else "") if is_message else ":"
        if self.odd():
            colon = rng.choice(["", ":", "::", "="])
        if not field.is_repeated:
            return [self.entry(field.name, colon, self.value(field, depth))]
        if rng.random() < 0.4:
            values = [self.value(field, depth) for _ in range(rng.randint(0, 3))]
            joined = ("," + self.space()).join(values)
            return [self.entry(field.name, colon, f"[{self.space()}{joined}{self.space()}]")]
        return [
            self.entry(field.name, colon, self.value(field, depth))
            for _ in range(rng.randint(1, 3))
        ]

    def entry(self, name: str, colon: str, value: str) -> str:
        separator = self.rng.choice(["", "", "", ",", ";"])
        return f"{name}{colon}{self.space()}{value}{separator}{self.space()}\n"

    def value(self, field: Any, depth: int) -> str:
        kind = field.type
        if kind == _MESSAGE:
            return self.sub_message(field.message_type, depth)
        if kind in _RANGES:
            return self.integer(kind)
        if kind in (_FLOAT, _DOUBLE):
            if self.odd():
                return self.rng.choice(_WILD_FLOATS)
            forms = _FLOATS + _DOUBLE_ONLY if kind == _DOUBLE else _FLOATS
            return self.rng.choice([*forms, self.integer(_INT32)])
        if kind == _BOOL:
            return self.rng.choice(_WILD_BOOLS if self.odd() else _BOOLS)
        if kind == _ENUM:
            return self.enum(field.enum_type)
        if kind == _STRING:
            return self.string()
        raise AssertionError(f"the generator does not know field type {kind}")

    def sub_message(self, descriptor: Any, depth: int) -> str:
        opening, closing = ("{", "}") if self.rng.random() < 0.7 else ("<", ">")
        if self.odd():
            closing = self.rng.choice(["}", ">", "]", ""])
        body = self.message(descriptor, depth + 1)
        return f"{opening}{self.space()}{body}{self.space()}{closing}"

    def integer(self, kind: int) -> str:
        if self.odd():
            return self.rng.choice(_WILD_INTS)
        low, high = _RANGES[kind]
        choice = self.rng.random()
        if choice < 0.15:
            return str(self.rng.choice([low, high, 0, max(low, -1), 1]))
        if choice < 0.3:
            return str(self.rng.randint(low, high))
        return str(self.rng.randint(max(low, -20), 1000))

    def enum(self, enum_type: Any) -> str:
        if self.odd():
            return self.rng.choice(["1", "0", "-1", "99", "TYPE_NOPE", '"TYPE_FP32"', "kind_gpu"])
        return str(self.rng.choice(enum_type.values).name)

    def string(self) -> str:
        rng = self.rng
        pieces = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            quote = rng.choice("\"'")
            body = []
            for _ in range(rng.randint(0, 8)):
                roll = rng.random()
                if roll < 0.15:
                    body.append(rng.choice(_WILD_ESCAPES if self.odd() else _ESCAPES))
                elif roll < 0.2:
                    body.append('"' if quote == "'" else "'")
                else:
                    body.append(rng.choice(_PLAIN_CHARS))
            closing = quote if not self.odd() else rng.choice(["", "\n", quote + quote])
            pieces.append(f"{quote}{''.join(body)}{closing}")
        return self.space().join(pieces)


def config(rng: random.Random, wild: float = 0.0) -> tuple[str, set[str]]:
    """A random ModelConfig text and the full names of the fields written in it."""
    writer = _Writer(rng, wild)
    text = writer.message(schema().ModelConfig.DESCRIPTOR, 0)
    return text, writer.fields


_JUNK = [
    "{", "}", "<", ">", "[", "]", ":", ";", ",", '"', "'", "#", "-", ".", "0x", "\n", " ",
    "name", "input", "[inference.x]", "\\", "\x00", "\ufeff", "\u2028", "\x85", "é",
]  # fmt: skip


def mutate(rng: random.Random, text: str) -> str:
    """``text`` broken or rearranged the ways hand-edited files are: a character lost or
    added, a line doubled (duplicate fields, two members of a oneof), lines swapped, the file
    cut short, an unknown field."""
    lines = text.split("\n")
    roll = rng.random()
    if roll < 0.25 and text:
        at = rng.randrange(len(text))
        return text[:at] + text[at + 1 :]
    if roll < 0.5:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(_JUNK) + text[at:]
    if roll < 0.7:
        at = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[at])
        return "\n".join(lines)
    if roll < 0.8:
        rng.shuffle(lines)
        return "\n".join(lines)
    if roll < 0.9:
        return text[: rng.randrange(len(text) + 1)]
    return text + rng.choice(["no_such_field: 1\n", "Name: 'x'\n", "[ext]: 1\n", "1: 2\n"])


def reachable_fields() -> set[str]:
    """Full names of every field reachable from ModelConfig."""
    seen: set[str] = set()
    fields: set[str] = set()
    pending = [schema().ModelConfig.DESCRIPTOR]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name in seen:
            continue
        seen.add(descriptor.full_name)
        for field in descriptor.fields:
            fields.add(field.full_name)
            if field.message_type is not None:
                pending.append(field.message_type)
    return fields
