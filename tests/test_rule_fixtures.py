"""Every rule ships a failing and a passing fixture: ``fixtures/rules/<ID>/{fail,pass}/``.

The rule must fire on ``fail/`` and stay silent on ``pass/``, with all rules enabled so that
interactions between rules (one rule suppressing or shadowing another) show up here. An
optional ``args`` file holds extra ``triton-doctor check`` arguments for both runs.

A few failing repositories cannot live in git (symbolic link loops, unreadable directories,
binary or directory config.pbtxt): the rule's ``build.py`` adds those parts to a copy of the
committed ``fail/``, and the fixture's README.md says what is added.

A live rule's fixtures are snapshots (``snapshot.json``); a log rule's are ``server.log``, a
link to a real log in fixtures/logs (judged with ``check --log``).

Each ``fail/`` pins its rule's findings in ``findings.txt`` (see tests/pinned_findings.py).
"""

from __future__ import annotations

import functools
import importlib.util
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from triton_doctor import snapshot
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.collect import collect
from triton_doctor.cli import build_parser
from triton_doctor.engine import run
from triton_doctor.findings import Finding, Severity
from triton_doctor.invocation import Invocation
from triton_doctor.registry import Rule
from triton_doctor.result import Result

from tests.pinned_findings import NAME, assert_pinned, render

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
RULES = all_rules()


@functools.cache
def _builder(rule_id: str, kind: str) -> Callable[[Path], None] | None:
    """``build(repo)`` from fixtures/rules/<ID>/build.py, which adds to a copy of ``fail/`` what
    git cannot hold; None for a fixture committed whole. Our own test code, loaded by path."""
    path = FIXTURES / rule_id / "build.py"
    if kind != "fail" or not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"build_{rule_id}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build: Callable[[Path], None] = module.build
    return build


def _params() -> list[object]:
    return [pytest.param(r, id=r.id) for r in RULES]


def _location(rule_id: str, kind: str, tmp_path: Path) -> Path:
    """Where the fixture is judged: its committed directory, or the copy its build.py adds to."""
    return tmp_path / kind if _builder(rule_id, kind) else FIXTURES / rule_id / kind


def _repository(rule_id: str, kind: str, tmp_path: Path) -> Path:
    repo = _location(rule_id, kind, tmp_path)
    build = _builder(rule_id, kind)
    if build is not None:
        shutil.copytree(FIXTURES / rule_id / kind, repo, symlinks=True)
        build(repo)
    return repo


def _judge(rule_id: str, kind: str, tmp_path: Path) -> Result:
    """Every rule run on the fixture, with the fixture's args and no settings file (an empty
    one: none found above the fixture may apply). A live rule's fixture is a snapshot
    (``snapshot.json``, from fixtures/generate/live_snapshots.py)."""
    saved = FIXTURES / rule_id / kind / "snapshot.json"
    if saved.exists():
        return run(snapshot.read(str(saved)), RULES)
    no_settings = tmp_path / "no-settings.toml"
    no_settings.write_text("")
    log = FIXTURES / rule_id / kind / "server.log"
    if log.exists():  # a log rule's fixture: a link to a log in fixtures/logs
        argv = ["check", "--log", str(log), "--config", str(no_settings)]
        return run(collect(Invocation.from_args(build_parser().parse_args(argv))), RULES)
    args_file = FIXTURES / rule_id / "args"
    extra = shlex.split(args_file.read_text()) if args_file.exists() else []
    repo = _repository(rule_id, kind, tmp_path)
    argv = ["check", str(repo), "--config", str(no_settings), *extra]
    return run(collect(Invocation.from_args(build_parser().parse_args(argv))), RULES)


def _findings(rule_id: str, kind: str, tmp_path: Path) -> list[Finding]:
    """This rule's findings when every rule runs on the fixture; the rule must have judged
    it (a rule that raised or lacked its evidence is skipped, which is not silence)."""
    result = _judge(rule_id, kind, tmp_path)
    skipped = [s for s in result.skipped if s.rule == rule_id or s.internal]
    assert not skipped, "\n".join(f"{s.rule} {s.model}: {s.reason}" for s in skipped)
    return [f for f in result.findings if f.rule == rule_id]


@pytest.mark.parametrize("candidate", _params())
def test_rule_fires_on_fail_fixture(candidate: Rule, tmp_path: Path) -> None:
    """The rule fires on fail/, and quotes the server there iff it declares server_says (or
    relays the server's text, as TD601 does a load error); each quote holds a declared word."""
    findings = _findings(candidate.id, "fail", tmp_path)
    assert findings, f"{candidate.id} does not fire on fixtures/rules/{candidate.id}/fail"
    assert all(f.triton_message != "" for f in findings), "empty triton_message"
    quoted = [f.triton_message for f in findings if f.triton_message]
    assert bool(quoted) == bool(candidate.server_says or candidate.relays_server), (
        f"{candidate.id} {'quotes' if quoted else 'does not quote'} the server on fail/; "
        f"its server_says is {candidate.server_says}")
    if not candidate.relays_server:
        words = (*candidate.server_says, *candidate.log_says)
        assert all(any(f in text for f in words) for text in quoted), quoted


@pytest.mark.parametrize("candidate", _params())
def test_rule_silent_on_pass_fixture(candidate: Rule, tmp_path: Path) -> None:
    findings = _findings(candidate.id, "pass", tmp_path)
    assert not findings, "\n".join(f"{f.model}: {f.message}" for f in findings)


@pytest.mark.parametrize("candidate", _params())
def test_pass_fixture_is_clean_under_every_rule(candidate: Rule, tmp_path: Path) -> None:
    """A passing fixture is a correct repository: no rule may warn about it, which also keeps
    rules from flagging each other's good examples."""
    findings = [f for f in _judge(candidate.id, "pass", tmp_path).findings
                if f.severity >= Severity.WARNING]
    assert not findings, "\n".join(f"{f.rule} {f.model}: {f.message}" for f in findings)


@pytest.mark.parametrize("candidate", _params())
def test_fail_fixture_findings_are_pinned(candidate: Rule, tmp_path: Path) -> None:
    """What the rule says on fail/ (message, line, field, fix, the server's words) is what its
    findings.txt holds: firing with other words fails here."""
    findings = _findings(candidate.id, "fail", tmp_path)
    repository = _location(candidate.id, "fail", tmp_path)
    text = render(candidate.id, findings, repository)
    assert_pinned(FIXTURES / candidate.id / "fail" / NAME, text)


def test_every_rule_has_fixtures() -> None:
    """A new rule without fixtures, or fixtures of a renamed rule, fail here."""
    ids = {r.id for r in RULES}
    missing = [
        f"{rule_id}/{kind}"
        for rule_id in sorted(ids)
        for kind in ("fail", "pass")
        if not (FIXTURES / rule_id / kind).is_dir()
    ]
    orphans = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name not in ids)
    undocumented = sorted(
        p.parent.name for p in FIXTURES.glob("*/build.py") if not (p.parent / "README.md").is_file()
    )
    assert not missing, f"rules without fixture directories: {missing}"
    assert not orphans, f"fixtures for no registered rule: {orphans}"
    assert not undocumented, f"built fixtures without README.md: {undocumented}"
