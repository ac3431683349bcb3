"""Attacker-sized structures in a config or a model.py: bounded time and memory, a finding or a
clean "not followed" instead of a hang or a traceback, and the other models still judged."""

from __future__ import annotations

import functools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import GOOD_CONFIG, run_cli, tree_state, write_model

TIMEOUT_S = 90
MEMORY_BYTES = 2 << 30
#: A model every test puts beside the hostile one: its finding shows the run went on.
JUDGED_CONFIG = GOOD_CONFIG.replace("dims: [ 4 ] }", "dims: [ 0 ] }", 1)

#: The CLI under a time and an address-space limit.
_run = functools.partial(run_cli, timeout=TIMEOUT_S, memory_bytes=MEMORY_BYTES)


def _repository(tmp_path: Path) -> Path:
    """A repository holding the model ``judged`` with one known finding (TD212)."""
    repo = tmp_path / "repo"
    write_model(repo, "judged", JUDGED_CONFIG)
    return repo


def _check(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``check --format json``: exit 1 for the finding in ``judged``, no traceback, nothing
    under ``repo`` changed."""
    before = tree_state(repo)
    proc = _run("check", "--format", "json", *args, str(repo))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said[-3000:]
    assert "Traceback" not in said
    assert tree_state(repo) == before
    report = json.loads(proc.stdout)
    assert ("judged", "TD212") in {(f["model"], f["rule"]) for f in report["findings"]}
    return proc, report


def _rules_for(report: dict[str, Any], model: str) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["model"] == model}


# config.pbtxt -----------------------------------------------------------------------------------

def test_half_a_million_dims_with_a_reshape_are_judged_in_linear_time(tmp_path: Path) -> None:
    """Element counts multiplied out as big integers were quadratic: minutes for this file."""
    repo = _repository(tmp_path)
    dims = ",".join(["65535"] * 500_000)
    write_model(repo, "wide", f"""
backend: "python"
max_batch_size: 0
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {dims} ] reshape: {{ shape: [ {dims} ] }} }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ 2, 3 ] reshape: {{ shape: [ 7 ] }} }} ]
""")
    _, report = _check(repo)
    # Past int64 the server's own count overflows: no claim; the small mismatch is still seen.
    assert [f["location"]["field"] for f in report["findings"]
            if f["model"] == "wide" and f["rule"] == "TD213"] == ["output[0].reshape"]


def test_element_counts_past_int64_are_unknown_not_big_integers() -> None:
    from triton_doctor.rules._common import INT64_MAX, dims_product
    from triton_doctor.rules.config_io import element_count

    assert element_count([2**31, 2**31, 2]) is None
    assert element_count([2**31, 2**31, 2, -1]) == -1
    assert element_count([]) == 0
    assert dims_product([3, INT64_MAX // 3]) == INT64_MAX // 3 * 3
    assert dims_product([2] * 10**6, start=4) is None


# model.py -----------------------------------------------------------------------------------------

NESTED_LOOPS = """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        sizes = [{sizes}]
        for a in sizes:
            for b in sizes:
                for c in sizes:
                    auto_complete_model_config.add_input(
                        {{"name": "x", "data_type": "TYPE_FP32", "dims": [a, b, c]}})
        return auto_complete_model_config

    def execute(self, requests):
        return []
