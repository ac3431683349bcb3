"""Judge generated repositories by the real server and by ``triton-doctor check``; count.

Repositories are judged in batches: one explicit-mode server serves the union of a batch's
repositories (their model names never clash) and is stopped after it, which bounds the Python
stub processes alive at once. Meanwhile ``check`` runs over each repository on its own.

Per repository:

* the server's verdict: refused if it refused any of the repository's models (every model
  is loaded; an ensemble's load also loads its steps);
* check's verdict: refused if it reports an error finding;
* exact reason, where both refuse: every refused model's reason is quoted by one of the
  repository's error findings (``agreeing``), except an ensemble's that only says which of
  its steps the server refused, when those steps' reasons are quoted;
* a false error: check errs where the server loads everything; a miss: the reverse; a
  model-level false error: check errs on a model the server loaded READY, whatever the rest;
* a disagreement of its own: the server gave no verdict (unjudged), check gave no report
  (a crash, a timeout, no JSON), or one of check's rules crashed. Every repository counts in
  the verdict agreement's denominator, so none of these can raise it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.differential.fuzz_generate import GeneratedRepository
from tests.differential.oracle import (
    EXPLICIT_MODE,
    SERVER_TARGET,
    DoctorRun,
    ExplicitModeResult,
    PendingDoctor,
    Refusal,
    TritonServer,
    agreeing,
    load_all,
    write_repository,
)

__all__ = [
    "ACCEPTANCE",
    "SERVER_OPTIONS",
    "Figures",
    "Judgement",
    "as_json",
    "figures",
    "judge",
    "report",
]


SERVER_OPTIONS = (*EXPLICIT_MODE, "--backend-config=python,stub-timeout-seconds=120")
"""The fuzzer's server: explicit mode, and 120 s for a stub to start (30 s by default), so a
slow machine starting a batch's stubs at once gives no refusal of its own."""

LOAD_TIMEOUT = 150.0
"""Longer than a stub may take to start: a slow load is waited for, not left unjudged."""

StartServer = Callable[[Path], TritonServer]
"""Starts a server with SERVER_OPTIONS (waiting for /v2/health/live) on a path."""


@dataclass
class Judgement:
    """What the server and check said about one generated repository."""

    index: int
    prefix: str
    mutations: list[str]
    server: dict[str, str]
    """Each model's outcome: ``READY``, or the server's reason for refusing it."""
    errors: list[dict[str, Any]]
    """check's error findings (rule, model, message, triton_message)."""
    server_refused: bool
    doctor_refused: bool
    exact: bool | None = None
    """Where both refuse: every refused model's reason is quoted by an error finding."""
    unjudged: str = ""
    """Why the server gave no verdict (no answer, a crash): never counted as agreement."""
    check_failed: str = ""
    """Why check gave no report (a crash, a timeout, no JSON): a disagreement of its own."""
    rule_crashes: list[str] = field(default_factory=list)
    """The rules that crashed in check (skips marked ``internal``): each one a disagreement."""
    doctor_stderr: str = ""

    @property
    def false_error_models(self) -> list[str]:
        """Models the server loaded READY that check reports an error on, even where the
        server refused another model of the repository (hidden by the repository verdict)."""
        erring = {finding.get("model") for finding in self.errors}
        return [model for model, said in self.server.items() if said == "READY" and model in erring]

    @property
    def verdict_agrees(self) -> bool:
        answered = not (self.unjudged or self.check_failed or self.rule_crashes)
        return answered and self.server_refused == self.doctor_refused

    @property
    def kind(self) -> str:
        if self.unjudged:
            return "unjudged"
        if self.check_failed:
            return "check-failed"
        if self.server_refused != self.doctor_refused:
            return "false-error" if self.doctor_refused else "miss"
        if self.false_error_models:
            return "model-false-error"
        if self.rule_crashes:
            return "rule-crashed"
        return "agree" if not self.server_refused or self.exact else "other-words"


def _local_paths(text: str, batch: Path, repositories: Path, prefix: str) -> str:
    """The paths of ``prefix``'s models in the batch directory as in its own repository (where
    check saw them); every model name starts with its repository's prefix, then ``_``."""
    return text.replace(f"{batch}/{prefix}_", f"{repositories}/{prefix}/{prefix}_")


def _summary(finding: dict[str, Any]) -> dict[str, Any]:
    keys = ("rule", "model", "message", "triton_message")
    return {key: finding.get(key) for key in keys}


