"""Predicates several rules share, and the rules that used to decide them each their own way."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from triton_doctor.catalogue import select_rules
from triton_doctor.checks.repository import collect_repository
from triton_doctor.engine import run
from triton_doctor.evidence import CheckOptions, Evidence, TensorInfo, TorchScriptArg
from triton_doctor.findings import Finding
from triton_doctor.rules._model_io import compare_dims, takes_dict_input
from triton_doctor.triton.autocomplete.tensors import has_batch_axis, supports_batching
from triton_doctor.triton.repository_model import RepositoryView

#: data.pkl as torch writes it for a module of class ``__torch__.Net``.
NET_PICKLE = b"\x80\x02c__torch__\nNet\nq\x00)\x81}q\x01b."


def _findings(repo: Path) -> list[Finding]:
    evidence = Evidence(repository=collect_repository(repo), options=CheckOptions())
    result = run(evidence, select_rules([], []))
    assert not [s for s in result.skipped if s.internal], result.skipped
    return result.findings


def _torchscript_model(repo: Path, annotation: str, config: str) -> None:
    """A pytorch model whose forward() takes one argument ``x: <annotation>``."""
    code = (
        "class Net(Module):\n"
        "  __parameters__ = []\n"
        f"  def forward(self: __torch__.Net,\n    x: {annotation}) -> Tensor:\n"
        "    return x\n"
    )
    model = repo / "scorer"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(config)
    with zipfile.ZipFile(model / "1" / "model.pt", "w") as archive:
        archive.writestr("net/data.pkl", NET_PICKLE)
        archive.writestr("net/code/__torch__.py", code)
        archive.writestr("net/constants.pkl", b"\x80\x02).")
        archive.writestr("net/version", b"3\n")
        archive.writestr("net/byteorder", b"little")


TWO_INPUTS = """
name: "scorer"
backend: "pytorch"
max_batch_size: 0
input [
  { name: "query" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "document" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
"""


@pytest.mark.parametrize(("annotation", "expected"), [
    ("Dict[str, Tensor]", True),
    ("Dict[str,Tensor]", True),
    ("Dict[int, Tensor]", False),
    ("Dict[str, List[Tensor]]", False),
    ("Tensor", False),
    ("List[Tensor]", False),
])
def test_takes_dict_input(annotation: str, expected: bool) -> None:
    assert takes_dict_input([TorchScriptArg("x", annotation)]) is expected


def test_takes_dict_input_needs_a_single_argument() -> None:
    both = [TorchScriptArg("x", "Dict[str, Tensor]"), TorchScriptArg("y", "Tensor")]
    assert not takes_dict_input(both)
    assert not takes_dict_input([])


@pytest.mark.parametrize(("annotation", "dict_input"), [
    ("Dict[str, Tensor]", True),
    # TD311 once took any "Dict..." for dict input while TD303/TD307 did not.
    ("Dict[int, Tensor]", False),
])
def test_dict_input_rules_agree(tmp_path: Path, annotation: str, dict_input: bool) -> None:
    """TD303/TD307 (argument count and type) and TD311 (binding by config order) judge the
    same forward() alike: a Dict[str, Tensor] takes the inputs as keys, and anything else is
    held to the per-argument rules."""
    _torchscript_model(tmp_path, annotation, TWO_INPUTS)
    fired = {f.rule for f in _findings(tmp_path)} & {"TD303", "TD307", "TD311"}
    assert fired == (set() if dict_input else {"TD303", "TD307", "TD311"})


@pytest.mark.parametrize(("dims", "expected"), [
    ([-1, 3, 224, 224], True),
    ([-1], True),
    ([1, 3, 224, 224], False),
    ([8, -1], False),
    ([], False),
    (None, False),
])
def test_has_batch_axis(dims: list[int] | None, expected: bool) -> None:
    assert has_batch_axis(dims) is expected


def test_batch_axis_rules_agree() -> None:
    """The ONNX auto-complete's "supports batching" and the load check's "the first dimension
    must be -1" ask the same of each tensor."""
    for dims in ([-1, 4], [1, 4], [], [4]):
        tensor = TensorInfo("x", "TYPE_FP32", dims)
        refused = compare_dims("m", "x", dims, [4], 8, exact=False) or ""
        assert supports_batching([tensor], [tensor]) == ("first dimension must be -1"
                                                         not in refused), dims


def test_td308_names_a_tensor_of_unknown_shape(tmp_path: Path) -> None:
    """The auto-complete refuses batching for a tensor whose shape the model does not give,
    and TD308 names it, where it used to fall back to "some tensors"."""
    pytest.importorskip("onnx")
    from fixtures.generate import onnx_models

    model = tmp_path / "scorer"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text(
        'name: "scorer"\nbackend: "onnxruntime"\nmax_batch_size: 8\n')
    onnx_models.build(str(model / "1" / "model.onnx"),
                      [("x", "FLOAT", None)], [("y", "FLOAT", [-1, 4])])
    hits = [f for f in _findings(tmp_path) if f.rule == "TD308"]
    assert [h.message for h in hits] == [
        "max_batch_size is 8 but the model has no batch axis on x (shape unknown)"]


EXACT_AUTO_COMPLETE = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(4)
        return config

    def execute(self, requests):
        return []
"""
BRANCHING_AUTO_COMPLETE = EXACT_AUTO_COMPLETE.replace(
    "        config.set_max_batch_size(4)\n",
    "        if config.max_batch_size() == 0:\n            config.set_max_batch_size(4)\n")
NO_AUTO_COMPLETE = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"


@pytest.mark.parametrize(("source", "expected"), [
    (EXACT_AUTO_COMPLETE, True),
    (BRANCHING_AUTO_COMPLETE, False),
    (NO_AUTO_COMPLETE, None),
])
def test_auto_complete_exact(tmp_path: Path, source: str, expected: bool | None) -> None:
    model = tmp_path / "pre"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('backend: "python"\n')
    (model / "1" / "model.py").write_text(source)
    view = RepositoryView(collect_repository(tmp_path), CheckOptions())
    assert view.by_name["pre"].auto_complete_exact is expected


TF_WARMUP = """
platform: "tensorflow_savedmodel"
{max_batch_size}
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ 16 ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ 2 ] }} ]
model_warmup [ {{ name: "w" batch_size: 4 inputs {{ key: "x" value {{ data_type: TYPE_FP32
  dims: [ {dims} ] zero_data: true }} }} }} ]
"""


@pytest.mark.parametrize(("max_batch_size", "dims", "expected"), [
    # TensorFlow fills an unset max_batch_size from the SavedModel: batch_size 4 may fit.
    ("", "16", []),
    ("max_batch_size: 2", "16", [
        "failed to run warmup sample 'w': batch size 4 for 'tf_0', max allowed is 2"]),
    # A wrong shape fails either way; the server's words depend on the batch dimension.
    ("", "8", [None]),
    ("max_batch_size: 2", "8", ["[request id: <id_unknown>] unexpected shape for input 'x' for "
                                "model 'tf'. Expected [-1,16], got [1,8]"]),
])
def test_warmup_batch_judged_where_max_batch_size_is_known(
        tmp_path: Path, max_batch_size: str, dims: str, expected: list[str | None]) -> None:
    model = tmp_path / "tf"
    (model / "1" / "model.savedmodel").mkdir(parents=True)
    (model / "1" / "model.savedmodel" / "saved_model.pb").write_bytes(b"\x08\x01")
    (model / "config.pbtxt").write_text(TF_WARMUP.format(max_batch_size=max_batch_size,
                                                          dims=dims))
    found = [f.triton_message for f in _findings(tmp_path) if f.rule == "TD247"]
    assert found == expected