""".format(sizes=", ".join(str(n) for n in range(1, 257)))


def test_auto_complete_loops_share_one_budget(tmp_path: Path) -> None:
    """Three nested 256-item loops were 16.7 M followed calls and 2.3 GB."""
    repo = _repository(tmp_path)
    write_model(repo, "loops", GOOD_CONFIG, {"1/model.py": NESTED_LOOPS})
    _, report = _check(repo)
    notes = [f["message"] for f in report["findings"]
             if (f["model"], f["rule"]) == ("loops", "TD114")]
    assert any(note.startswith("auto_complete_config of 1/model.py was not followed")
               and "stopped after" in note for note in notes), notes


def test_auto_complete_not_followed_says_why() -> None:
    import ast

    from triton_doctor.checks.autocomplete_calls import follow

    function = ast.parse(NESTED_LOOPS).body[0].body[0]  # type: ignore[attr-defined]
    facts = follow(function)
    assert not facts.exact and "stopped after" in (facts.not_followed or "")


@pytest.mark.parametrize("expression", [
    "1+" * 1_000_000 + "1",        # RecursionError in the parser
    "-" * 1_000_000 + "1",          # MemoryError in the parser
    "(" * 100_000 + ")" * 100_000,  # SyntaxError: too many nested parentheses
    "[" * 5000 + "]" * 5000,
])
def test_model_py_nested_too_deeply_is_a_finding_for_that_file(tmp_path: Path,
                                                               expression: str) -> None:
    repo = _repository(tmp_path)
    write_model(repo, "deep", GOOD_CONFIG, {"1/model.py": f"x = {expression}\n"})
    _, report = _check(repo)
    found = [f for f in report["findings"] if f["model"] == "deep" and f["rule"] == "TD301"]
    assert found and "1/model.py" in found[0]["message"], report["findings"]


@pytest.mark.parametrize("argument", [
    "-" * 2000 + "8",                   # parses; a UnaryOp chain 2000 deep
    "sizes" + "[0]" * 2000,             # a Subscript chain
])
def test_auto_complete_argument_nested_deeply_is_unknown(tmp_path: Path, argument: str) -> None:
    """Expressions the parser accepts but that nest deeper than the follower's stack."""
    repo = _repository(tmp_path)
    write_model(repo, "deep", GOOD_CONFIG, {"1/model.py": f"""
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        sizes = [8]
        config.set_max_batch_size({argument})
        return config

    def execute(self, requests):
        return []
"""})
    _, report = _check(repo)
    assert not _rules_for(report, "deep") & {"TD301", "TD309"}


def test_auto_complete_elif_chain_thousands_long_is_followed_partly(tmp_path: Path) -> None:
    chain = "".join(f"        elif x == {n}:\n            config.set_max_batch_size({n})\n"
                    for n in range(2000))
    repo = _repository(tmp_path)
    write_model(repo, "deep", GOOD_CONFIG, {"1/model.py": f"""
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        x = 1
        if x:
            pass
{chain}        return config

    def execute(self, requests):
        return []
"""})
    _, report = _check(repo)
    assert "TD301" not in _rules_for(report, "deep")


def test_a_hundred_thousand_model_class_statements_are_read_in_linear_time(
        tmp_path: Path) -> None:
    """Each class statement was looked up in the module's body: 140,000 took 287 s."""
    repo = _repository(tmp_path)
    write_model(repo, "classes", GOOD_CONFIG,
                {"1/model.py": "class TritonPythonModel:\n    pass\n" * 100_000})
    _, report = _check(repo)
    assert "TD313" not in _rules_for(report, "classes")


# config.pbtxt nested ----------------------------------------------------------------------------

