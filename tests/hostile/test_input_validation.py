"""Hostile flags, settings files and snapshots (issue 10, item 6): each is refused with exit 2
naming the flag, the file and the field, never with a traceback; and a settings file above the
project never switches rules off unseen."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from triton_doctor import cli, records
from triton_doctor.checks.repository import collect_repository
from triton_doctor.evidence import ContainerEvidence, to_jsonable

from tests.helpers import DEMO, GOOD_CONFIG, ROOT, run_cli, tree_state, write_model

INCIDENT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"
REPORT_SCHEMA = json.loads((ROOT / "doctor" / "schema" / "report.schema.json").read_text())
ZERO_DIM = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
TIMEOUT = 30


@contextlib.contextmanager
def _unchanged(root: Path) -> Iterator[None]:
    before = tree_state(root)
    yield
    assert tree_state(root) == before


def _refused(proc: Any, *needles: str) -> None:
    """Exit 2, no traceback, and every needle in what was said."""
    said = proc.stdout + proc.stderr
    assert proc.returncode == 2, said
    assert "Traceback" not in said
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


# Flags ----------------------------------------------------------------------------------------

FLAG_CASES = [
    ("watch", "--interval", value) for value in ("-1", "nan", "0", "inf", "1e6")
] + [
    ("check", "--timeout", value) for value in ("inf", "nan", "-1", "0", "1e9", "x")
] + [
    ("check", "--window", value) for value in ("inf", "nan", "-1", "1e9")
] + [
    ("snapshot", "--timeout", "inf"), ("snapshot", "--window", "1e400"),
    ("config", "--gpus", "-1"), ("config", "--gpus", "100000000"),
]


@pytest.mark.parametrize(("command", "flag", "value"), FLAG_CASES)
def test_numeric_flag_out_of_range_is_a_usage_error(tmp_path: Path, command: str, flag: str,
                                                    value: str) -> None:
    inputs = tmp_path / "in"
    write_model(inputs, "m", GOOD_CONFIG)
    out = tmp_path / "snapshot.json"
    target = {
        "watch": ["--url", "127.0.0.1:9"],
        "check": ["--url", "127.0.0.1:9"],
        "snapshot": ["--url", "127.0.0.1:9", "-o", str(out)],
        "config": [str(inputs / "m")],
    }[command]
    with _unchanged(inputs):
        proc = run_cli(command, *target, flag, value, timeout=TIMEOUT)
    _refused(proc, f"argument {flag}")
    assert not out.exists()


def test_flag_bounds_are_in_the_help_and_the_edges_accepted() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["check", "--url", "x", "--window", "0", "--timeout", "3600"])
    assert (args.window, args.timeout) == (0.0, 3600.0)
    assert parser.parse_args(["watch", "--url", "x", "--interval", "0.1"]).interval == 0.1
    assert parser.parse_args(["config", "m", "--gpus", "0"]).gpus == 0
    help_text = run_cli("watch", "--help").stdout
    assert "0.1 to 86400" in help_text and "0 to 3600" in help_text


# Settings -------------------------------------------------------------------------------------

SETTINGS_CASES = [
    # (file name, text, what the message must name)
    ("pyproject.toml", "tool = 5\n", "[tool]"),
    ("pyproject.toml", "[tool]\ntriton-doctor = 5\n", "[tool.triton-doctor]"),
    ("pyproject.toml", "[tool.triton-doctor]\nfail_on = 'warning'\n", "did you mean fail-on"),
    (".triton-doctor.toml", "select = 5\n", "select"),
    (".triton-doctor.toml", "ignore = [1]\n", "ignore"),
    (".triton-doctor.toml", "fail-on = 1\n", "fail-on"),
    (".triton-doctor.toml", "fail-on = 'warn'\n", "fail-on"),
    (".triton-doctor.toml", "disable-auto-complete-config = 'no'\n",
     "disable-auto-complete-config"),
    (".triton-doctor.toml", "model-config-name = ['a']\n", "model-config-name"),
    (".triton-doctor.toml", "backends = {a = 1}\n", "backends"),
    (".triton-doctor.toml", "thresholds = 5\n", "thresholds"),
    (".triton-doctor.toml", "[thresholds]\nqueue-ms = 'x'\n", "thresholds.queue-ms"),
    (".triton-doctor.toml", "[thresholds]\nqueue-ms = inf\n", "thresholds.queue-ms"),
    (".triton-doctor.toml", "[thresholds]\nqueue-ms = nan\n", "thresholds.queue-ms"),
    (".triton-doctor.toml", "[thresholds]\nqueue-ms = -1\n", "thresholds.queue-ms"),
    (".triton-doctor.toml", "[thresholds]\nqueue-ms = true\n", "thresholds.queue-ms"),
    (".triton-doctor.toml", "[thresholds]\nqueue-share = 2\n", "thresholds.queue-share"),
    (".triton-doctor.toml", "[thresholds]\nqueue_ms = 1\n", "did you mean queue-ms"),
    (".triton-doctor.toml", "waive = 5\n", "waive"),
    (".triton-doctor.toml", "waive = [5]\n", "waive #1"),
    (".triton-doctor.toml", "[[waive]]\nrules = ['TD212']\nreason = 5\n", "waive #1"),
    (".triton-doctor.toml", "[[waive]]\nrules = ['TD212']\nmodel = ['a']\nreason = 'r'\n",
     "did you mean models"),
    (".triton-doctor.toml", "select = []\nignore = \n", "line 2"),
    (".triton-doctor.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    (".triton-doctor.toml", "model-config-name = '../../../etc/passwd'\n", "bare name"),
    (".triton-doctor.toml", "model-config-name = '..'\n", "bare name"),
]


@pytest.mark.parametrize(("name", "text", "needle"), SETTINGS_CASES)
def test_malformed_settings_are_a_usage_error_naming_file_and_key(
        tmp_path: Path, name: str, text: str, needle: str) -> None:
    inputs = tmp_path / "in"
    settings = inputs / name
    write_model(inputs / "models", "m", ZERO_DIM)
    settings.write_text(text)
    with _unchanged(inputs):
        proc = run_cli("check", "--config", str(settings), str(inputs / "models"),
                       timeout=TIMEOUT)
    _refused(proc, str(settings), needle)


def _outside_any_project(path: Path) -> None:
    if any((p / marker).exists() for p in path.parents for marker in (".git", ".hg")):
        pytest.skip(f"{path} lies inside a project: the test needs a directory outside any")


def _shared(tmp_path: Path) -> tuple[Path, Path]:
    """A shared directory whose settings file switches every rule off, and a repository with a
    failing model two levels under it."""
    shared = tmp_path / "shared"
    (shared / "work").mkdir(parents=True)
    (shared / ".triton-doctor.toml").write_text('ignore = ["TD"]\n')
    repo = shared / "work" / "models"
    write_model(repo, "broken", ZERO_DIM)
    write_model(repo, "fine", GOOD_CONFIG)
    return shared, repo


def test_settings_in_a_shared_directory_above_no_project_are_not_applied(tmp_path: Path) -> None:
    _outside_any_project(tmp_path)
    _, repo = _shared(tmp_path)
    with _unchanged(tmp_path):
        proc = run_cli("check", str(repo), timeout=TIMEOUT)
        report = json.loads(run_cli("check", "--format", "json", str(repo)).stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TD212" in proc.stdout and "· 0 rules" not in proc.stdout
    assert "settings:" not in proc.stdout and "settings" not in report["target"]
    assert report["summary"]["models"] == 2


def test_settings_above_the_project_root_are_not_applied(tmp_path: Path) -> None:
    _outside_any_project(tmp_path)
    shared, repo = _shared(tmp_path)
    (shared / "work" / "pyproject.toml").write_text('[project]\nname = "serving"\n')
    with _unchanged(tmp_path):
        proc = run_cli("check", str(repo), timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "TD212" in proc.stdout


def test_settings_inside_the_project_apply_and_are_named(tmp_path: Path) -> None:
    _outside_any_project(tmp_path)
    shared, repo = _shared(tmp_path)
    (shared / ".git").mkdir()
    applied = str(shared / ".triton-doctor.toml")
    with _unchanged(tmp_path):
        proc = run_cli("check", str(repo), timeout=TIMEOUT)
        as_json = run_cli("check", "--format", "json", str(repo), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"settings: {applied}" in proc.stdout.splitlines()
    report = json.loads(as_json.stdout)
    assert report["target"]["settings"] == applied
    jsonschema.validate(report, REPORT_SCHEMA)


def test_settings_in_the_repository_itself_apply_outside_any_project(tmp_path: Path) -> None:
    _outside_any_project(tmp_path)
    _, repo = _shared(tmp_path)
    (repo / ".triton-doctor.toml").write_text('select = ["TD224"]\n')
    proc = run_cli("check", str(repo), timeout=TIMEOUT)
    assert proc.returncode == 0 and "TD212" not in proc.stdout, proc.stdout + proc.stderr
    assert f"settings: {repo / '.triton-doctor.toml'}" in proc.stdout.splitlines()


# Snapshots ------------------------------------------------------------------------------------

def _filled(hint: Any) -> Any:
    """A value of type ``hint`` with every field set, so that every field can be mutated."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _filled(next(a for a in typing.get_args(hint) if a is not type(None)))
    if origin is list:
        return [_filled(typing.get_args(hint)[0])]
    if origin is dict:
        return {"k": _filled(typing.get_args(hint)[1])}
    if records.is_record(hint):
        hints = typing.get_type_hints(hint)
        return {f.name: _filled(hints[f.name]) for f in records.fields(hint)
                if not f.metadata.get("transient")}
    return {str: "s", int: 1, float: 1.5, bool: True}.get(hint, {"k": 1})


