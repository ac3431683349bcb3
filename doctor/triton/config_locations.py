"""Map field paths in a config.pbtxt (``input[1].dims``) to the line they are written on.

protobuf's parser keeps no positions, so this walks the text-format tokens itself. It is
forgiving: on text it does not understand it stops and returns what it has mapped so far.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from triton_doctor.lazy_pattern import LazyPattern

_TOKEN = LazyPattern(
    r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n) | (?P<comment>\#[^\n]*)
    | (?P<string>"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|'[^'\\\n]*(?:\\.[^'\\\n]*)*'?)
    | (?P<word>[A-Za-z0-9_.+\-$]+)
    | (?P<punct>[{}\[\]<>:,;])
    | (?P<other>.)
    """,
    re.VERBOSE,
)


_IDENTIFIER = LazyPattern(r"^[A-Za-z_]\w*$")


def _tokens(text: str) -> list[tuple[str, int]]:
    tokens, line = [], 1
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "newline":
            line += 1
        elif kind not in ("space", "comment"):
            tokens.append((match.group(), line))
    return tokens


def field_lines(text: str) -> dict[str, int]:
    """Field path -> line of its first occurrence. Repeated messages are indexed from 0."""
    tokens = _tokens(text)
    lines: dict[str, int] = {}
    position = 0

    def value(path: str) -> bool:
        nonlocal position
        if position >= len(tokens):
            return False
        token = tokens[position][0]
        if token in ("{", "<"):
            position += 1
            return message(path, "}" if token == "{" else ">")
        position += 1  # a scalar; strings may be split into adjacent literals
        while (
            position < len(tokens) and tokens[position][0][:1] in ('"', "'") and token[:1] in "\"'"
        ):
            position += 1
        return True

    def message(prefix: str, closer: str | None) -> bool:
        nonlocal position
        counts: dict[str, int] = {}
        while position < len(tokens):
            token, line = tokens[position]
            if token == closer:
                position += 1
                return True
            if not _IDENTIFIER.match(token):
                return False
            position += 1
            if position < len(tokens) and tokens[position][0] == ":":
                position += 1
            if position >= len(tokens):
                return False
            lines.setdefault(prefix + token, line)
            if tokens[position][0] == "[":
                position += 1
                while position < len(tokens) and tokens[position][0] != "]":
                    if not _element(prefix, token, tokens[position][1], counts, lines, value):
                        return False
                    if position < len(tokens) and tokens[position][0] == ",":
                        position += 1
                position += 1
            elif not _element(prefix, token, line, counts, lines, value):
                return False
            if position < len(tokens) and tokens[position][0] in (",", ";"):
                position += 1
        return closer is None

    message("", None)
    return lines


def _element(
    prefix: str,
    name: str,
    line: int,
    counts: dict[str, int],
    lines: dict[str, int],
    value: Callable[[str], bool],
) -> bool:
    """Record one element of field ``name`` and parse its value."""
    index = counts.get(name, 0)
    counts[name] = index + 1
    path = f"{prefix}{name}[{index}]"
    lines.setdefault(path, line)
    return bool(value(path + "."))


def locate(lines: dict[str, int], field: str) -> int | None:
    """The line of ``field``, or of its nearest written ancestor (``input[0].dims`` ->
    ``input[0]``). Singular messages may be named without an index: ``dynamic_batching.x``.
    """
    parts = field.split(".")
    candidate = ".".join([p if "[" in p else p + "[0]" for p in parts[:-1]] + parts[-1:])
    while candidate:
        if candidate in lines:
            return lines[candidate]
        cut = max(candidate.rfind("."), candidate.rfind("["))
        candidate = candidate[:cut] if cut > 0 else ""
    return None
