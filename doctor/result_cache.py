"""A check's judged Result taken from the cache when nothing judging reads has changed.

Judging is a pure function of the Evidence, the rules and the waivers, so the Result of a
repository whose every model is unchanged (its fingerprint, checks/model_fingerprint.py), with
the same options, rules and waivers, is the Result recorded before. It is recorded only when it
survives the JSON round trip unchanged: a report from the cache is the report a fresh run
prints, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from triton_doctor.cache import digest, tool_stamp
from triton_doctor.catalogue import STATIC, all_rules, rules_of
from triton_doctor.evidence import Evidence, EvidenceError, from_jsonable, to_jsonable
from triton_doctor.registry import Rule
from triton_doctor.result import Result
from triton_doctor.settings import ModelWaiver

#: The parts of Evidence read from a live source: judged anew on every run.
LIVE_PARTS = ("server", "metrics", "gpu", "container", "host", "log", "fleet")


def judged(evidence: Evidence, rules: Sequence[Rule] | None, waived: Sequence[ModelWaiver],
           waiver_source: str, jobs: int | None = 1) -> Result:
    """``engine.run`` over these arguments (``rules`` None: every rule), or the Result the
    cache recorded for them (``jobs`` changes how fast a Result is judged, never what it is).
    Every rule is named by one key: the cache stamps the tool's build, and with it the rules."""
    repository = evidence.repository
    cache = repository.cache if repository is not None else None
    if (repository is None or cache is None or repository.fingerprint is None
            or evidence.unavailable or any(getattr(evidence, part) for part in LIVE_PARTS)):
        return _run(evidence, _or_all(rules, evidence), waived, waiver_source, jobs)
    chosen = ["every rule"] if rules is None else [candidate.id for candidate in rules]
    key = digest(repository.fingerprint, repository.path,
                 json.dumps(to_jsonable(evidence.options), sort_keys=True),
                 *chosen, repr(list(waived)), waiver_source)
    recorded = cache.result(key)
    if recorded is not None:
        try:
            result: Result = from_jsonable(Result, recorded, "cache")
        except EvidenceError:
            result = Result()
        if _consistent(result, rules):
            return result
    result = _run(evidence, _or_all(rules, evidence), waived, waiver_source, jobs,
                  cache.save_models)
    data = to_jsonable(result)
    if _survives(result, data):
        cache.keep_result(key, data)
    return result


def prepare(rules: Sequence[Rule] | None, cached: bool) -> None:
    """Import what judging needs (the engine and, unless ``rules`` are chosen, the static
    rules): called while other processes read the models, as imports here would cost the run
    its time after reading. A ``cached`` run first stamps the tool's sources, before it imports
    them: an edit in between then makes a miss, never an entry judged by the code before it."""
    if cached:
        tool_stamp()
    from triton_doctor import engine  # noqa: F401  (imported for what judging takes from it)

    if rules is None:
        rules_of(STATIC)


def _run(evidence: Evidence, rules: Sequence[Rule], waived: Sequence[ModelWaiver],
         waiver_source: str, jobs: int | None,
         meanwhile: Callable[[], object] | None = None) -> Result:
    """``engine.run`` (with ``meanwhile``: here, the cache's models written while the models
    are judged), imported when a Result must be judged: one the cache answers loads neither
    the engine nor the views and schema it judges with."""
    from triton_doctor.engine import run

    return run(evidence, rules, waived, waiver_source, jobs, meanwhile)


def _consistent(result: Result, rules: Sequence[Rule] | None) -> bool:
    """Whether a Result from the cache names only the rules it ran, and ran the rules chosen:
    reports look rules up by what findings name (an entry written by another hand is a
    miss)."""
    applied = set(result.applied)
    named = {f.rule for f in result.findings} | {s.finding.rule for s in result.suppressed}
    named |= {s.rule for s in result.skipped}
    chosen = rules is None or result.applied == [candidate.id for candidate in rules]
    return bool(applied) and named <= applied and chosen


def _or_all(rules: Sequence[Rule] | None, evidence: Evidence) -> Sequence[Rule]:
    """``rules``, else every rule; only the static ones where the Evidence has no live part,
    nor a live part that could not be read: the engine applies no other there, so the Result
    is the same without importing them."""
    if rules is not None:
        return rules
    if any(getattr(evidence, part) is not None or part in evidence.unavailable
           for part in LIVE_PARTS):
        return all_rules()
    return rules_of(STATIC)


def _survives(result: Result, data: object) -> bool:
    """Whether ``result`` comes back equal from its JSON (a tuple or NaN in a finding's
    evidence would not)."""
    try:
        text = json.dumps(data)
        return bool(from_jsonable(Result, json.loads(text), "cache") == result)
    except (ValueError, TypeError, EvidenceError):
        return False
