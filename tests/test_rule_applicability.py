"""A rule's ``when`` (the models it can apply to) only saves work: it never hides a finding.

The engine does not call a model rule on a model whose facts (``ModelView.facts``) meet none of
its declared ones. That is safe only if the rule, called there anyway, finds nothing and does
not fail (a failure is a reported skip). Proven here on every model of every rule fixture, the
demo repository and a small benchmark repository.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence
from triton_doctor.findings import Hit
from triton_doctor.invocation import Invocation
from triton_doctor.registry import MODEL_FACTS, Rule, rule
from triton_doctor.triton import normalize
from triton_doctor.triton.repository_model import ModelView, RepositoryView

from bench.build_repo import build
from tests.helpers import write_model
from tests.test_bad_model_files import CASES
from tests.test_rule_fixtures import FIXTURES, _repository

ROOT = Path(__file__).resolve().parent.parent
DECLARED = [r for r in all_rules() if r.when]
#: Configs that pair what rules usually see apart (a block of one kind of model on another).
CROSSED = {
    "scheduled_onnx": 'backend: "onnxruntime"\nmax_batch_size: 0\n'
                      'ensemble_scheduling { step [ { model_name: "a" model_version: -1 } ] }\n',
}


def _fixtures() -> list[tuple[str, str]]:
    """(rule id, kind) of every rule fixture that is a model repository (not a snapshot or a
    server log)."""
    return [
        (kind.parent.name, kind.name) for kind in sorted(FIXTURES.glob("*/*"))
        if kind.is_dir() and not (kind / "snapshot.json").exists()
        and not (kind / "server.log").exists()
    ]


def _evidence(repo: Path, *extra: str) -> Evidence:
    argv = ["check", str(repo), *extra]
    return collect(Invocation.from_args(build_parser().parse_args(argv)))


def _excluded(evidence: Evidence) -> Iterator[tuple[Rule, ModelView, RepositoryView]]:
    """(rule, model, view) for each declared rule and each model the engine leaves it off."""
    assert evidence.repository is not None
    view = RepositoryView(evidence.repository, evidence.options)
    for model in view.models:
        for candidate in DECLARED:
            if not model.missing(candidate.needs) and not model.may_apply(candidate.when):
                yield candidate, model, view


def _assert_silent(evidence: Evidence) -> None:
    for candidate, model, view in _excluded(evidence):
        hits: list[Hit] = list(candidate.check(model, view))
        assert not hits, (f"{candidate.id} declares when={sorted(candidate.when)}, yet finds "
                          f"{hits[0].message!r} in {model.name}: facts {model.facts}")


@pytest.mark.parametrize(("rule_id", "kind"), _fixtures(), ids=[f"{r}-{k}" for r, k in _fixtures()])
def test_declared_rules_find_nothing_in_fixtures_they_skip(
        rule_id: str, kind: str, tmp_path: Path) -> None:
    args = FIXTURES / rule_id / "args"
    extra = shlex.split(args.read_text()) if args.exists() else []
    no_settings = tmp_path / "no-settings.toml"
    no_settings.write_text("")
    repo = _repository(rule_id, kind, tmp_path)
    _assert_silent(_evidence(repo, "--config", str(no_settings), *extra))


def test_declared_rules_find_nothing_in_the_demo_they_skip() -> None:
    _assert_silent(_evidence(ROOT / "fixtures" / "demo-repository"))


def test_declared_rules_find_nothing_in_a_bench_repository_they_skip(tmp_path: Path) -> None:
    build(tmp_path / "repo", models=40)
    _assert_silent(_evidence(tmp_path / "repo"))


def test_declared_rules_find_nothing_in_unusual_models_they_skip(tmp_path: Path) -> None:
    """The unusable model files of tests/test_bad_model_files, and CROSSED, a model each."""
    for number, (config, write, _, _) in enumerate(CASES.values()):
        write(write_model(tmp_path, f"broken_{number}", config, files={}))
    for name, config in CROSSED.items():
        write_model(tmp_path, name, config, files={})
    _assert_silent(_evidence(tmp_path))


def test_every_declared_fact_is_one_the_view_decides_and_is_met_in_the_fixtures() -> None:
    """A misspelt fact would switch its rule off everywhere; an unmet one proves nothing. A
    backend is one whose model file the server knows (openvino has no rule fixture)."""
    seen: set[str] = set()
    for rule_id, kind in _fixtures():
        if kind != "fail" or (FIXTURES / rule_id / "build.py").exists():
            continue  # what a build.py adds is unreadable: no facts to see there
        evidence = _evidence(FIXTURES / rule_id / kind)
        assert evidence.repository is not None
        view = RepositoryView(evidence.repository, evidence.options)
        seen.update(*(m.facts or () for m in view.models))
    backends = {f"backend:{name}" for name in ("", *normalize.DEFAULT_FILENAME)}
    assert {f for f in seen if not f.startswith("backend:")} <= set(MODEL_FACTS)
    declared = {fact for r in DECLARED for fact in r.when}
    assert {f for f in declared if f.startswith("backend:")} <= backends
    unmet = {f for f in declared if not f.startswith("backend:")} - seen
    assert not unmet, f"never met in a rule's fail fixture: {sorted(unmet)}"


def test_an_unknown_fact_is_refused_at_registration() -> None:
    def check(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
        """What it checks: x. Why it matters: x. Example: x. Fix: x."""
        return iter(())

    with pytest.raises(ValueError, match="when="):
        rule("TD999", "no-such-rule", "info", "t", when=("ensembel",))(check)


def test_the_engine_calls_a_rule_only_where_it_applies() -> None:
    """A rule declared for ensembles is called on the demo's ensembles alone, yet counted as
    applied like any other."""
    called: list[str] = []

    def check(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
        called.append(model.name)
        return iter(())

    probe = Rule("TD998", "probe", all_rules()[0].severity, "probe", "model", ("config",),
                 check, when=frozenset({"ensemble"}))
    evidence = _evidence(ROOT / "fixtures" / "demo-repository")
    result = run(evidence, [probe])
    assert evidence.repository is not None
    view = RepositoryView(evidence.repository, evidence.options)
    ensembles = [m.name for m in view.models
                 if not m.missing(probe.needs) and m.effective.platform == "ensemble"]
    assert ensembles and called == ensembles
    assert result.applied == ["TD998"]
