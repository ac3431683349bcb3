"""The repository walk and the model-file readers against hostile repositories.

Version directories of thousands of files, an unreadable version directory, names that are
not UTF-8, a TensorRT section offset of 2^64-1, a zip directory and an ONNX graph of millions
of entries, and external data outside the model directory. Every run is bounded in time (and
in memory where the defect was memory), the other models are still judged, and nothing under
the repository changes.
"""

from __future__ import annotations

import functools
import json
import os
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from triton_doctor.catalogue import select_rules
from triton_doctor.checks import formats, model_dir, repository
from triton_doctor.checks.model_dir import MAX_ENTRIES_PER_DIR
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence

from fixtures.generate import onnx_models
from fixtures.generate.hostile_models import (
    ZIP_ENTRY_NAME,
    onnx_with_inputs,
    onnx_with_repeated_shapes,
    zip_with_entries,
)
from fixtures.generate.plan_headers import build_plan
from tests.helpers import (
    GOOD_CONFIG,
    PYTHON_MODEL,
    check_json,
    run_cli,
    run_cli_without_dac_override,
    tree_state,
    write_model,
)

TIMEOUT_S = 60
#: Address-space limit for runs whose defect was memory (the CLI itself needs ~0.3 GB).
MEMORY_BYTES = 1536 * 1024 * 1024
#: A model whose config has a plain error: it shows the other models are still judged.
OTHER = GOOD_CONFIG.replace("TYPE_FP32", "TYPE_NOPE", 1)
ONNX_CONFIG = 'backend: "onnxruntime"\nmax_batch_size: 0\n'

#: The CLI, bounded in time and address space.
_run = functools.partial(run_cli, timeout=TIMEOUT_S, memory_bytes=MEMORY_BYTES)


def _json_check(repo: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = _run("check", "--format", "json", str(repo))
    _assert_clean(proc, 1)
    return proc, json.loads(proc.stdout)


def _assert_clean(proc: subprocess.CompletedProcess[str], code: int) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stdout + proc.stderr


def _rules(report: dict[str, Any], model: str) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["model"] == model}


def _onnx_model(repo: Path, name: str) -> Path:
    version = repo / name / "1"
    version.mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(ONNX_CONFIG)
    onnx_models.build(str(version / "model.onnx"), [("x", "FLOAT", [1])], [("y", "FLOAT", [1])])
    return version


def test_model_file_behind_thousands_of_shards_is_found(tmp_path: Path) -> None:
    """model.layers.* sort before model.onnx: a listing cut at 2,000 names lost the model."""
    version = _onnx_model(tmp_path, "llm")
    for index in range(2100):
        (version / f"model.layers.{index}.weight").touch()
    write_model(tmp_path, "other", OTHER)
    before = tree_state(tmp_path)
    _, report = _json_check(tmp_path)
    assert "TD108" not in _rules(report, "llm")
    assert "TD114" not in _rules(report, "llm")
    assert _rules(report, "other")
    assert tree_state(tmp_path) == before


def test_listing_over_budget_is_reported_and_the_model_file_still_found(tmp_path: Path) -> None:
    """And what the walk never reached (warmup/, listed after 1/) is not called missing."""
    version = _onnx_model(tmp_path, "llm")
    for index in range(MAX_ENTRIES_PER_DIR + 1):
        (version / f"model.layers.{index}.weight").touch()
    with open(tmp_path / "llm" / "config.pbtxt", "a") as config:
        config.write('model_warmup { name: "w" batch_size: 1 inputs { key: "x" value { '
                     'data_type: TYPE_FP32 dims: [ 1 ] input_data_file: "x.bin" } } }\n')
    (tmp_path / "llm" / "warmup").mkdir()
    (tmp_path / "llm" / "warmup" / "x.bin").write_bytes(bytes(4))
    write_model(tmp_path, "other", OTHER)
    _, report = _json_check(tmp_path)
    assert not _rules(report, "llm") & {"TD108", "TD243"}, report["findings"]
    notes = [f["message"] for f in report["findings"] if f["rule"] == "TD114"]
    assert any(f"{version}" in note and f"stopped after {MAX_ENTRIES_PER_DIR}" in note
               for note in notes), notes
    assert _rules(report, "other")


def test_unreadable_version_directory_is_permission_denied(tmp_path: Path) -> None:
    locked = write_model(tmp_path, "locked", GOOD_CONFIG) / "1"
    write_model(tmp_path, "other", OTHER)
    os.chmod(locked, 0)
    try:
        proc = run_cli_without_dac_override("check", "--format", "json", str(tmp_path))
    finally:
        os.chmod(locked, 0o755)
    _assert_clean(proc, 1)
    report = json.loads(proc.stdout)
    messages = [f["message"] for f in report["findings"] if f["model"] == "locked"]
    assert f"{locked} cannot be read: permission denied; version 1 cannot load" in messages
    assert not any("holds: nothing" in message for message in messages)
    assert _rules(report, "other")


