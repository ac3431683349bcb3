"""Which rule explains the server's words, derived from what the rules declare.

A load error (a model's reason in the repository index, or the log line that carries it) is
explained by the rule whose ``server_says`` holds the longest fragment found in it: the most
specific words win. Words that several rules declare are passed over, since the server says
them for several causes; a text holding only such words names no rule. A line logged while
serving is matched, when no load error explains it, by the rules' ``log_says`` the same way.
Words are matched as written: the server's messages are constant text, and a search that
ignores case would cost a log scan a pass over a lowered copy of every block.

The log scan (``checks.log_scan``) looks for the words of the log rules (scope "log") only,
and gives each line it finds to the rule whose words it holds (:func:`in_log`).

The answers come from the registered rules: a front-end lists them through
``triton_doctor.catalogue`` first (a rule asking is registered already).
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
    """The rule that explains a server log line: a log rule's own words, else its load
    error's, else what it says at run time (a relaying log rule's words or a live rule's)."""
    own, relayed = _log_tables(len(RULES))
    return (_match(own, line) or explain_reason(line) or _match(relayed, line)
            or _match(_tables(len(RULES))[1], line))


def log_words() -> tuple[str, ...]:
    """Every run of words a log rule declares: what the log scan looks for."""
    own, relayed = _log_tables(len(RULES))
    return tuple(fragment for fragment, _ in (*own, *relayed))


def in_log(message: str) -> tuple[str, str] | None:
    """(the log rule, its words found) for a log message. A rule that relays the server's
    text (a load failure, whatever its cause) is named only when no other log rule's words are
    there: its words say what kind of line it is, the others' what went wrong."""
    for table in _log_tables(len(RULES)):
        for fragment, ids in table:
            if len(ids) == 1 and fragment in message:
                return next(iter(ids)), fragment
    return None


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
            logs.setdefault(fragment, set()).add(candidate.id)
    return _longest_first(says), _longest_first(logs)


@cache
def _log_tables(registered: int) -> tuple[Table, Table]:
    """The words of the log rules: those of rules with words of their own, then those of the
    rules that relay the server's text."""
    own: dict[str, set[str]] = {}
    relayed: dict[str, set[str]] = {}
    for candidate in RULES.values():
        if candidate.scope == "log":
            table = relayed if candidate.relays_server else own
            for fragment in (*candidate.server_says, *candidate.log_says):
                table.setdefault(fragment, set()).add(candidate.id)
    return _longest_first(own), _longest_first(relayed)


def _longest_first(declared: dict[str, set[str]]) -> Table:
    return tuple((fragment, frozenset(declared[fragment]))
                 for fragment in sorted(declared, key=lambda f: (-len(f), f)))
