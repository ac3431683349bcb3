"""File names as text: the bytes of a name that are not UTF-8 written as ``\\xNN``.

A directory may be called ``caf\\xe9`` in Latin-1. Python hands such bytes over as lone
surrogates, which protobuf, JSON output and a UTF-8 terminal all refuse, so one such name
used to end the whole check. The Evidence keeps every name in this shown form; collectors
keep reading through the real path.
"""

from __future__ import annotations


def display_name(name: str) -> str:
    """``name`` unchanged when it is valid text, else with its undecodable bytes as ``\\xNN``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a surrogate that no file name decodes to
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return name