def test_names_that_are_not_utf8_are_shown_escaped(tmp_path: Path) -> None:
    root = bytes(tmp_path)
    os.makedirs(os.path.join(root, b"caf\xe9", b"1\xff"))
    with open(os.path.join(root, b"caf\xe9", b"config.pbtxt"), "w") as handle:
        handle.write(GOOD_CONFIG)
    write_model(tmp_path, "other", OTHER)
    before = tree_state(tmp_path)
    text = _run("check", str(tmp_path))
    _assert_clean(text, 1)
    assert "caf\\xe9" in text.stdout and "1\\xff" in text.stdout
    _, report = _json_check(tmp_path)
    assert {"caf\\xe9", "other"} <= {f["model"] for f in report["findings"]}
    assert tree_state(tmp_path) == before


def test_tensorrt_section_offset_beyond_the_file(tmp_path: Path) -> None:
    plan = bytearray(build_plan(trt_version=(10, 3, 0, 26), cc=(8, 9), sms=58))
    struct.pack_into("<Q", plan, 32 + 8, 2**64 - 1)  # the NGNE entry's offset
    version = tmp_path / "engine" / "1"
    version.mkdir(parents=True)
    (tmp_path / "engine" / "config.pbtxt").write_text('backend: "tensorrt"\nmax_batch_size: 0\n')
    (version / "model.plan").write_bytes(plan)
    write_model(tmp_path, "other", OTHER)
    _, report = _json_check(tmp_path)
    # The engine entry's offset is not followed, so the inferred table layout is unconfirmed:
    # the engine is found by its magic and the plan is not called corrupt.
    messages = [f["message"] for f in report["findings"] if f["model"] == "engine"]
    assert not any("corrupt" in m for m in messages), messages
    assert _rules(report, "other")


def test_a_reader_failing_on_unforeseen_bytes_fails_only_that_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(handle: int, size: int, head: bytes, path: str) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(formats.READERS, "tensorrt", broken)
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "model.plan").write_bytes(b"ftrt" + bytes(60))
    found = formats.read_model_file(str(tmp_path), "1/model.plan", "tensorrt")
    assert found.problem is not None and found.problem.startswith("cannot be parsed")
    assert found.path == "1/model.plan"


def test_zip_directory_of_millions_of_entries_is_not_read(tmp_path: Path) -> None:
    version = tmp_path / "scorer" / "1"
    version.mkdir(parents=True)
    (tmp_path / "scorer" / "config.pbtxt").write_text('backend: "pytorch"\nmax_batch_size: 0\n')
    (version / "model.pt").write_bytes(zip_with_entries(3_000_000))
    write_model(tmp_path, "other", OTHER)
    _, report = _json_check(tmp_path)
    notes = [f["message"] for f in report["findings"] if f["rule"] == "TD114"]
    assert any("1/model.pt" in note and "3000000 entries" in note for note in notes), notes
    assert _rules(report, "other")


def test_onnx_graph_of_millions_of_inputs_is_not_walked(tmp_path: Path) -> None:
    version = tmp_path / "wide" / "1"
    version.mkdir(parents=True)
    (tmp_path / "wide" / "config.pbtxt").write_text(ONNX_CONFIG)
    (version / "model.onnx").write_bytes(onnx_with_inputs(2_000_000))
    write_model(tmp_path, "other", OTHER)
    _, report = _json_check(tmp_path)
    notes = [f["message"] for f in report["findings"] if f["rule"] == "TD114"]
    assert any("1/model.onnx" in note and "over 100000 inputs" in note for note in notes), notes
    assert _rules(report, "other")


@pytest.mark.parametrize("location", ["../../../secret.data", "{secret}"])
def test_external_data_outside_is_a_finding_and_never_looked_up(
        tmp_path: Path, location: str) -> None:
    """The report must read the same whether the named file exists or not (no oracle)."""
    repo = tmp_path / "repo"
    version = _onnx_model(repo, "encoder")
    model = onnx_models.onnx.ModelProto()
    model.ParseFromString((version / "model.onnx").read_bytes())
    secret = tmp_path / "secret.data"
    tensor = model.graph.initializer.add(name="w", data_type=2, dims=[4])
    tensor.data_location = 1  # EXTERNAL
    tensor.external_data.add(key="location", value=location.format(secret=secret))
    (version / "model.onnx").write_bytes(model.SerializeToString())
    write_model(repo, "other", OTHER)
    before = tree_state(repo)
    outputs = []
    for present in (False, True):
        if present:
            secret.write_bytes(b"\0" * 4)
        _, report = _json_check(repo)
        assert "TD312" in _rules(report, "encoder")
        assert "TD302" not in _rules(report, "encoder")
        assert _rules(report, "other")
        outputs.append([f["message"] for f in report["findings"]])
    assert outputs[0] == outputs[1]
    assert tree_state(repo) == before