def _judge_one(
    repository: GeneratedRepository,
    outcome: ExplicitModeResult,
    doctor: DoctorRun,
    batch: Path,
    repositories: Path,
    crashed: str,
) -> Judgement:
    server: dict[str, str] = {}
    unjudged = crashed
    for model in repository.models:
        load = outcome.loads[model]
        if load.ok:
            server[model] = "READY"
        elif load.status == 0:
            unjudged = unjudged or f"no answer loading {model}: {load.error}"
        else:
            said = outcome.refusals.get(model)
            reason = said.text if said is not None else f"(no reason found) {load.error}"
            server[model] = _local_paths(reason, batch, repositories, repository.prefix)
    findings, crashes, check_failed = [], [], ""
    try:
        findings, crashes = doctor.findings(), doctor.crashed_rules()
    except AssertionError as failure:
        check_failed = str(failure)
    if doctor.returncode != 0 and not check_failed:  # it runs with --exit-zero
        check_failed = f"check exited {doctor.returncode}"
    errors = [f for f in findings if f.get("severity") == "error"]
    refused = {
        m: outcome.refusals.get(m) for m in repository.models if server.get(m, "READY") != "READY"
    }
    judgement = Judgement(
        repository.index,
        repository.prefix,
        list(repository.mutations),
        server,
        [_summary(f) for f in errors],
        server_refused=bool(refused),
        doctor_refused=bool(errors),
        unjudged=unjudged,
        check_failed=check_failed,
        rule_crashes=crashes,
        doctor_stderr=doctor.stderr[-2000:] if check_failed or crashes else "",
    )
    if refused and errors:
        quoted = {
            model
            for model, said in refused.items()
            if said is not None
            and agreeing(errors, _localised(said, batch, repositories, repository.prefix))
        }
        judgement.exact = all(
            model in quoted or _refused_for(said, quoted) for model, said in refused.items()
        )
    return judgement


# An ensemble refused because one of its steps was (core's model_repository_manager.cc).
_DEPENDENCY = re.compile(
    r"contains models that are not available or ambiguous: (?P<list>.+)"
    r"|depends on '(?P<one>[^']+)' which has no loaded version"
)


def _refused_for(said: Refusal | None, quoted: set[str]) -> bool:
    """True when ``said`` only names steps refused for reasons check quotes.

    The server refuses an ensemble whose step it refused, naming the step; the reason that
    step has is the repository's reason, and check quotes it on the step."""
    if said is None or not (match := _DEPENDENCY.search(said.reason)):
        return False
    names = match["one"] or match["list"]
    return all(name.strip() in quoted for name in names.split(", "))


def _localised(said: Refusal, batch: Path, repositories: Path, prefix: str) -> Refusal:
    return Refusal(
        said.model,
        _local_paths(said.reason, batch, repositories, prefix),
        said.source,
        tuple(_local_paths(text, batch, repositories, prefix) for text in said.related),
    )


def judge(
    repositories: Sequence[GeneratedRepository],
    start: StartServer,
    workdir: Path,
    batch_size: int = 20,
    options: Sequence[str] = SERVER_TARGET,
    progress: Callable[[str], None] | None = None,
) -> list[Judgement]:
    """Judge every repository, ``batch_size`` of them per server."""
    judgements: list[Judgement] = []
    own = workdir / "repositories"
    for first in range(0, len(repositories), batch_size):
        batch = repositories[first : first + batch_size]
        batch_dir = workdir / f"batch{first // batch_size:03d}"
        shutil.rmtree(batch_dir, ignore_errors=True)
        for repository in batch:
            write_repository(batch_dir, [repository])
            write_repository(own / repository.prefix, [repository])
        judgements += _judge_batch(batch, start, batch_dir, own, options)
        if progress is not None:
            done = judgements[-len(batch) :]
            agree = sum(j.verdict_agrees for j in done)
            progress(f"{len(judgements)}/{len(repositories)} judged ({agree}/{len(done)} agree)")
    return judgements


def _judge_batch(
    batch: Sequence[GeneratedRepository],
    start: StartServer,
    batch_dir: Path,
    own: Path,
    options: Sequence[str],
) -> list[Judgement]:
    def check(repository: GeneratedRepository) -> DoctorRun:
        return PendingDoctor(own / repository.prefix, *options).result()

    with ThreadPoolExecutor(max_workers=2) as pool:
        doctors = [pool.submit(check, r) for r in batch]
        server = start(batch_dir)
        hung = True
        try:
            models = [m for r in batch for m in r.models]
            outcome = load_all(server, models, workers=4, timeout=LOAD_TIMEOUT)
            hung = any(load.status == 0 for load in outcome.loads.values())
            code = server.returncode()
            crashed = "" if code is None else f"the server exited ({code}) during the batch"
        finally:
            # A graceful exit removes the Python backend's /tmp directory; a load that never
            # answered would keep it from ending.
            server.stop(grace=1.0 if hung else 30.0)
        runs = [d.result() for d in doctors]
    judged = zip(batch, runs, strict=True)
    return [_judge_one(r, outcome, run, server.repository, own, crashed) for r, run in judged]


