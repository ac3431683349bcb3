"""What the server makes of a directory: version names, field lines, evidence round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from triton_doctor.checks.repository import collect_repository
from triton_doctor.evidence import (
    MAX_TREE_DEPTH,
    CheckOptions,
    Evidence,
    from_jsonable,
    to_jsonable,
)
from triton_doctor.report import json_report
from triton_doctor.triton.config_locations import field_lines, locate
from triton_doctor.triton.repository_model import ModelView, read_version_dir

from tests.helpers import DEMO


@pytest.mark.parametrize(
    ("name", "number", "quirk"),
    [
        ("1", 1, None), ("0", 0, None), ("42", 42, None),
        ("01", None, "leading-zeros"), ("00", None, "leading-zeros"),
        ("v1", None, "not-numeric"), (".ipynb_checkpoints", None, "not-numeric"),
        ("1_backup", 1, "prefix"), ("2.old", 2, "prefix"), ("-1", -1, "prefix"),
        ("+4", 4, "prefix"), (" 5", 5, "prefix"),
        ("99999999999999999999", None, "overflow"),
        ("warmup", None, "reserved"), ("configs", None, "reserved"),
    ],
)
def test_version_dirs_read_like_stoll(name: str, number: int | None, quirk: str | None) -> None:
    version = read_version_dir(name)
    assert (version.number, version.quirk) == (number, quirk)


def test_field_lines_follow_repeated_messages_and_lists() -> None:
    text = (
        'name: "m"  # comment with { braces\n'
        "input [\n"
        "  { name: \"a\" dims: [ 1 ] },\n"
        "  {\n"
        '    name: "b"\n'
        "    dims: [ 2 ]\n"
        "  }\n"
        "]\n"
        "instance_group { kind: KIND_CPU }\n"
        "instance_group {\n"
        "  count: 2\n"
        "}\n"
        "dynamic_batching {\n"
        "  max_queue_delay_microseconds: 10\n"
        "}\n"
    )
    lines = field_lines(text)
    assert locate(lines, "input[1].dims") == 6
    assert locate(lines, "input[0].dims") == 3
    assert locate(lines, "instance_group[1].count") == 11
    assert locate(lines, "instance_group[1].gpus") == 10
    assert locate(lines, "dynamic_batching.max_queue_delay_microseconds") == 14
    assert locate(lines, "output[0]") is None


def test_field_lines_survive_malformed_text() -> None:
    assert locate(field_lines("input [ { name: \"a\" dims: [ 1 }}}"), "input[0].name") == 1


def test_evidence_round_trips_through_json() -> None:
    evidence = Evidence(repository=collect_repository(DEMO))
    data = json.loads(json.dumps(to_jsonable(evidence)))
    again = from_jsonable(Evidence, data)
    assert to_jsonable(again) == to_jsonable(evidence)
    assert again.repository is not None
    broken = {m.name: m.config.syntax_error for m in again.repository.models}
    assert broken["bert_tokenizer"] is not None and broken["sentiment"] is None


def test_collector_lists_versions_and_tree(tmp_path: Path) -> None:
    (tmp_path / "m" / "1" / "sub").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text("")
    (tmp_path / "m" / "labels.txt").write_text("a\n")
    (tmp_path / "notes.txt").write_text("files at the root are not models")
    repository = collect_repository(tmp_path)
    (model,) = repository.models
    assert [s.name for s in model.subdirs] == ["1"]
    assert model.subdirs[0].entries == ["model.py", "sub/"]
    assert {"labels.txt", "1/", "1/model.py", "1/sub/"} <= set(model.tree)
    assert not model.config.present


def _complete(config_text: str, name: str, subdirs: dict[str, list[str]]) -> tuple[str, ...]:
    from triton_doctor.evidence import ConfigFile, ModelDir, Subdir
    from triton_doctor.triton import model_config, normalize

    model = ModelDir(name=name, path=f"/r/{name}", config=ConfigFile("/r/config.pbtxt", True),
                     subdirs=[Subdir(n, entries) for n, entries in sorted(subdirs.items())])
    config, error = normalize.complete(model_config.parse(config_text), name, model)
    return config.backend, config.platform, config.default_model_filename, error or ""


@pytest.mark.parametrize(
    ("config", "name", "subdirs", "expected"),
    [
        ("", "m", {"1": ["model.onnx"]}, ("onnxruntime", "onnxruntime_onnx", "model.onnx", "")),
        ("", "m", {"1": ["model.onnx/"]}, ("onnxruntime", "onnxruntime_onnx", "model.onnx", "")),
        ("", "m", {"1": ["model.plan/"]}, ("", "", "", "Invalid model name")),
        ("", "m", {"1": ["model.py"]}, ("python", "", "model.py", "")),
        # Only the first subdirectory by name is looked into: a hidden one hides the model.
        ("", "m", {".ipynb_checkpoints": [], "1": ["model.py"]}, ("", "", "", "Invalid model")),
        ("", "m.identity", {}, ("identity", "", "model.identity", "")),
        ('platform: "tensorrt_plan"', "m", {}, ("tensorrt", "tensorrt_plan", "model.plan", "")),
        ('backend: "pytorch" platform: "torch_aoti"', "m", {},
         ("pytorch", "torch_aoti", "model.pt2", "")),
        ('platform: "libtorch"', "m", {}, ("pytorch", "libtorch", "model.pt", "")),
        ('platform: "ensemble"', "m", {}, ("", "ensemble", "", "")),
        ('backend: "tensorflow"', "m", {"1": ["model.graphdef"]},
         ("tensorflow", "tensorflow_graphdef", "model.graphdef", "")),
        # Core looks for the savedmodel directory first, then the graphdef file: the file wins.
        ("", "m", {"1": ["model.graphdef", "model.savedmodel/"]},
         ("tensorflow", "tensorflow_graphdef", "model.graphdef", "")),
        ('default_model_filename: "model.savedmodel"', "m", {"1": ["model.graphdef"]},
         ("tensorflow", "tensorflow_savedmodel", "model.savedmodel", "")),
    ],
)
def test_backend_inference_follows_the_server(
    config: str, name: str, subdirs: dict[str, list[str]], expected: tuple[str, ...]
) -> None:
    backend, platform, filename, error = _complete(config, name, subdirs)
    assert (backend, platform, filename) == expected[:3]
    assert error.startswith(expected[3]) if expected[3] else error == ""


def test_a_failing_rule_is_reported_as_skipped_not_raised() -> None:
    from triton_doctor.engine import run
    from triton_doctor.findings import Severity
    from triton_doctor.registry import Rule

    def broken(model: object, repository: object) -> list[object]:
        raise KeyError("boom")

    rule = Rule("TD999", "broken", Severity.ERROR, "t", "model", (), broken)
    result = run(Evidence(repository=collect_repository(DEMO)), [rule])
    assert not result.findings
    assert result.skipped and "internal error in the rule (KeyError" in result.skipped[0].reason
    # The JSON report says so, for a harness (the differential fuzzer) to count it.
    skipped = json.loads(json_report.render(result, {}, 0))["skipped"]
    assert [s["internal"] for s in skipped] == [True] * len(result.skipped)


def test_tree_shows_absent_only_within_the_depth_the_walk_lists(tmp_path: Path) -> None:
    """The walk lists MAX_TREE_DEPTH levels: a deeper file (a label file, an environment's
    bin/activate) is unknown, not missing."""
    model = tmp_path / "m"
    (model / "a" / "b" / "c" / "d").mkdir(parents=True)
    (model / "a" / "b" / "c" / "listed.txt").touch()
    (model / "a" / "b" / "c" / "d" / "deep.txt").touch()
    view = ModelView(collect_repository(tmp_path).models[0], CheckOptions())
    assert MAX_TREE_DEPTH == 4
    assert "a/b/c/listed.txt" in view.dir.tree
    assert not view.tree_shows_absent("a/b/c/listed.txt")
    assert view.tree_shows_absent("a/b/c/gone.txt")
    assert "a/b/c/d/deep.txt" not in view.dir.tree
    assert not view.tree_shows_absent("a/b/c/d/deep.txt")
    assert not view.tree_shows_absent("a/b/c/d/gone.txt")


def test_per_repository_works_out_once_per_view() -> None:
    from triton_doctor.evidence import CheckOptions
    from triton_doctor.triton.repository_model import RepositoryView, per_repository

    calls: list[RepositoryView] = []

    @per_repository
    def names(repository: RepositoryView) -> list[str]:
        calls.append(repository)
        return [model.name for model in repository.models]

    evidence = collect_repository(DEMO)
    first, second = (RepositoryView(evidence, CheckOptions()) for _ in range(2))
    assert names(first) is names(first) and names(second) == names(first)
    assert calls == [first, second]
