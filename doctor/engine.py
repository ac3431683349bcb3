"""The engine: run the selected rules over the Evidence and collect findings and skips."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from triton_doctor.evidence import Evidence
from triton_doctor.findings import Finding, Hit, Location, Skipped
from triton_doctor.parallel import map_apart, processes
from triton_doctor.records import replace
from triton_doctor.registry import Rule
from triton_doctor.result import Result, Suppressed
from triton_doctor.settings import ModelWaiver
from triton_doctor.suppress import waivers
from triton_doctor.triton.repository_model import ModelView, RepositoryView

if TYPE_CHECKING:  # the live views, imported where a live run needs them
    from triton_doctor.triton.server_model import LiveView

#: The Evidence part a rule's need is read from, where the need is a view of one.
_PART_OF = {"server_state": "server"}


def run(
    evidence: Evidence,
    rules: Sequence[Rule],
    waived: Sequence[ModelWaiver] = (),
    waiver_source: str = "settings",
    jobs: int | None = 1,
    meanwhile: Callable[[], object] | None = None,
) -> Result:
    """Judge the Evidence with ``rules``; ``waived`` are the settings file's waivers; a
    repository's models are judged by ``jobs`` processes (None: ``parallel.processes``), while
    this one judges the repository rules and does ``meanwhile`` (the caller's)."""
    live = [r for r in rules if r.scope == "live"]
    log = [r for r in rules if r.scope == "log"]
    fleet = [r for r in rules if r.scope == "fleet"]
    static = [r for r in rules if r.scope not in ("live", "log", "fleet")]
    asked_fleet = evidence.fleet is not None or "fleet" in evidence.unavailable
    asked_live = evidence.server is not None or "server" in evidence.unavailable or asked_fleet
    asked_log = evidence.log is not None or "log" in evidence.unavailable
    applied = [*static * (evidence.repository is not None), *live * asked_live,
               *log * asked_log, *fleet * asked_fleet]
    result = Result(applied=[r.id for r in applied])
    repository = None
    if evidence.repository is not None:
        repository = RepositoryView(evidence.repository, evidence.options)
        _run_static(result, static, repository, jobs, meanwhile)
    if asked_fleet:
        _run_fleet(result, live, fleet, evidence, list(result.findings))
    elif asked_live or asked_log:
        from triton_doctor.triton.server_model import LiveView

        _run_live(result, live * asked_live + log * asked_log, LiveView(evidence),
                  list(result.findings))
    result.findings.sort(key=lambda f: (f.model or "", -f.severity, f.rule, f.instance or "",
                                        f.location.line or 0))
    if evidence.repository is not None:  # which the fingerprints leave out of the messages
        root = evidence.repository.path
        result.findings = [replace(f, root=root) for f in result.findings]
    if repository is not None:
        _apply_waivers(result, repository, waived, waiver_source)
    return result


def _run_live(
    result: Result, rules: Sequence[Rule], view: LiveView, static: list[Finding]
) -> None:
    """Live rules, each once; a rule whose parts are missing is skipped with the reason. A rule
    that needs "static_findings" gets the static rules' findings after the view."""
    for candidate in rules:
        parts = [part for part in candidate.needs if part != "static_findings"]
        missing = [part for part in parts if getattr(view, part) is None]
        if missing:
            unavailable = view.evidence.unavailable
            why = "; ".join(
                f"{part}: "
                + (unavailable.get(part) or unavailable.get(_PART_OF.get(part, part))
                   or "not collected")
                for part in missing
            )
            result.skipped.append(Skipped(candidate.id, None, why))
            continue
        inputs = (static,) if "static_findings" in candidate.needs else ()
        _judge(result, candidate, None, view, *inputs)


def _run_fleet(result: Result, live: Sequence[Rule], fleet: Sequence[Rule], evidence: Evidence,
               static: list[Finding]) -> None:
    """The fleet rules once, and the live rules on each replica, their findings naming it. A
    rule skipped for the same reason on every replica is said once; the live rules that need
    no part (TD603: Prometheus out of reach) judge the run itself."""
    from triton_doctor.triton.fleet_model import FleetView
    from triton_doctor.triton.server_model import LiveView

    for candidate in live:
        if not candidate.needs:
            _judge(result, candidate, None, LiveView(evidence))
    if evidence.fleet is None:
        why = f"fleet: {evidence.unavailable.get('fleet', 'not collected')}"
        result.skipped += [Skipped(candidate.id, None, why) for candidate in fleet]
        return
    view = FleetView(evidence.fleet, evidence.options)
    for candidate in fleet:
        _judge(result, candidate, None, view)
    per_replica = [candidate for candidate in live if candidate.needs]
    skipped: dict[tuple[str, str | None, str], Skipped] = {}
    for replica in evidence.fleet.replicas:
        judged = Result()
        _run_live(judged, per_replica, view.replica_view(replica), static)
        result.findings += [replace(f, instance=replica.instance) for f in judged.findings]
        for skip in judged.skipped:
            skipped.setdefault((skip.rule, skip.model, skip.reason), skip)
    result.skipped += skipped.values()


def _run_static(result: Result, rules: Sequence[Rule], repository: RepositoryView,
                jobs: int | None, meanwhile: Callable[[], object] | None) -> None:
    """Repository rules once; model rules on each model, skipped (with the reason) where what
    they need is missing, and not called where their ``when`` says they cannot apply. The
    models are judged by ``jobs`` processes (``parallel.processes``), the repository rules by
    this one meanwhile; what each gives is put back in the order one process gives it: rule by
    rule, model by model."""
    models = repository.models
    result.models = len(models)
    if repository.options.configs_only:
        result.without_model_files = sum(m.lacks_model_files for m in models)
    model_rules = [candidate for candidate in rules if candidate.scope != "repository"]
    kinds: dict[tuple[tuple[str, ...], frozenset[str]], list[int]] = {}
    for turn, candidate in enumerate(model_rules):
        kinds.setdefault((candidate.needs, candidate.when), []).append(turn)
    whole: dict[int, tuple[list[Skipped], list[Finding]]] = {}

    def judge_repository() -> None:  # in this process, while the others take models
        for place, candidate in enumerate(rules):
            if candidate.scope == "repository":
                whole[place] = _judged(candidate, None, repository)
        if meanwhile is not None:
            meanwhile()

    judged = map_apart(functools.partial(_judge_model, model_rules, kinds, repository),
                       range(len(models)), processes(jobs, len(models)),
                       meanwhile=judge_repository)
    by_rule: dict[int, list[tuple[list[Skipped], list[Finding]]]] = {}
    for of_model in judged:  # models in order, so each rule's list is too
        for turn, given in of_model.items():
            by_rule.setdefault(turn, []).append(given)
    turns = iter(range(len(model_rules)))
    for place in range(len(rules)):
        for skipped, found in [whole[place]] if place in whole else by_rule.get(next(turns), []):
            result.skipped += skipped
            result.findings += found


#: What model rules gave one model: by the rule's place in the list, its skips and findings.
ModelJudged = dict[int, tuple[list[Skipped], list[Finding]]]


def _judge_model(rules: Sequence[Rule],
                 kinds: dict[tuple[tuple[str, ...], frozenset[str]], list[int]],
                 repository: RepositoryView, index: int) -> ModelJudged:
    """Every model rule on the model at ``index``. ``kinds`` groups the rules (their places in
    ``rules``) by what they need and where they apply: what the model lacks, and which
    declarations it meets, is decided once per kind, not per rule."""
    model = repository.models[index]
    missing: dict[tuple[str, ...], str | None] = {}
    judged: ModelJudged = {}
    for (needs, when), turns in kinds.items():
        if needs not in missing:
            missing[needs] = model.missing(needs)
        why = missing[needs]
        if why:
            for turn in turns:
                judged[turn] = ([Skipped(rules[turn].id, model.name, why)], [])
        elif model.may_apply(when):
            for turn in turns:  # _judged, inlined: this loop runs 40 times a model
                candidate = rules[turn]
                try:
                    hits = list(candidate.check(model, repository))
                except Exception as error:  # a defect in one rule must not end the check
                    judged[turn] = _defect(candidate, model, error)
                    continue
                if hits:
                    judged[turn] = ([], _findings(candidate, model, hits))
    return judged


def _judge(result: Result, rule: Rule, model: ModelView | None, *args: object) -> None:
    """Run one rule on ``args`` into ``result``."""
    skipped, found = _judged(rule, model, *args)
    result.skipped += skipped
    result.findings += found


def _judged(rule: Rule, model: ModelView | None,
            *args: object) -> tuple[list[Skipped], list[Finding]]:
    """What one rule gives on ``args``; a defect in a rule is reported as a skip, not a
    crash."""
    try:
        hits = list(rule.check(*args))
    except Exception as error:  # any defect in one rule must not end the whole check
        return _defect(rule, model, error)
    return [], _findings(rule, model, hits) if hits else []


def _defect(rule: Rule, model: ModelView | None,
            error: Exception) -> tuple[list[Skipped], list[Finding]]:
    """A rule that raised, reported as a skip that says so."""
    reason = f"internal error in the rule ({type(error).__name__}: {error}); please report it"
    return [Skipped(rule.id, model.name if model else None, reason, True)], []


def _apply_waivers(
    result: Result, repository: RepositoryView, settings: Sequence[ModelWaiver], source: str
) -> None:
    """Move waived findings to ``result.suppressed``: waivers written inline in the model's
    config.pbtxt, then those of the settings file."""
    named = {finding.model for finding in result.findings}
    inline = {m.name: waivers(m.dir.config.text or "") for m in repository.models
              if m.name in named}
    kept = []
    for finding in result.findings:
        reason = next(
            (
                f"{w.reason or 'no reason given'} (config.pbtxt:{w.line})"
                for w in inline.get(finding.model or "", [])
                if w.covers(finding.rule, finding.name)
            ),
            None,
        ) or next(
            (
                f"{w.reason} ({source})"
                for w in settings
                if w.covers(finding.rule, finding.name, finding.model)
            ),
            None,
        )
        if reason is None:
            kept.append(finding)
        else:
            result.suppressed.append(Suppressed(finding, reason))
    result.findings = kept


def _findings(rule: Rule, model: ModelView | None, hits: Iterable[Hit]) -> list[Finding]:
    found = []
    for hit in hits:
        path = hit.path or (model.config_path if model else None)
        line = hit.line
        if line is None and hit.field and model is not None and path == model.config_path:
            line = model.locate(hit.field)
        found.append(
            Finding(
                rule=rule.id,
                name=rule.name,
                severity=hit.severity or rule.severity,
                title=rule.title,
                model=model.name if model else hit.model,
                version=hit.version,
                location=Location(path=path, line=line, field=hit.field),
                message=hit.message,
                triton_message=hit.triton_message,
                fix=hit.fix,
                evidence=dict(hit.evidence),
                instance=hit.instance,
            )
        )
    return found
