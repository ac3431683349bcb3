"""The differential fuzzer's CI subset: generated repositories, the real server, check.

A bounded, seeded subset of what ``bench/differential_fuzz.py`` runs in full: each
repository is its own test, which passes when check and the server give the same verdict
and, where both refuse, check quotes the server's reason. A known disagreement is a strict
xfail giving why (as DISAGREEMENTS in cases.py), so a fix shows up as XPASS.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.differential.fuzz_generate import GeneratedRepository, generate
from tests.differential.fuzz_run import SERVER_OPTIONS, Judgement, judge
from tests.differential.oracle import TritonServer, strict_xfails

SEED = 12
COUNT = 40

REPOSITORIES = [generate(SEED, index) for index in range(COUNT)]

KNOWN: dict[str, str] = {}
"""Repository (its prefix, the test's id) -> why check and the server disagree on it (strict
xfail)."""


@pytest.fixture(scope="module")
def judgements(
    triton_server: Callable[..., TritonServer], tmp_path_factory: pytest.TempPathFactory
) -> dict[int, Judgement]:
    def start(repository: Path) -> TritonServer:
        return triton_server(repository, *SERVER_OPTIONS, wait_for="/v2/health/live")

    workdir = tmp_path_factory.mktemp("fuzz")
    judged = judge(REPOSITORIES, start, workdir, batch_size=20)  # as the full run
    return {j.index: j for j in judged}


def _params() -> list[object]:
    return strict_xfails(REPOSITORIES, lambda repository: repository.prefix, KNOWN)


@pytest.mark.parametrize("repository", _params())
def test_check_agrees_with_the_server(
    judgements: dict[int, Judgement], repository: GeneratedRepository
) -> None:
    judgement = judgements[repository.index]
    said = "\n".join(f"  {model}: {text}" for model, text in judgement.server.items())
    found = "\n".join(
        f"  {f['rule']} {f['model']}: {f['triton_message'] or f['message']}"
        for f in judgement.errors
    )
    context = f"mutations: {judgement.mutations}\nserver:\n{said}\ncheck errors:\n{found}"
    assert not judgement.unjudged, f"the server gave no verdict: {judgement.unjudged}\n{context}"
    assert not judgement.check_failed, f"check gave no report: {judgement.check_failed}"
    assert not judgement.rule_crashes, f"rules crashed: {judgement.rule_crashes}\n{context}"
    assert not (judgement.doctor_refused and not judgement.server_refused), (
        f"false error: check errs on a repository the server loads\n{context}"
    )
    assert not judgement.false_error_models, (
        f"false error: check errs on {judgement.false_error_models}, loaded READY\n{context}"
    )
    assert judgement.doctor_refused == judgement.server_refused, f"missed refusal\n{context}"
    if judgement.server_refused:
        assert judgement.exact, f"check does not quote the server's reason\n{context}"
