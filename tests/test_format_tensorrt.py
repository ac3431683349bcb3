"""The TensorRT plan header reader, against headers built from the documented layout."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
from triton_doctor.checks.formats import sniff
from triton_doctor.checks.formats.tensorrt import NOT_A_PLAN, read_plan
from triton_doctor.evidence import ModelFile, PlanFacts

from fixtures.generate.plan_headers import build_legacy_plan, build_plan


def read_bytes(tmp_path: Path, data: bytes, name: str = "model.plan") -> ModelFile:
    path = tmp_path / name
    path.write_bytes(data)
    return read_plan(str(path))


def facts_of(found: ModelFile) -> PlanFacts:
    assert found.kind == "tensorrt", found
    assert found.tensorrt is not None
    return found.tensorrt


# (version, cc, SMs, container) of real plans, TensorRT 7.0 to 10.6.
RELEASES = [
    ((7, 0, 0, 11), (6, 1), 16, "ptrt"),
    ((7, 1, 3, 0), (7, 2), 8, "ptrt"),
    ((8, 2, 4, 2), (6, 1), 6, "ptrt"),
    ((8, 6, 1, 6), (8, 9), 128, "ftrt"),
    ((8, 6, 1, 6), (8, 9), 46, "ftrt"),
    ((10, 0, 1, 6), (8, 9), 142, "ftrt"),
    ((10, 3, 0, 26), (7, 5), 40, "ftrt"),
    ((10, 6, 0, 26), (7, 5), 16, "ftrt"),
]


@pytest.mark.parametrize(("version", "cc", "sms", "container"), RELEASES)
def test_releases(
    tmp_path: Path, version: tuple[int, ...], cc: tuple[int, int], sms: int, container: str,
) -> None:
    found = read_bytes(tmp_path, build_plan(version, cc, sms, container=container))
    facts = facts_of(found)
    assert found.problem is None
    assert facts.container == container
    assert facts.tensorrt_version == ".".join(map(str, version))
    assert facts.compute_capability == f"{cc[0]}.{cc[1]}"
    assert facts.multiprocessor_count == sms
    assert facts.metadata == {}
    assert found.inputs is None and found.outputs is None


def test_size_and_sniff_agree(tmp_path: Path) -> None:
    plan = build_plan()
    found = read_bytes(tmp_path, plan)
    assert found.size_bytes == len(plan)
    assert sniff.sniff_bytes(plan[: sniff.HEAD_BYTES], len(plan)) == "tensorrt"


def test_two_sections_with_weights(tmp_path: Path) -> None:
    facts = facts_of(read_bytes(tmp_path, build_plan((10, 6, 0, 26), weights=4096)))
    assert (facts.tensorrt_version, facts.compute_capability) == ("10.6.0.26", "8.9")


def test_other_tokens_before_the_device_block(tmp_path: Path) -> None:
    facts = facts_of(read_bytes(tmp_path, build_plan(extra_tokens=True)))
    assert (facts.compute_capability, facts.multiprocessor_count) == ("8.9", 128)


def test_ultralytics_prefix(tmp_path: Path) -> None:
    metadata = {"task": "detect", "batch": 1, "imgsz": [640, 640], "names": {"0": "person"}}
    plan = build_plan((8, 6, 1, 6), ultralytics_metadata=metadata)
    found = read_bytes(tmp_path, plan, "model.engine")
    facts = facts_of(found)
    assert facts.metadata == metadata
    assert (facts.container, facts.tensorrt_version) == ("ftrt", "8.6.1.6")
    assert found.problem is None
    assert sniff.sniff_bytes(plan[: sniff.HEAD_BYTES], len(plan)) == "tensorrt"


def test_ultralytics_prefix_before_a_bare_engine(tmp_path: Path) -> None:
    plan = build_plan((8, 2, 4, 2), (7, 5), 40, container="ptrt", ultralytics_metadata={"a": 1})
    facts = facts_of(read_bytes(tmp_path, plan))
    assert (facts.container, facts.tensorrt_version) == ("ptrt", "8.2.4.2")
    assert facts.metadata == {"a": 1}


def test_ultralytics_prefix_that_is_not_json(tmp_path: Path) -> None:
    junk = b"{not json at all"
    facts = facts_of(read_bytes(tmp_path, struct.pack("<I", len(junk)) + junk + build_plan()))
    assert facts.metadata == {}
    assert facts.tensorrt_version == "10.3.0.26"


def test_oversized_ultralytics_metadata_is_skipped(tmp_path: Path) -> None:
    meta = json.dumps({"names": ["x" * 100] * 20_000}).encode()
    assert len(meta) > 1024 * 1024
    facts = facts_of(read_bytes(tmp_path, struct.pack("<I", len(meta)) + meta + build_plan()))
    assert facts.metadata == {}
    assert (facts.container, facts.tensorrt_version) == ("ftrt", "10.3.0.26")


@pytest.mark.parametrize("missing", [0, 1, 4], ids=["no-engine", "cut-metadata", "cut-more"])
def test_ultralytics_prefix_without_an_engine(tmp_path: Path, missing: int) -> None:
    """``<u32 N><N bytes of JSON>`` and nothing after (or less): no plan, and sniff agrees."""
    meta = json.dumps({"task": "detect"}).encode()
    data = (struct.pack("<I", len(meta)) + meta)[: 4 + len(meta) - missing]
    found = read_bytes(tmp_path, data)
    assert (found.kind, found.problem) == ("unknown", NOT_A_PLAN)
    assert sniff.sniff_bytes(data[: sniff.HEAD_BYTES], len(data)) != "tensorrt"


def test_legacy_plan(tmp_path: Path) -> None:
    found = read_bytes(tmp_path, build_legacy_plan(8192))
    facts = facts_of(found)
    assert facts.container == "legacy"
    assert (facts.tensorrt_version, facts.compute_capability) == ("", "")
    assert facts.multiprocessor_count is None


def test_random_bytes(tmp_path: Path) -> None:
    found = read_bytes(tmp_path, random.Random(1).randbytes(5000))
    assert found.kind == "unknown"
    assert found.problem == NOT_A_PLAN
    assert found.tensorrt is None


@pytest.mark.parametrize(
    "data",
    [b"PK\x03\x04" + bytes(100), b"\x08\x07\x12\x07pytorch" + bytes(64), b"ftr", b"plan"],
    ids=["zip", "onnx", "short-magic", "text"],
)
def test_other_files(tmp_path: Path, data: bytes) -> None:
    found = read_bytes(tmp_path, data)
    assert (found.kind, found.problem) == ("unknown", NOT_A_PLAN)


def test_empty_and_unreadable(tmp_path: Path) -> None:
    assert read_bytes(tmp_path, b"").kind == "empty"
    found = read_plan(str(tmp_path))  # a directory
    assert found.problem is not None and found.problem.startswith("cannot be read")
    missing = read_plan(str(tmp_path / "absent.plan"))
    assert missing.problem is not None and "cannot be read" in missing.problem


def test_garbage_version_bytes(tmp_path: Path) -> None:
    """Version bytes that no release has are left unknown; the GPU still decodes."""
    facts = facts_of(read_bytes(tmp_path, build_plan((0xFF, 0xEE, 0xDD, 0xCC))))
    assert facts.tensorrt_version == ""
    assert (facts.compute_capability, facts.multiprocessor_count) == ("8.9", 128)


def test_garbage_container_version_falls_back_to_the_stream(tmp_path: Path) -> None:
    plan = bytearray(build_plan((10, 0, 1, 6)))
    plan[24:28] = b"\xff\xff\xff\xff"
    facts = facts_of(read_bytes(tmp_path, bytes(plan)))
    assert facts.tensorrt_version == "10.0.1.6"


def test_broken_section_table_falls_back_to_the_engine_magic(tmp_path: Path) -> None:
    plan = bytearray(build_plan((8, 6, 1, 6)))
    plan[32 + 8 : 32 + 16] = struct.pack("<Q", 0xFFFF_FFFF)  # NGNE offset past the end
    found = read_bytes(tmp_path, bytes(plan))
    facts = facts_of(found)
    assert (facts.tensorrt_version, facts.compute_capability) == ("8.6.1.6", "8.9")
    # The table's layout is inferred: a table it cannot confirm is no proof of corruption.
    assert found.problem is None


def test_section_past_the_end_of_a_confirmed_table_is_a_problem(tmp_path: Path) -> None:
    """The engine section lies where its entry says: the table is read right, so a weights
    section past the end of the file is a corrupt plan."""
    plan = bytearray(build_plan((10, 6, 0, 26), weights=64))
    plan[32 + 24 + 8 : 32 + 24 + 16] = struct.pack("<Q", 2**40)  # THGW offset
    found = read_bytes(tmp_path, bytes(plan))
    assert found.problem == (f"is a corrupt plan: a section offset of {2**40} is beyond the "
                             f"file's {len(plan)} bytes")


def test_corrupt_token_stream_leaves_the_gpu_unknown(tmp_path: Path) -> None:
    plan = build_plan((8, 2, 4, 2), container="ptrt")
    # The version tokens end 20 bytes into the stream; break the next tag.
    stream = plan.index(b"\x02\x80\x01\x00")
    broken = plan[: stream + 20] + b"\xde\xad\xbe\xef" + plan[stream + 24 :]
    facts = facts_of(read_bytes(tmp_path, broken))
    assert facts.tensorrt_version == "8.2.4.2"
    assert (facts.compute_capability, facts.multiprocessor_count) == ("", None)


def test_implausible_compute_capability_is_left_unknown(tmp_path: Path) -> None:
    facts = facts_of(read_bytes(tmp_path, build_plan(cc=(99, 42))))
    assert (facts.compute_capability, facts.multiprocessor_count) == ("", None)


@pytest.mark.parametrize(
    "plan",
    [
        build_plan(padding=64),
        build_plan((8, 2, 4, 2), container="ptrt", padding=64),
        build_plan((7, 0, 0, 11), container="ptrt", padding=64),
        build_plan((10, 6, 0, 26), weights=64, padding=64, ultralytics_metadata={"k": "v"}),
    ],
    ids=["ftrt", "ptrt", "ptrt-trt7", "ultralytics"],
)
def test_truncated_anywhere_never_raises(tmp_path: Path, plan: bytes) -> None:
    path = tmp_path / "model.plan"
    for cut in range(len(plan)):
        path.write_bytes(plan[:cut])
        found = read_plan(str(path))
        assert found.kind in {"tensorrt", "unknown", "empty"}, cut
        if found.tensorrt is not None:
            assert found.tensorrt.compute_capability in {"", "8.9"}, cut
            assert found.tensorrt.multiprocessor_count in {None, 128}, cut


def test_truncated_container_is_a_problem(tmp_path: Path) -> None:
    plan = build_plan()
    found = read_bytes(tmp_path, plan[:1000])
    assert found.kind == "tensorrt"
    assert found.problem is not None
    assert f"says {len(plan)} bytes but only 1000" in found.problem
    short = read_bytes(tmp_path, plan[:20])
    assert short.problem is not None and short.problem.startswith("is truncated")


def test_json_round_trip(tmp_path: Path) -> None:
    from triton_doctor.evidence import from_jsonable, to_jsonable

    found = read_bytes(tmp_path, build_plan(ultralytics_metadata={"imgsz": [32, 32]}))
    data = json.loads(json.dumps(to_jsonable(found)))
    assert from_jsonable(ModelFile, data) == found