def test_external_data_linked_into_a_cache_is_neither_outside_nor_missing(
        tmp_path: Path) -> None:
    """The Hugging Face cache layout: 1/model.onnx and 1/model.onnx.data are symbolic links
    into blobs/ elsewhere. ONNX Runtime loads it; the location stays in the directory."""
    repo = tmp_path / "repo"
    version = _onnx_model(repo, "encoder")
    model = onnx_models.onnx.ModelProto()
    model.ParseFromString((version / "model.onnx").read_bytes())
    tensor = model.graph.initializer.add(name="w", data_type=1, dims=[1])
    tensor.data_location = 1  # EXTERNAL
    tensor.external_data.add(key="location", value="model.onnx.data")
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "a1b2").write_bytes(model.SerializeToString())
    (blobs / "c3d4").write_bytes(bytes(4))
    (version / "model.onnx").unlink()
    (version / "model.onnx").symlink_to(blobs / "a1b2")
    (version / "model.onnx.data").symlink_to(blobs / "c3d4")
    write_model(repo, "other", OTHER)
    before = tree_state(tmp_path)
    _, report = _json_check(repo)
    assert not _rules(report, "encoder") & {"TD302", "TD312"}, report["findings"]
    assert _rules(report, "other")
    assert tree_state(tmp_path) == before


def test_zip64_locator_pointing_at_a_small_record_does_not_pass_the_budget(
        tmp_path: Path) -> None:
    """zipfile reads the zip64 record just before the locator, not where the locator says:
    a locator aimed at a fake one-entry record must not let 300,000 entries through."""
    real = zip_with_entries(300_000)
    local = 30 + len(ZIP_ENTRY_NAME)  # the one local header, before the central directory
    fake = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 1, 1, 60, local)
    archive = bytearray(real[:local] + fake + real[local:])
    locator = len(archive) - 22 - 20
    struct.pack_into("<Q", archive, locator - 56 + 48, local + len(fake))  # the real record
    struct.pack_into("<Q", archive, locator + 8, local)  # the locator aims at the fake
    version = tmp_path / "scorer" / "1"
    version.mkdir(parents=True)
    (tmp_path / "scorer" / "config.pbtxt").write_text('backend: "pytorch"\nmax_batch_size: 0\n')
    (version / "model.pt").write_bytes(bytes(archive))
    write_model(tmp_path, "other", OTHER)
    before = tree_state(tmp_path)
    _, report = _json_check(tmp_path)
    notes = [f["message"] for f in report["findings"] if f["rule"] == "TD114"]
    assert any("1/model.pt" in note and "300000 entries" in note for note in notes), notes
    assert _rules(report, "other")
    assert tree_state(tmp_path) == before


def test_unreadable_version_the_policy_does_not_load_is_a_warning(tmp_path: Path) -> None:
    """Unreadable 1/ beside 3/ under latest { num_versions: 1 }: Triton loads version 3."""
    model = write_model(tmp_path, "locked",
                        GOOD_CONFIG + "version_policy: { latest: { num_versions: 1 } }\n",
                        {"1/model.py": PYTHON_MODEL, "3/model.py": PYTHON_MODEL})
    write_model(tmp_path, "other", OTHER)
    os.chmod(model / "1", 0)
    try:
        proc = run_cli_without_dac_override("check", "--format", "json", str(tmp_path))
    finally:
        os.chmod(model / "1", 0o755)
    _assert_clean(proc, 1)
    report = json.loads(proc.stdout)
    found = [(f["severity"], f["message"]) for f in report["findings"] if f["rule"] == "TD111"]
    assert found == [("warning", f"{model / '1'} cannot be read: permission denied; the "
                      "version policy does not load version 1")], found
    assert _rules(report, "other")


