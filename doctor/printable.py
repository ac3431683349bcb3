"""Text from outside (directory names, config strings, server reasons and error bodies, log
lines) made safe to show on a terminal.

A repository under review, a server and a log are untrusted: their text must not retitle or
clear the terminal (ESC, BEL, CSI), move the cursor back over a line (CR, BS), reorder what the
reader sees (bidi overrides and isolates, U+202A-U+202E, U+2066-U+2069, and the marks
U+061C, U+200E, U+200F), hide in a name that reads as another (the invisible U+200B, U+2060
and U+FEFF: ``resnet\\u200b50`` is not the model ``resnet50``), or start a line of its own
(LF, VT, FF, NEL, U+2028, U+2029) that passes for one the tool wrote. Each such character is
shown as a visible escape instead (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u202e``), as are
lone surrogates (the undecodable bytes of a non-UTF-8 file name, shown as ``\\xNN`` as
``display_name`` shows it), which no terminal encoding can write. Backslashes stay as they are:
the escapes are for the reader, not a format to decode.

Front-ends escape each piece of outside text where it goes in (never their own output, whose
newlines and colours are theirs).
"""

from __future__ import annotations

from functools import cache

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
#: Zero width space, word joiner, zero width no-break space (a BOM inside text). The zero width
#: (non-)joiners stay: scripts and emoji sequences need them.
_INVISIBLE = (0x200B, 0x2060, 0xFEFF)
_UNSAFE = (*range(0x20), *range(0x7F, 0xA0), *_BIDI, *_INVISIBLE, 0x2028, 0x2029,
           *range(0xD800, 0xE000))
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as ``display_name`` shows it
        return f"\\x{code - 0xDC00:02x}"
    return _NAMED.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


# The translation tables hold thousands of entries (the surrogates): built on first use.
@cache
def _one_line() -> dict[int, str]:
    return {code: _escape(code) for code in _UNSAFE}


@cache
def _lines() -> dict[int, str]:
    return {code: escaped for code, escaped in _one_line().items() if code != 0x0A}


@cache
def _json() -> dict[int, str]:
    """What JSON (written with ensure_ascii=False) leaves raw, as JSON's own \\u escapes."""
    return {code: f"\\u{code:04x}" for code in _UNSAFE if code >= 0x7F}


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every character that acts on a terminal escaped; ``keep_newlines`` keeps
    LF as a line break, for text of several lines (a server's traceback), whose lines the
    caller then indents under its own."""
    return text.translate(_lines() if keep_newlines else _one_line())


def json_printable(document: str) -> str:
    """A JSON document written with ``ensure_ascii=False`` with the characters JSON leaves
    raw that a terminal would act on (C1 controls, bidi controls, line separators, lone
    surrogates) as ``\\uXXXX``: equal JSON, safe to print. Outside strings JSON text holds
    none of them, so each one is inside a string, where the escape means the same."""
    return document.translate(_json())


def display_name(name: str) -> str:
    """A file name as text: unchanged when it is valid text, else with its undecodable bytes
    as ``\\xNN``. A directory may be called ``caf\\xe9`` in Latin-1; Python hands such bytes
    over as lone surrogates, which protobuf, JSON and a UTF-8 terminal refuse. The Evidence
    keeps every name in this form; collectors keep reading through the real path."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate that no file name decodes to
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return name