def _trimmed(value: Any) -> Any:
    """Lists cut to their first two items: every field kept, a tenth of the size."""
    if isinstance(value, list):
        return [_trimmed(item) for item in value[:2]]
    if isinstance(value, dict):
        return {key: _trimmed(item) for key, item in value.items()}
    return value


def _real_snapshot() -> dict[str, Any]:
    """The recorded incident, with a real repository (the demo) and a container added."""
    document = _trimmed(json.loads(INCIDENT.read_text()))
    document["evidence"]["repository"] = _trimmed(to_jsonable(collect_repository(str(DEMO))))
    document["evidence"]["container"] = _filled(ContainerEvidence)
    return document


def _leaves(value: Any, path: str) -> Iterator[str]:
    """The first path of every field (list items beyond the first stand for the same field)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            if path != "evidence.server.models[0]" or key != "config":
                yield from _leaves(item, f"{path}.{key}")
            else:  # the served config is free-form JSON: mutated whole only
                yield f"{path}.{key}"
    elif isinstance(value, list) and value:
        yield from _leaves(value[0], f"{path}[0]")


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    parts = path.replace("[", ".[").split(".")
    where: Any = changed
    for part in parts[:-1]:
        where = where[int(part[1:-1])] if part.startswith("[") else where[part]
    last = parts[-1]
    if last.startswith("["):
        where[int(last[1:-1])] = value
    else:
        where[last] = value
    return changed


MUTATIONS = [None, 0, -1, 1e308, "x", [], {}, True]


def _check_in_process(path: Path) -> tuple[int, str]:
    """``check --snapshot path --format json`` in this process (a traceback fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["check", "--snapshot", str(path), "--format", "json"])
    return code, err.getvalue()


