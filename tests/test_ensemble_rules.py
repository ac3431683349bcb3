"""Ensemble rules (TD41x) on repositories the fixtures cannot hold: ones the server refuses for
another reason first, where the rule must neither crash nor add its own words."""

from __future__ import annotations

from pathlib import Path

from triton_doctor.catalogue import select_rules
from triton_doctor.checks.repository import collect_repository
from triton_doctor.engine import run
from triton_doctor.evidence import CheckOptions, Evidence
from triton_doctor.findings import Finding

STEP = """\
name: "{name}"
backend: "python"
{extra}
input [
  {{ name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "OTHER" data_type: TYPE_FP32 dims: [ 4 ] optional: true }}
]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }} ]
"""
PYTHON_MODEL = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


def _step(repo: Path, name: str, extra: str = "", versions: tuple[str, ...] = ("1",)) -> None:
    (repo / name).mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(STEP.format(name=name, extra=extra))
    for version in versions:
        (repo / name / version).mkdir()
        (repo / name / version / "model.py").write_text(PYTHON_MODEL)


def _ensemble(repo: Path, steps: str) -> None:
    (repo / "ens" / "1").mkdir(parents=True)
    (repo / "ens" / "config.pbtxt").write_text(
        'name: "ens"\nplatform: "ensemble"\n'
        'input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        f"ensemble_scheduling {{ step [ {steps} ] }}\n"
    )


def _findings(repo: Path) -> list[Finding]:
    evidence = Evidence(repository=collect_repository(repo), options=CheckOptions())
    result = run(evidence, select_rules([], []))
    assert not [s for s in result.skipped if s.internal], result.skipped
    return result.findings


def test_td417_passes_over_a_step_without_outputs(tmp_path: Path) -> None:
    """A step that writes nothing is no node of core's graph, so the decoupled walk never
    meets it: the server names the missing output_map (TD401), and TD417 must not crash."""
    _step(tmp_path, "gen", "model_transaction_policy { decoupled: true }")
    _step(tmp_path, "sink")
    _ensemble(tmp_path, (
        '{ model_name: "gen" model_version: -1 input_map { key: "IN" value: "X" } '
        'output_map { key: "OUT" value: "Y" } }, '
        '{ model_name: "sink" model_version: -1 input_map { key: "IN" value: "X" } '
        'input_map { key: "OTHER" value: "Y" } }'
    ))
    rules = {f.rule for f in _findings(tmp_path)}
    assert "TD401" in rules
    assert "TD417" not in rules


def test_td413_leaves_a_step_model_without_versions_to_td104(tmp_path: Path) -> None:
    """With no version to load, the step model itself fails: the server says the ensemble
    depends on a model "which is not valid", not that a required version is not loaded."""
    _step(tmp_path, "pre", versions=())
    _ensemble(tmp_path, (
        '{ model_name: "pre" model_version: 2 input_map { key: "IN" value: "X" } '
        'output_map { key: "OUT" value: "Y" } }'
    ))
    rules = {f.rule for f in _findings(tmp_path)}
    assert "TD104" in rules
    assert "TD413" not in rules


def test_td412_trusts_a_written_max_batch_size_of_a_backend_it_does_not_model(
        tmp_path: Path) -> None:
    """A backend's auto-complete fills only a max_batch_size of 0: the identity backend's
    written 2 is what the server compares with the ensemble's 3 (Triton's qa case)."""
    (tmp_path / "small" / "1").mkdir(parents=True)
    (tmp_path / "small" / "config.pbtxt").write_text(
        'name: "small"\nbackend: "identity"\nmax_batch_size: 2\n'
        'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]\n')
    _ensemble(tmp_path, (
        '{ model_name: "small" model_version: -1 input_map { key: "IN" value: "X" } '
        'output_map { key: "OUT" value: "Y" } }'
    ))
    config = tmp_path / "ens" / "config.pbtxt"
    config.write_text(config.read_text().replace('platform: "ensemble"\n',
                                                 'platform: "ensemble"\nmax_batch_size: 3\n'))
    quoted = [f.triton_message for f in _findings(tmp_path) if f.rule == "TD412"]
    assert quoted == ["ensemble ens allows maximum batch size 3, but it contains model small "
                      "which only allows maximum batch size to be 2"]
