"""The OpenVINO IR reader: Triton's own QA models (names as the server reported them) and
small IR written here, plus hostile XML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from triton_doctor.checks.formats import openvino
from triton_doctor.checks.formats.openvino import read_openvino
from triton_doctor.evidence import ModelFile, TensorInfo
from triton_doctor.triton import model_config

SERVER_QA = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "server-qa"
needs_server_qa = pytest.mark.skipif(not SERVER_QA.is_dir(), reason="../shared is not present")


def qa_model(group: str, case: str) -> Path:
    return SERVER_QA / "materialized" / group / "openvino" / case / "models" / case / "1/model.xml"


def io_of(found: ModelFile) -> tuple[list[TensorInfo], list[TensorInfo]]:
    assert found.kind == "openvino", found
    assert found.problem is None
    assert found.inputs is not None and found.outputs is not None
    return found.inputs, found.outputs


def write_ir(tmp_path: Path, text: str) -> ModelFile:
    path = tmp_path / "model.xml"
    path.write_text(text, encoding="utf-8")
    return read_openvino(str(path))


@needs_server_qa
@pytest.mark.parametrize("case", ["no_config", "dynamic_batch"])
def test_matches_what_the_server_autocompleted(case: str) -> None:
    """The server's auto-completed config (its ``expected`` file) names the same tensors."""
    expected_text = (
        SERVER_QA / "expected" / "autofill_noplatform_success" / "openvino" / case / "expected"
    ).read_text()
    expected = model_config.parse(expected_text)
    inputs, outputs = io_of(read_openvino(str(qa_model("autofill_noplatform_success", case))))
    batch = 1 if expected.max_batch_size > 0 else 0
    for declared, tensors in ((expected.input, inputs), (expected.output, outputs)):
        assert [t.name for t in tensors] == [io.name for io in declared]
        assert [t.data_type for t in tensors] == [
            model_config.data_type_name(io.data_type) for io in declared
        ]
        assert [t.dims[batch:] for t in tensors if t.dims is not None] == [
            list(io.dims) for io in declared
        ]
    assert [t.dims for t in inputs] == [[1, 4], [1, 4]]


@needs_server_qa
def test_layout_annotations() -> None:
    model = qa_model("autofill_noplatform_success", "dynamic_batch")
    inputs, outputs = io_of(read_openvino(str(model)))
    assert [t.layout for t in inputs + outputs] == ["[N,H]"] * 4
    plain, _ = io_of(read_openvino(str(qa_model("autofill_noplatform_success", "no_config"))))
    assert [t.layout for t in plain] == ["", ""]


@needs_server_qa
@pytest.mark.parametrize("case", ["unknown_output", "too_few_inputs"])
def test_failing_cases_report_what_the_server_saw(case: str) -> None:
    cases = json.loads((SERVER_QA / "cases.json").read_text())
    entries = cases["cases"] if isinstance(cases, dict) and "cases" in cases else cases
    message = next(c for c in entries if c["id"] == f"autofill_noplatform/openvino/{case}")[
        "expected_messages"
    ][0]
    inputs, outputs = io_of(read_openvino(str(qa_model("autofill_noplatform", case))))
    if case == "unknown_output":
        allowed = ", ".join(t.name for t in outputs)
        assert message.endswith(f"allowed outputs are: {allowed}")
    else:
        assert message.endswith(f"model provides {len(inputs)}")


IR11 = """<?xml version="1.0"?>
<net name="small" version="11">
  <layers>
    <layer id="3" name="image_param" type="Parameter" version="opset1">
      <data shape="?,3,1..512,224" element_type="f16"/>
      <output>
        <port id="0" precision="FP16" names="pixel_values,image\\,raw">
          <dim>-1</dim><dim>3</dim><dim>-1</dim><dim>224</dim>
        </port>
      </output>
    </layer>
    <layer id="0" name="flag" type="Parameter" version="opset1">
      <data shape="" element_type="boolean"/>
      <output><port id="0" precision="BOOL"/></output>
    </layer>
    <layer id="1" name="ids" type="Parameter" version="opset1">
      <data shape="..." element_type="bf16"/>
      <output><port id="0" precision="BF16" names="ids"/></output>
    </layer>
    <layer id="4" name="split" type="VariadicSplit" version="opset1">
      <input><port id="0"><dim>-1</dim><dim>3</dim><dim>-1</dim><dim>224</dim></port></input>
      <output>
        <port id="3" precision="FP32" names="scores,a_scores_alias">
          <dim>-1</dim><dim>2</dim>
        </port>
        <port id="4" precision="U8" names="z_mask">
          <dim>-1</dim>
        </port>
        <port id="5" precision="FP64">
          <dim>7</dim>
        </port>
      </output>
    </layer>
    <layer id="7" name="out_mask" type="Result" version="opset1">
      <input><port id="0" precision="U8"><dim>-1</dim></port></input>
    </layer>
    <layer id="6" name="out_scores" type="Result" version="opset1">
      <input>
        <port id="0" precision="FP32">
          <dim>-1</dim><dim>2</dim>
          <rt_info><attribute name="layout" version="0" layout="[N,C]"/></rt_info>
        </port>
      </input>
    </layer>
    <layer id="8" name="unnamed_result" type="Result" version="opset1">
      <input><port id="0" precision="FP64"><dim>7</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="3" from-port="0" to-layer="4" to-port="0"/>
    <edge from-layer="4" from-port="3" to-layer="6" to-port="0"/>
    <edge from-layer="4" from-port="4" to-layer="7" to-port="0"/>
    <edge from-layer="4" from-port="5" to-layer="8" to-port="0"/>
  </edges>
</net>
"""