def test_every_field_of_a_snapshot_mutated_is_judged_or_refused(tmp_path: Path) -> None:
    document = _real_snapshot()
    target = tmp_path / "mutated.snapshot.json"
    target.write_text(json.dumps(document))
    assert _check_in_process(target)[0] in (0, 1)
    refused = 0
    paths = list(_leaves(document["evidence"], "evidence"))[1:]
    for path in paths:
        for value in MUTATIONS:
            target.write_text(json.dumps(_set(document, path, value)))
            code, said = _check_in_process(target)
            assert code in (0, 1, 2), (path, value, said)
            if code == 2:
                refused += 1
                assert "snapshot" in said and str(target) in said and path in said, (
                    path, value, said)
    assert refused > len(paths) * 3  # the wrong types, at least (half the values are)


@pytest.mark.parametrize(("path", "value"), [
    ("evidence.server.models[0].name", ["x"]),           # a str given a list
    ("evidence.server.samples[0].stats[0].queue_ns", "x"),  # an int given a str
    ("evidence.host.dev_shm_total_bytes", True),          # an int given a bool
    ("evidence.gpu.devices[0].memory_total_bytes", 1.5),  # an int given a float
    ("evidence.metrics.scrapes[0].at", "soon"),           # a float given a str
    ("evidence.metrics.scrapes[0].samples[0].value", float("nan")),  # not finite
    ("evidence.server.extensions", {"a": 1}),             # a list given a dict
    ("evidence.server", ["x"]),                           # a dataclass given a list
    ("evidence.server.models[0].config", "x"),            # an Optional dict given a str
    ("evidence.unavailable", {"gpu": 5}),                 # a dict's value of the wrong type
    ("evidence.host.owners_complete", 1),                 # a bool given an int
    ("evidence.options", None),                           # a required part given null
])
def test_malformed_snapshot_is_refused_naming_file_and_field(tmp_path: Path, path: str,
                                                            value: Any) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    snapshot = inputs / "incident.snapshot.json"
    snapshot.write_text(json.dumps(_set(_real_snapshot(), path, value)))
    with _unchanged(inputs):
        proc = run_cli("check", "--snapshot", str(snapshot), timeout=TIMEOUT)
    _refused(proc, "snapshot", str(snapshot), path)


