"""The table of rule families (``rules.FAMILIES``) says what each module registers: a static
check imports only the families of static scopes, and judges exactly as with every rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_doctor.catalogue import SCOPES, STATIC, all_rules, rules_of
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.engine import run
from triton_doctor.evidence import to_jsonable
from triton_doctor.invocation import Invocation
from triton_doctor.rules import FAMILIES

from tests.helpers import DEMO, ROOT
from tests.test_rule_fixtures import FIXTURES


def test_the_table_names_each_family_and_the_scopes_it_registers() -> None:
    registered: dict[str, set[str]] = {}
    for candidate in all_rules():
        module, _, family = candidate.check.__module__.rpartition(".")
        assert module == "triton_doctor.rules", candidate.id
        registered.setdefault(family, set()).add(candidate.scope)
    modules = {path.stem for path in (ROOT / "rules").glob("*.py")
               if not path.stem.startswith("_")}
    assert {family: set(scopes) for family, scopes in FAMILIES.items()} == registered
    assert set(FAMILIES) == modules
    assert {scope for scopes in FAMILIES.values() for scope in scopes} <= set(SCOPES)


def test_rules_of_gives_the_rules_of_those_scopes_only() -> None:
    static = rules_of(STATIC)
    assert static and all(candidate.scope in STATIC for candidate in static)
    assert [c for c in all_rules() if c.scope in STATIC] == static
    assert [c.id for c in all_rules()] == sorted(c.id for c in all_rules())


@pytest.mark.parametrize("repository", [DEMO, *sorted(
    kind for kind in FIXTURES.glob("*/*")
    if kind.is_dir() and not (kind / "snapshot.json").exists()
    and not (kind / "server.log").exists())], ids=lambda path: f"{path.parent.name}-{path.name}")
def test_a_static_check_judges_alike_with_the_static_families(repository: Path) -> None:
    invocation = Invocation.from_args(build_parser().parse_args(["check", str(repository)]))
    evidence = collect(invocation)
    assert to_jsonable(run(evidence, rules_of(STATIC))) == to_jsonable(
        run(evidence, all_rules()))