@dataclass
class Figures:
    repositories: int
    judged: int
    """Repositories both the server and check gave a verdict on."""
    server_refused: int
    verdict_agree: int
    both_refused: int
    exact_agree: int
    false_errors: int
    model_false_errors: int
    """Models the server loaded READY that check errs on, in any repository."""
    misses: int
    unjudged: int
    check_failed: int
    rule_crashed: int
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def verdict_rate(self) -> float:
        """Over every repository: one without a verdict from both sides is a disagreement."""
        return self.verdict_agree / self.repositories if self.repositories else 0.0

    @property
    def exact_rate(self) -> float:
        return self.exact_agree / self.both_refused if self.both_refused else 0.0

    @property
    def met(self) -> bool:
        """The acceptance of issue 12 (ACCEPTANCE), with nothing left unjudged or crashed."""
        failures = self.false_errors + self.model_false_errors + self.unjudged
        failures += self.check_failed + self.rule_crashed
        return self.verdict_rate >= 0.99 and self.exact_rate >= 0.95 and failures == 0


ACCEPTANCE = (
    "verdict >= 99 % of all, exact >= 95 %, 0 false errors (repository or model), "
    "0 unjudged, 0 check failures, 0 rule crashes"
)


def figures(judgements: Iterable[Judgement]) -> Figures:
    listed = list(judgements)
    judged = [j for j in listed if not (j.unjudged or j.check_failed)]
    both = [j for j in judged if j.server_refused and j.doctor_refused]
    kinds: dict[str, int] = {}
    for j in listed:
        kinds[j.kind] = kinds.get(j.kind, 0) + 1
    return Figures(
        repositories=len(listed),
        judged=len(judged),
        server_refused=sum(j.server_refused for j in judged),
        verdict_agree=sum(j.verdict_agrees for j in listed),
        both_refused=len(both),
        exact_agree=sum(bool(j.exact) for j in both),
        false_errors=sum(j.doctor_refused and not j.server_refused for j in judged),
        model_false_errors=sum(len(j.false_error_models) for j in judged),
        misses=sum(j.server_refused and not j.doctor_refused for j in judged),
        unjudged=sum(bool(j.unjudged) for j in listed),
        check_failed=sum(bool(j.check_failed) for j in listed),
        rule_crashed=sum(bool(j.rule_crashes) for j in judged),
        by_kind=kinds,
    )


def _describe(j: Judgement) -> list[str]:
    lines = [f"[{j.kind}] #{j.index} {j.prefix}"]
    lines += [f"  mutation: {m}" for m in j.mutations] or ["  mutation: (none)"]
    for model, said in j.server.items():
        lines.append(f"  server {model}: {said.strip()[:600]}")
    for finding in j.errors:
        quoted = finding.get("triton_message") or "-"
        lines.append(f"  check {finding['rule']} {finding['model']}: {finding['message']}")
        lines.append(f"    triton_message: {quoted[:600]}")
    if not j.errors:
        lines.append("  check: no error")
    if j.unjudged:
        lines.append(f"  unjudged: {j.unjudged[:600]}")
    if j.check_failed:
        lines.append(f"  check failed: {j.check_failed[:600]}")
    lines += [f"  rule crashed: {crash[:600]}" for crash in j.rule_crashes]
    lines += [f"  false error on READY model: {model}" for model in j.false_error_models]
    if j.doctor_stderr:
        lines.append(f"  check stderr: {j.doctor_stderr[-600:]}")
    return lines


def report(judgements: Sequence[Judgement], seed: int, options: Sequence[str]) -> str:
    """The figures, then every disagreement with both texts."""
    f = figures(judgements)
    lines = [
        f"differential fuzz: seed {seed}, {f.repositories} repositories, check {' '.join(options)}",
        f"server refused {f.server_refused} of {f.judged} judged by both",
        f"verdict agreement:      {f.verdict_agree}/{f.repositories}"
        f" = {100 * f.verdict_rate:.1f} % (of all)",
        f"exact-reason agreement: {f.exact_agree}/{f.both_refused} = {100 * f.exact_rate:.1f} %",
        f"false errors:           {f.false_errors}",
        f"model false errors:     {f.model_false_errors}",
        f"misses:                 {f.misses}",
        f"unjudged (server):      {f.unjudged}",
        f"check failures:         {f.check_failed}",
        f"rule crashes:           {f.rule_crashed}",
        f"by kind: {json.dumps(f.by_kind, sort_keys=True)}",
    ]
    for j in judgements:
        if j.kind != "agree":
            lines.append("")
            lines += _describe(j)
    return "\n".join(lines) + "\n"


def as_json(judgements: Sequence[Judgement], seed: int, options: Sequence[str]) -> str:
    f = figures(judgements)
    document = {
        "seed": seed,
        "options": list(options),
        "figures": {
            **asdict(f),
            "verdict_rate": f.verdict_rate,
            "exact_rate": f.exact_rate,
            "met": f.met,
        },
        "repositories": [
            {**asdict(j), "kind": j.kind, "false_error_models": j.false_error_models}
            for j in judgements
        ],
    }
    return json.dumps(document, indent=2)
