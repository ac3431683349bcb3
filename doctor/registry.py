"""The rule registry: ``@rule`` declares a rule's identity and docs next to its code.

This is the contract the rules import; the catalogue (``triton_doctor.catalogue``) lists and
selects the registered rules.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from triton_doctor.findings import Hit, Severity

RULE_ID = re.compile(r"^TD[1-8]\d\d$")
RULE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("What it checks", "Why it matters", "Example", "Fix")


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    title: str
    #: "model": called once per model with (model, repository); "repository": once with the
    #: repository; "live": once with the LiveView of a running server.
    scope: str
    #: What the rule needs: "config" = a model's parsed (or auto-completed) configuration; for
    #: live rules the Evidence parts ("server", "metrics", "gpu", "container", "host", "log").
    needs: tuple[str, ...]
    check: Callable[..., Iterable[Hit]]

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check.__doc__ or "")


#: Every registered rule by id; read through ``triton_doctor.catalogue``.
RULES: dict[str, Rule] = {}


def rule(
    id: str,
    name: str,
    severity: str,
    title: str,
    *,
    scope: str = "model",
    needs: tuple[str, ...] = ("config",),
) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register a rule. Its docstring is its documentation, with the DOC_SECTIONS headings."""

    def register(check: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        if not RULE_ID.match(id):
            raise ValueError(f"rule id {id!r} is not TD + 3 digits")
        if not RULE_NAME.match(name):
            raise ValueError(f"rule name {name!r} is not kebab-case")
        taken = {r.name: r.id for r in RULES.values()}
        if id in RULES or name in taken:
            raise ValueError(f"rule {id} {name} is registered twice")
        missing = [s for s in DOC_SECTIONS if f"{s}:" not in (check.__doc__ or "")]
        if missing:
            raise ValueError(f"rule {id} docs lack sections: {', '.join(missing)}")
        RULES[id] = Rule(id, name, Severity.parse(severity), title, scope, needs, check)
        return check

    return register


def key_matches(rule_id: str, rule_name: str, key: str) -> bool:
    """How users name rules everywhere: an id (``TD213``), an id prefix (``TD2``) or a name."""
    return rule_id.startswith(key.upper()) or rule_name == key
