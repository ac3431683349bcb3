"""The ModelConfig class that upb builds from the generated module's descriptor is the
module's own, field for field; a generated module of another shape is imported instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from google.protobuf.internal import api_implementation
from triton_doctor.triton import model_config

ROOT = Path(__file__).resolve().parent.parent
GENERATED = model_config._generated_module()

pytestmark = pytest.mark.skipif(api_implementation.Type() != "upb",
                                reason="protobuf's upb implementation is not in use")


def _configs() -> list[str]:
    texts = [path.read_text(encoding="utf-8", errors="surrogateescape")
             for path in sorted((ROOT / "fixtures").rglob("*.pbtxt"))]
    return [text for text in texts if _parses(text)]


def _parses(text: str) -> bool:
    try:
        text_format.Parse(text, model_config._imported(GENERATED).ModelConfig())
    except Exception:  # the invalid fixtures
        return False
    return True


def test_the_built_class_reads_every_fixture_as_the_generated_module_does() -> None:
    built, imported = model_config._built_by_upb(GENERATED), model_config._imported(GENERATED)
    assert model_config.schema().ModelConfig is not imported.ModelConfig  # upb's path taken
    configs = _configs()
    assert len(configs) > 100
    for text in configs:
        ours = text_format.Parse(text, built.ModelConfig())
        theirs = text_format.Parse(text, imported.ModelConfig())
        assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True)
        assert str(ours) == str(theirs)
    assert dict(built.DataType.items()) == dict(imported.DataType.items())
    assert built.ModelConfig.DESCRIPTOR.full_name == "inference.ModelConfig"


def test_a_generated_module_of_another_shape_is_imported(tmp_path: Path) -> None:
    text = Path(GENERATED).read_text(encoding="utf-8")
    assert "AddSerializedFile(b'" in text
    other = tmp_path / "model_config_pb2.py"
    other.write_text(text.replace("AddSerializedFile(b'", "AddSerializedFile(b'' + b'", 1),
                     encoding="utf-8")
    schema = model_config._built_by_upb(str(other))
    assert type(schema).__name__ == "module"
    assert schema.ModelConfig.FromString(b"\n\x01x").name == "x"
