"""Which rule explains the server's words, derived from what the rules declare.

A load error (a model's reason in the repository index, or the log line that carries it) is
explained by the rule whose ``server_says`` holds the longest fragment found in it: the most
specific words win. Words that several rules declare are passed over, since the server says
them for several causes; a text holding only such words names no rule. A line logged while
serving is matched, when no load error explains it, by the rules' ``log_says`` the same way,
ignoring case.

The answers come from the registered rules; the rules package registers them all on import
(``triton_doctor.catalogue`` does that for front-ends; a rule asking is registered already).
"""

from __future__ import annotations

from functools import cache

from triton_doctor.registry import RULES

#: A fragment and the ids of the rules that declare it, longest fragment first.
Table = tuple[tuple[str, frozenset[str]], ...]


def explain_reason(reason: str) -> str | None:
    """The rule that explains a server's load error, if its words single one out."""
    return _match(_tables(len(RULES))[0], reason)


def explain_log_line(line: str) -> str | None:
    """The rule that explains a server log line: its load error, or what it says at run time."""
    return explain_reason(line) or _match(_tables(len(RULES))[1], line.lower())


def _match(table: Table, text: str) -> str | None:
    """The owner of the longest fragment in ``text`` that one rule alone declares."""
    return next((next(iter(ids)) for fragment, ids in table
                 if len(ids) == 1 and fragment in text), None)


@cache
def _tables(registered: int) -> tuple[Table, Table]:
    """The declared fragments of the ``registered`` rules (rules are only ever added, so the
    count names the registry's state), for load errors and for log lines."""
    says: dict[str, set[str]] = {}
    logs: dict[str, set[str]] = {}
    for candidate in RULES.values():
        for fragment in candidate.server_says:
            says.setdefault(fragment, set()).add(candidate.id)
        for fragment in candidate.log_says:
            logs.setdefault(fragment.lower(), set()).add(candidate.id)
    return _longest_first(says), _longest_first(logs)


def _longest_first(declared: dict[str, set[str]]) -> Table:
    return tuple((fragment, frozenset(declared[fragment]))
                 for fragment in sorted(declared, key=lambda f: (-len(f), f)))
