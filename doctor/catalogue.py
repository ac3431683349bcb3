"""The catalogue of rules: every registered rule, found by id or name, selected by keys.

Listing the rules imports their family modules (registration happens on import), so this module
sits above the rules in the layers; the rules themselves import only ``triton_doctor.registry``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from triton_doctor.registry import RULES, Rule, key_matches
from triton_doctor.rules import FAMILIES

#: The scopes of rules (``Rule.scope``); the first two judge a repository alone.
SCOPES = ("model", "repository", "live", "log", "fleet")
STATIC = SCOPES[:2]


def all_rules() -> list[Rule]:
    """Every rule, by id."""
    return rules_of(SCOPES)


def rules_of(scopes: Iterable[str]) -> list[Rule]:
    """The rules of ``scopes``, by id; only the families holding such rules are imported."""
    wanted = frozenset(scopes)
    for family, has in FAMILIES.items():
        if has & wanted:
            # The import statement's own path, which -X importtime sees (import_module not).
            __import__(f"triton_doctor.rules.{family}")
    return [RULES[key] for key in sorted(RULES) if RULES[key].scope in wanted]


def find_rule(key: str) -> Rule | None:
    """A rule by id (``TD201``) or name (``config-syntax``), case-insensitive for ids."""
    for candidate in all_rules():
        if key.upper() == candidate.id or key == candidate.name:
            return candidate
    return None


def select_rules(select: Iterable[str], ignore: Iterable[str]) -> list[Rule]:
    """Rules chosen by ids, id prefixes or names; unknown keys raise ValueError."""

    def matches(candidate: Rule, key: str) -> bool:
        return key_matches(candidate.id, candidate.name, key)

    rules = all_rules()
    for key in [*select, *ignore]:
        if not any(matches(r, key) for r in rules):
            raise ValueError(f"no rule matches {key!r}; `triton-doctor rules` lists them")
    selected = list(select)
    ignored = list(ignore)
    return [
        r
        for r in rules
        if (not selected or any(matches(r, k) for k in selected))
        and not any(matches(r, k) for k in ignored)
    ]


def describe(candidate: Rule) -> dict[str, Any]:
    return {
        "id": candidate.id,
        "name": candidate.name,
        "severity": str(candidate.severity),
        "title": candidate.title,
    }