def test_small_ir(tmp_path: Path) -> None:
    inputs, outputs = io_of(write_ir(tmp_path, IR11))
    image, flag, ids = inputs
    # get_any_name() is the smallest name: "image,raw" < "pixel_values"; "\\," is an escape.
    assert (image.name, image.data_type, image.dims, image.source_type) == (
        "image,raw", "TYPE_FP16", [-1, 3, -1, 224], "f16",
    )
    assert (flag.name, flag.data_type, flag.dims) == ("flag", "TYPE_BOOL", [])
    assert (ids.name, ids.data_type, ids.dims, ids.source_type) == (
        "ids", "TYPE_INVALID", None, "bf16",
    )
    mask, scores, unnamed = outputs
    assert (mask.name, mask.data_type, mask.dims) == ("z_mask", "TYPE_UINT8", [-1])
    assert (scores.name, scores.data_type, scores.dims, scores.layout) == (
        "a_scores_alias", "TYPE_FP32", [-1, 2], "[N,C]",
    )
    # A tensor without names falls back to the Result's own name; f64 has no Triton mapping.
    assert (unnamed.name, unnamed.data_type, unnamed.source_type) == (
        "unnamed_result", "TYPE_INVALID", "f64",
    )


IR10 = """<?xml version="1.0"?>
<net name="legacy" version="10">
  <layers>
    <layer id="0" name="data" type="Parameter" version="opset1">
      <data shape="1,3" element_type="f16"/>
      <output><port id="0" precision="FP16"><dim>1</dim><dim>3</dim></port></output>
    </layer>
    <layer id="1" name="split" type="Split" version="opset1">
      <input><port id="0"><dim>1</dim><dim>3</dim></port></input>
      <output>
        <port id="1" precision="I64"><dim>1</dim><dim>1</dim></port>
        <port id="2" precision="U8"><dim>1</dim><dim>2</dim></port>
      </output>
    </layer>
    <layer id="2" name="out0" type="Result" version="opset1">
      <input><port id="0"><dim>1</dim><dim>1</dim></port></input>
    </layer>
    <layer id="3" name="out1" type="Result" version="opset1">
      <input><port id="0"><dim>1</dim><dim>2</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
    <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
    <edge from-layer="1" from-port="2" to-layer="3" to-port="0"/>
  </edges>
</net>
"""


def test_ir_v10_legacy_names_and_types(tmp_path: Path) -> None:
    """OpenVINO names IR v10 outputs after the producing operation (".N" when it has several
    outputs) and widens the element types."""
    inputs, outputs = io_of(write_ir(tmp_path, IR10))
    assert [(t.name, t.data_type, t.dims) for t in inputs] == [("data", "TYPE_FP32", [1, 3])]
    assert [(t.name, t.data_type, t.dims) for t in outputs] == [
        ("split.0", "TYPE_INT32", [1, 1]),
        ("split.1", "TYPE_FP32", [1, 2]),
    ]


def test_dangling_result_and_odd_version(tmp_path: Path) -> None:
    """A Result no edge feeds keeps its own name and its input port's type and shape."""
    text = """<net name="x" version="eleven"><layers>
      <layer id="0" name="lonely" type="Result" version="opset1">
        <input><port id="0" precision="I64"><dim>2</dim><dim>?</dim></port></input>
      </layer>
      <layer id="1" name="p" type="Parameter" version="opset1"><data element_type="u16"/></layer>
    </layers></net>"""
    inputs, outputs = io_of(write_ir(tmp_path, text))
    assert [(t.name, t.data_type, t.dims) for t in outputs] == [("lonely", "TYPE_INT64", [2, -1])]
    assert [(t.name, t.data_type, t.dims) for t in inputs] == [("p", "TYPE_UINT16", None)]


def test_no_layers(tmp_path: Path) -> None:
    inputs, outputs = io_of(write_ir(tmp_path, '<net name="x" version="11"></net>'))
    assert (inputs, outputs) == ([], [])


BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<net name="&lol3;" version="11"><layers/></net>
"""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (BOMB, "has a <!DOCTYPE declaration"),
        (
            '<?xml version="1.0"?>\n<!ENTITY x SYSTEM "file:///etc/passwd">\n<net/>',
            "has a <!ENTITY declaration",
        ),
        (IR11[: len(IR11) // 2], "is not well-formed XML"),
        ("this is not xml", "is not well-formed XML"),
        ('{"inputs": []}', "is not well-formed XML"),
        ('<?xml version="1.0"?><model><layers/></model>', "root element <model>"),
    ],
    ids=["entity-bomb", "external-entity", "truncated", "text", "json", "other-root"],
)
def test_bad_xml(tmp_path: Path, text: str, problem: str) -> None:
    found = write_ir(tmp_path, text)
    assert found.kind == "unknown"
    assert found.problem is not None and problem in found.problem
    assert found.inputs is None


def test_utf16_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.xml"
    path.write_bytes(BOMB.encode("utf-16"))
    found = read_openvino(str(path))
    assert found.problem == "is not UTF-8 text; OpenVINO IR .xml files are UTF-8"


def test_binary_and_empty(tmp_path: Path) -> None:
    path = tmp_path / "model.xml"
    path.write_bytes(bytes(range(256)) * 4)
    assert read_openvino(str(path)).problem is not None
    path.write_bytes(b"")
    assert read_openvino(str(path)).kind == "empty"
    unreadable = read_openvino(str(tmp_path))
    assert unreadable.problem is not None and unreadable.problem.startswith("cannot be read")


def test_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openvino, "MAX_XML_BYTES", 100)
    found = write_ir(tmp_path, IR11)
    assert found.problem is not None and "over the" in found.problem
    assert found.inputs is None