def test_config_nested_ten_thousand_deep_is_a_syntax_finding(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    write_model(repo, "deep", 'backend: "python"\nparameters ' + "{ " * 10_000 + "}" * 10_000)
    _, report = _check(repo)
    assert "TD201" in _rules_for(report, "deep"), report["findings"]


# served configs ---------------------------------------------------------------------------------

def test_served_config_nested_past_the_parsers_stack_is_an_error_of_that_endpoint(
        tmp_path: Path) -> None:
    """json.loads raises RecursionError on it (a config nested 500 deep, which parses but is
    too deep to keep, is tests/hostile/test_input_validation.py's)."""
    body = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    from tests.test_server_collector import HEALTHY, http_server

    repo = _repository(tmp_path)
    routes = {**HEALTHY,
              "POST /v2/repository/index": (200, b'[{"name":"judged","version":"1",'
                                                 b'"state":"READY"}]'),
              "GET /v2/models/judged/config": (200, body)}
    out = tmp_path / "served.snapshot.json"
    with http_server(routes) as url:
        _check(repo, "--url", url, "--timeout", "5")
        proc = _run("snapshot", "--url", url, "--window", "0", "--timeout", "5", "-o", str(out),
                    str(repo))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    server = json.loads(out.read_text())["evidence"]["server"]
    assert server["models"][0]["config"] is None
    assert "GET /v2/models/judged/config" in server["errors"]


# ensembles --------------------------------------------------------------------------------------

def _chain(steps: list[tuple[str, str]], outputs: str = "t9") -> str:
    """An ensemble of steps of model ``m`` (input i, output o), each (consumed, produced)."""
    text = " ".join(
        f'step {{ model_name: "m" model_version: -1 input_map {{ key: "i" value: "{used}" }} '
        f'output_map {{ key: "o" value: "{made}" }} }}' for used, made in steps)
    return (f'platform: "ensemble"\nmax_batch_size: 0\n'
            f'input [ {{ name: "t0" data_type: TYPE_FP32 dims: [ 1 ] }} ]\n'
            f'output [ {{ name: "{outputs}" data_type: TYPE_FP32 dims: [ 1 ] }} ]\n'
            f"ensemble_scheduling {{ {text} }}\n")


UNUSED = [f"ensemble tensor 't{n}' is unused in ensemble 'e'" for n in range(4, 9)]


@pytest.mark.parametrize(("steps", "expected"), [
    # Listed backwards, connected: nothing to say.
    ([(f"t{n}", f"t{n + 1}") for n in reversed(range(9))], []),
    # t5 comes from nowhere: t9 is not written, and the walk back names t5.
    ([(f"t{n}", f"t{n + 1}") for n in reversed(range(9)) if n != 4] + [("t0", "u")],
     ["output 't9' for ensemble 'e' is not written: at least one of its depending tensors, "
      "'t5', is not connected", *UNUSED, "ensemble tensor 'u' is unused in ensemble 'e'"]),
    # t5 and t6 produce each other: not written, and no tensor to blame.
    ([(f"t{n}", f"t{n + 1}") for n in reversed(range(9)) if n != 4] + [("t6", "t5")],
     ["output 't9' for ensemble 'e' is not written", *UNUSED]),
])
def test_ensemble_flow_walk_keeps_its_answers(steps: list[tuple[str, str]],
                                              expected: list[str]) -> None:
    from triton_doctor.rules.ensemble_structure import _flow_problems
    from triton_doctor.triton import model_config

    config = model_config.parse(_chain(steps))
    config.name = "e"
    assert [text for text, _ in _flow_problems(config)] == expected


def test_ensemble_chain_listed_backwards_is_judged_in_linear_time(tmp_path: Path) -> None:
    """Readiness was a fixpoint over the step list: one pass per step, 46 s for 4,000 steps."""
    repo = _repository(tmp_path)
    write_model(repo, "m", """
backend: "python"
max_batch_size: 0
input [ { name: "i" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "o" data_type: TYPE_FP32 dims: [ 1 ] } ]
""")
    write_model(repo, "e", _chain([(f"t{n}", f"t{n + 1}") for n in reversed(range(40_000))],
                                  outputs="t40000"), files={})
    (repo / "e" / "1").mkdir()
    _, report = _check(repo)
    assert not _rules_for(report, "e") | _rules_for(report, "m")


def test_steps_times_inputs_findings_are_bounded_per_step(tmp_path: Path) -> None:
    """Every step listed every unmapped input, each finding naming all inputs again: 300 steps
    of a 2,000-input model were 600,000 findings of 20 KB each."""
    repo = _repository(tmp_path)
    inputs = " ".join(f'input {{ name: "i{n}" data_type: TYPE_FP32 dims: [ 1 ] }}'
                      for n in range(2000))
    write_model(repo, "m", f"""
backend: "python"
max_batch_size: 0
{inputs}
output [ {{ name: "o" data_type: TYPE_FP32 dims: [ 1 ] }} ]
""")
    steps = " ".join('step { model_name: "m" model_version: -1 input_map { key: "i0" value: "x" }'
                     f' output_map {{ key: "o" value: "y{n}" }} }}' for n in range(300))
    write_model(repo, "e", 'platform: "ensemble"\nmax_batch_size: 0\n'
                'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                'output [ { name: "y0" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                f"ensemble_scheduling {{ {steps} }}\n", files={})
    (repo / "e" / "1").mkdir()
    _, report = _check(repo)
    step = [f for f in report["findings"] if f["rule"] == "TD412"
            and f["message"].startswith("step 7 ")]
    assert len(step) == 65, [f["message"] for f in step]
    assert step[0]["message"].endswith("input i1 in model m is not mapped to any ensemble tensors")
    assert step[-1]["message"].endswith("1,935 more inputs of model m are not mapped to any "
                                        "ensemble tensors (the first 64 are listed)")
    assert step[0]["fix"].endswith("i255, ... (2,000 in all) and outputs o; map those names.")


def test_config_tensors_missing_from_a_wide_model_name_its_tensors_once(tmp_path: Path) -> None:
    """Each stray config input sorted and listed all the model's inputs: 5,000 strays against
    a 5,000-input ONNX model were 25 M names sorted and 500 MB of messages."""
    pytest.importorskip("onnx")
    from fixtures.generate import onnx_models

    repo = _repository(tmp_path)
    inputs = " ".join(f'input {{ name: "x{n}" data_type: TYPE_FP32 dims: [ 1 ] }}'
                      for n in range(5000))
    model = write_model(repo, "wide", f"""
backend: "onnxruntime"
max_batch_size: 0
{inputs}
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ 1 ] }} ]
""", files={})
    (model / "1").mkdir()
    onnx_models.build(str(model / "1" / "model.onnx"),
                      [(f"i{n}", "FLOAT", [1]) for n in range(5000)], [("y", "FLOAT", [1])])
    _, report = _check(repo)
    stray = [f for f in report["findings"] if f["model"] == "wide"
             and "is not in the model" in f["message"]]
    assert len(stray) == 5000
    assert stray[0]["message"].endswith(", ... (5,000 in all)")


@pytest.mark.parametrize("dims", [
    "[" * 70 + "1" + "]" * 70,  # read 70 lists deep: refused by the snapshot's reader
    "[b'\\xff', 1j, ...]",       # constants JSON cannot write
    "[10**0, 10000000000000000000000000000000, 1e999]",  # past int64; infinity
    "{1: 2}",                   # a key JSON would turn into a string
])
def test_auto_complete_argument_is_saved_and_replayed(tmp_path: Path, dims: str) -> None:
    """Every argument the follower keeps can be written into a snapshot and read back."""
    from tests.test_server_collector import HEALTHY, http_server

    repo = _repository(tmp_path)
    write_model(repo, "m", GOOD_CONFIG, {"1/model.py": f"""
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": {dims}}})
        return config

    def execute(self, requests):
        return []
"""})
    out = tmp_path / "served.snapshot.json"
    with http_server(HEALTHY) as url:
        proc = _run("snapshot", "--url", url, "--window", "0", "--timeout", "5", "-o", str(out),
                    str(repo))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    replayed = _run("check", "--format", "json", "--snapshot", str(out))
    assert replayed.returncode == 1, replayed.stdout[-3000:] + replayed.stderr[-3000:]
    assert ("judged", "TD212") in {(f["model"], f["rule"])
                                   for f in json.loads(replayed.stdout)["findings"]}


@pytest.mark.parametrize("tail", [
    'parameters { key: "k" value { string_value: "' + '\\"' * 40_000,  # unclosed, escaped quotes
    "dynamic_batching " + "{" * 100_000,
    "${" * 50_000,
])
def test_long_lines_of_a_config_that_does_not_parse_are_scanned_in_linear_time(
        tmp_path: Path, tail: str) -> None:
    """The locating and template regexes rescanned such a line from every position: 20 KB of
    escaped quotes took 37 s, 196 KB of braces over a minute."""
    repo = _repository(tmp_path)
    write_model(repo, "long", 'name: "long"\nbackend: "onnxruntime"\n' + tail + "\n", {})
    started = time.monotonic()
    _, report = _check(repo)
    assert time.monotonic() - started < 20
    assert _rules_for(report, "long") & {"TD201", "TD202"} and _rules_for(report, "judged")
