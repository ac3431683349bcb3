"""TD505 on what its fixtures do not show: a model whose every version misses the library."""

from __future__ import annotations

from pathlib import Path

from triton_doctor.catalogue import select_rules
from triton_doctor.checks.repository import collect_repository
from triton_doctor.engine import run
from triton_doctor.evidence import CheckOptions, Evidence

PYTHON_MODEL = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


def test_td505_reports_a_model_once_whatever_its_versions(tmp_path: Path) -> None:
    """Every version fails alike (the real 2.51 server logs one line per version): one finding
    names the versions and quotes the first one's words, the image's backend directory last."""
    model = tmp_path / "rt"
    for version in ("1", "2"):
        (model / version).mkdir(parents=True)
        (model / version / "model.py").write_text(PYTHON_MODEL)
    (model / "config.pbtxt").write_text(
        'name: "rt"\nbackend: "python"\nruntime: "libtriton_custom.so"\n'
        "version_policy { all { } }\n"
        'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
    )
    evidence = Evidence(repository=collect_repository(tmp_path), options=CheckOptions())
    findings = run(evidence, select_rules(["TD505"], [])).findings
    assert len(findings) == 1
    assert "(1/, 2/)" in findings[0].message
    assert findings[0].triton_message == (
        "unable to find backend library 'libtriton_custom.so' for model 'rt', searched: "
        f"'{model}/1' '{model}' '/opt/tritonserver/backends/python' "
    )