def _nested(depth: int) -> dict[str, Any]:
    config: dict[str, Any] = {"name": "m"}
    for _ in range(depth):
        config = {"parameters": config}
    return config


def test_snapshot_with_a_config_nested_500_deep_is_refused(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    snapshot = inputs / "deep.snapshot.json"
    snapshot.write_text(json.dumps(
        _set(_real_snapshot(), "evidence.server.models[0].config", _nested(500))))
    with _unchanged(inputs):
        proc = run_cli("check", "--snapshot", str(snapshot), timeout=TIMEOUT)
    _refused(proc, str(snapshot), "evidence.server.models[0].config", "nested deeper")


def test_served_config_nested_500_deep_is_not_kept_and_the_snapshot_is_written(
        tmp_path: Path) -> None:
    from tests.test_server_collector import HEALTHY, http_server

    routes = {**HEALTHY, "GET /v2/models/m/config": (200, json.dumps(_nested(500)).encode())}
    out = tmp_path / "served.snapshot.json"
    with http_server(routes) as url:
        proc = run_cli("snapshot", "--url", url, "--window", "0", "--timeout", "2",
                       "-o", str(out), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    server = json.loads(out.read_text())["evidence"]["server"]
    assert server["models"][0]["config"] is None
    assert "nested deeper" in server["errors"]["GET /v2/models/m/config"]
    judged = run_cli("check", "--snapshot", str(out), timeout=TIMEOUT)
    assert judged.returncode in (0, 1) and "Traceback" not in judged.stderr, judged.stderr


@pytest.mark.parametrize("output", ["text", "json", "sarif"])
def test_snapshot_text_with_lone_surrogates_is_judged(tmp_path: Path, output: str) -> None:
    """JSON can spell a lone surrogate (\\ud800), which UTF-8 cannot encode: the finding's
    fingerprint hashed it as UTF-8 and ended in a traceback."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    snapshot = inputs / "incident.snapshot.json"
    document = _set(_real_snapshot(), "evidence.server.models[0].reason", "load failed \ud800")
    snapshot.write_text(json.dumps(document))  # ensure_ascii: written as the escape \ud800
    with _unchanged(inputs):
        proc = run_cli("check", "--format", output, "--snapshot", str(snapshot), timeout=TIMEOUT)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "load failed" in proc.stdout
