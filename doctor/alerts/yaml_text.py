"""The little YAML that rule files need, written without a YAML library (PyYAML is a test
dependency only): mappings, sequences and strings.

A string is JSON-quoted, which YAML reads as a double-quoted scalar (ASCII escapes only: YAML
1.1 readers fold some non-ASCII line breaks a raw JSON string may hold); a string of several
lines that a block scalar keeps exactly is written as ``|-``, so that PromQL reads as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

#: Keys written bare; others are quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Lines a ``|-`` block keeps as they are: printable ASCII and no trailing blank; the first line
#: must not be indented (it would set the block's indentation), nor the last empty (``-`` drops
#: it).
_BLOCK_LINE = re.compile(r"[ -~]*[!-~]|")

Value = str | Sequence["Value"] | Mapping[str, "Value"]


def dump(value: Mapping[str, Value]) -> str:
    """One YAML document holding ``value``, ending in a newline."""
    return "\n".join(_mapping(value, "")) + "\n"


def _mapping(value: Mapping[str, Value], indent: str) -> list[str]:
    lines = []
    for key, item in value.items():
        name = key if _PLAIN_KEY.fullmatch(key) else json.dumps(key)
        lines += _entry(f"{indent}{name}:", item, indent + "  ")
    return lines


def _entry(head: str, item: Value, indent: str) -> list[str]:
    """``head`` (``key:`` or ``-``) followed by ``item``, nested under ``indent``."""
    if isinstance(item, str):
        return _string(head, item, indent)
    if isinstance(item, Mapping):
        if not item:
            return [f"{head} {{}}"]
        if head.endswith("-"):  # the mapping starts on the dash's line
            first, *rest = _mapping(item, indent)
            return [f"{head} {first.lstrip()}", *rest]
        return [head, *_mapping(item, indent)]
    if not item:
        return [f"{head} []"]
    lines = [head]
    for element in item:
        lines += _entry(f"{indent}-", element, indent + "  ")
    return lines


def _string(head: str, text: str, indent: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) > 1 and lines[0][:1] != " " and lines[-1] and all(
            _BLOCK_LINE.fullmatch(line) for line in lines):
        return [f"{head} |-", *(f"{indent}{line}" if line else "" for line in lines)]
    return [f"{head} {json.dumps(text)}"]