def test_model_listing_cut_before_the_version_directory_calls_nothing_absent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing cut at its budget keeps the first entries in directory order, so 1/ can be
    left out: no version, backend or policy finding may rest on its absence."""
    monkeypatch.setattr(model_dir, "MAX_ENTRIES_PER_DIR", 2)
    model = write_model(tmp_path, "wide", GOOD_CONFIG.replace('backend: "python"', "")
                        + "version_policy: { specific: { versions: [ 1 ] } }\n")
    for index in range(2000):
        (model / f"shard.{index}").touch()
    listed = model_dir._list

    def cut_before_the_version(path: str, budget: int) -> tuple[list[os.DirEntry[str]], int | None]:
        """The cut listing, without 1/: where directory order puts it depends on the filesystem
        (a hash on ext4, creation order on btrfs), so the test leaves it out on purpose."""
        entries, stopped = listed(path, budget)
        if path == str(model):
            entries = [entry for entry in entries if entry.name != "1"]
        return entries, stopped

    monkeypatch.setattr(model_dir, "_list", cut_before_the_version)
    before = tree_state(tmp_path)
    evidence = Evidence(repository=repository.collect_repository(tmp_path))
    assert "1" not in [sub.name for sub in evidence.repository.models[0].subdirs]
    rules = {f.rule for f in run(evidence, select_rules([], [])).findings}
    assert "TD114" in rules
    assert not rules & {"TD101", "TD102", "TD104", "TD107", "TD112"}, rules
    assert tree_state(tmp_path) == before


class _Vanished:
    """A directory entry gone since it was listed, on a filesystem without d_type: asking
    whether it is a link stats it, which fails."""

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name, self.path = entry.name, entry.path

    def is_dir(self) -> bool:
        return True

    def is_symlink(self) -> bool:
        raise FileNotFoundError(2, "No such file or directory", self.path)


def test_directory_vanishing_during_the_walk_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_model(tmp_path, "m", GOOD_CONFIG, {"1/model.py": PYTHON_MODEL, "assets/a.txt": ""})
    listing = model_dir._list

    def vanishing(path: str, budget: int) -> tuple[list[Any], int | None]:
        entries, stopped = listing(path, budget)
        return [_Vanished(e) if e.name == "assets" else e for e in entries], stopped

    monkeypatch.setattr(model_dir, "_list", vanishing)
    model = repository.collect_repository(tmp_path).models[0]
    assert "assets/" in model.tree and "assets/a.txt" not in model.tree
    assert "1/model.py" in model.tree


def test_no_version_among_thousands_of_subdirectories_names_a_bounded_few(
        tmp_path: Path) -> None:
    """TD104 named every subdirectory: 5,000 of them were one 40 KB message."""
    model = write_model(tmp_path, "assets", GOOD_CONFIG, {})
    for index in range(5000):
        (model / f"v{index:04}").mkdir()
    write_model(tmp_path, "other", OTHER)
    before = tree_state(tmp_path)
    _, report = _json_check(tmp_path)
    found = [f["message"] for f in report["findings"] if f["rule"] == "TD104"]
    assert len(found) == 1 and found[0].endswith("v0255, ... (5,000 in all)"), found[0][-200:]
    assert _rules(report, "other")
    assert tree_state(tmp_path) == before


def test_onnx_shape_repeated_thousands_of_times_is_merged_in_linear_time(tmp_path: Path) -> None:
    """Each repeated ``shape`` was merged by copying the dims so far: 480 KB took 17 s."""
    path = tmp_path / "model.onnx"
    path.write_bytes(onnx_with_repeated_shapes(200_000))
    started = time.monotonic()
    found = formats.read_model_file(str(tmp_path), "model.onnx", "onnxruntime")
    assert time.monotonic() - started < 20  # linear: well under a second; quadratic: ~80 s
    assert found.problem is None, found.problem
    assert found.inputs is not None and found.inputs[0].dims == [4] * 200_000


SECRET = "ghp_0123456789abcdefTOKEN"


@pytest.mark.parametrize("linked", ["config.pbtxt", "1/model.onnx"])
def test_a_file_linked_from_outside_the_repository_is_judged_but_never_quoted(
        tmp_path: Path, linked: str) -> None:
    """A repository in a pull request could link a file to the CI runner's token: the server
    would refuse the model as it is, but the finding must not print the token into the log."""
    secret = tmp_path / "token.txt"
    secret.write_text(f"{SECRET} more words\nmax_batch_size: ${{{SECRET}}}\n")
    repo = tmp_path / "repo"
    write_model(repo, "m", 'name: "m"\nbackend: "onnxruntime"\n', {"1/model.onnx": ""})
    target = repo / "m" / linked
    target.unlink()
    target.symlink_to(secret)
    before = tree_state(tmp_path)
    text = run_cli("check", str(repo))
    report = check_json(repo)
    assert text.returncode == 1, text.stderr
    assert SECRET not in text.stdout + text.stderr
    assert SECRET not in json.dumps(report)
    rule = "TD201" if linked == "config.pbtxt" else "TD301"
    assert [f["rule"] for f in report["findings"] if f["severity"] == "error"] == [rule]
    assert tree_state(tmp_path) == before


def test_a_file_linked_inside_the_repository_is_still_quoted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_model(repo, "m", 'name: "m"\nbackend: "onnxruntime"\n', {})
    (repo / "notes.txt").write_text("placeholder for the model\n")
    (repo / "m" / "1").mkdir()
    (repo / "m" / "1" / "model.onnx").symlink_to("../../notes.txt")
    report = check_json(repo)
    assert any("beginning 'placeholder for the model'" in f["message"]
               for f in report["findings"] if f["rule"] == "TD301")
