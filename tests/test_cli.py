"""The command line as users and pipelines meet it: exit codes, formats, selection, docs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import DEMO, GOOD_CONFIG, ROOT, check_json, run_cli, write_model

SCHEMA = json.loads((ROOT / "doctor" / "schema" / "report.schema.json").read_text())


def test_demo_fires_at_least_ten_rules_and_exits_1() -> None:
    proc = run_cli("check", str(DEMO))
    assert proc.returncode == 1, proc.stderr
    report = check_json(DEMO)
    rules = {f["rule"] for f in report["findings"]}
    assert len(rules) >= 10, rules
    assert report["summary"]["error"] > 0


def test_demo_text_report_fits_100_columns_and_has_no_colour_off_tty() -> None:
    out = run_cli("check", str(DEMO)).stdout
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 100, [line for line in out.splitlines() if len(line) > 100]
    assert "\x1b[" not in out
    assert "fix: " in out and "triton: " in out
    assert out.rstrip().splitlines()[-1].startswith("✗ ")


def test_colour_on_request() -> None:
    assert "\x1b[31m" in run_cli("check", "--color", "always", str(DEMO)).stdout


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_clean_repository_exits_0_in_every_format(tmp_path: Path, fmt: str) -> None:
    write_model(tmp_path, "good", GOOD_CONFIG)
    proc = run_cli("check", "--format", fmt, str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_json_report_matches_schema_for_findings_and_for_none(tmp_path: Path) -> None:
    jsonschema.validate(check_json(DEMO), SCHEMA)
    write_model(tmp_path, "good", GOOD_CONFIG)
    empty = check_json(tmp_path)
    jsonschema.validate(empty, SCHEMA)
    assert empty["findings"] == [] and empty["summary"]["error"] == 0


def test_json_stdout_is_only_the_document() -> None:
    proc = run_cli("check", "--format", "json", str(DEMO))
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["summary"]["exit_code"] == 1


def test_fail_on_warning_and_exit_zero(tmp_path: Path) -> None:
    write_model(tmp_path, "nobatcher", GOOD_CONFIG.replace(
        "dynamic_batching { max_queue_delay_microseconds: 100 }", ""))
    assert run_cli("check", str(tmp_path)).returncode == 0
    assert run_cli("check", "--fail-on", "warning", str(tmp_path)).returncode == 1
    assert run_cli("check", "--fail-on", "warning", "--exit-zero", str(tmp_path)).returncode == 0


def test_select_and_ignore_by_id_prefix_and_name() -> None:
    only = check_json(DEMO, "--select", "TD103")
    assert {f["rule"] for f in only["findings"]} == {"TD103"}
    family = check_json(DEMO, "--select", "TD1")
    assert all(f["rule"].startswith("TD1") for f in family["findings"])
    ignored = check_json(DEMO, "--ignore", "name-mismatch,TD2")
    rules = {f["rule"] for f in ignored["findings"]}
    assert "TD103" not in rules and not any(r.startswith("TD2") for r in rules)


def test_unknown_rule_in_select_is_a_usage_error() -> None:
    proc = run_cli("check", "--select", "TD999", str(DEMO))
    assert proc.returncode == 2 and "TD999" in proc.stderr and "Traceback" not in proc.stderr


def test_rules_and_explain() -> None:
    listing = json.loads(run_cli("rules", "--format", "json").stdout)
    assert len(listing) >= 40 and {"id", "name", "severity", "title"} <= set(listing[0])
    text = run_cli("explain", "TD213").stdout
    for section in ("What it checks:", "Why it matters:", "Example:", "Fix:"):
        assert section in text
    assert run_cli("explain", "invalid-reshape").stdout == text
    assert run_cli("explain", "TD000").returncode == 2


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("triton-doctor ")


def test_findings_carry_location_lines(tmp_path: Path) -> None:
    broken = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
    write_model(tmp_path, "m", broken)
    (finding,) = [f for f in check_json(tmp_path)["findings"] if f["rule"] == "TD212"]
    assert finding["location"]["line"] == 4
    assert finding["location"]["field"] == "input[0].dims"
    assert finding["location"]["path"].endswith("m/config.pbtxt")


def test_fingerprint_is_the_same_wherever_the_repository_lies(tmp_path: Path) -> None:
    """The documented recipe: sha256 of rule, model, version, config field and message, so
    alerting can key on it across machines and runs."""
    broken = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
    found = []
    for place in ("here", "there/deeper"):
        write_model(tmp_path / place, "m", broken)
        (finding,) = [f for f in check_json(tmp_path / place)["findings"]
                      if f["rule"] == "TD212"]
        found.append(finding)
    key = "\x1f".join(["TD212", "m", "", "input[0].dims", found[0]["message"]])
    assert found[0]["fingerprint"] == hashlib.sha256(key.encode()).hexdigest()[:16]
    assert found[1]["fingerprint"] == found[0]["fingerprint"]


def test_disable_auto_complete_config_mirrors_the_server(tmp_path: Path) -> None:
    write_model(tmp_path, "noconfig", None)
    lenient = check_json(tmp_path)
    strict = check_json(tmp_path, "--disable-auto-complete-config")
    assert [f["severity"] for f in lenient["findings"] if f["rule"] == "TD109"] == ["info"]
    (finding,) = [f for f in strict["findings"] if f["rule"] == "TD109"]
    assert finding["severity"] == "error"
    assert "failed to open text file for read" in finding["triton_message"]


def test_model_config_name_prefers_the_named_config(tmp_path: Path) -> None:
    model = write_model(tmp_path, "m", GOOD_CONFIG)
    (model / "configs").mkdir()
    (model / "configs" / "h100.pbtxt").write_text(GOOD_CONFIG.replace("max_batch_size: 8",
                                                                      "max_batch_size: -8"))
    assert not check_json(tmp_path)["findings"]
    findings = check_json(tmp_path, "--model-config-name", "h100")["findings"]
    assert [f["rule"] for f in findings] == ["TD208"]
    assert findings[0]["location"]["path"].endswith("configs/h100.pbtxt")
    assert not check_json(tmp_path, "--model-config-name", "a100")["findings"]


def test_schema_rejects_unknown_finding_fields() -> None:
    report = check_json(DEMO)
    report["findings"][0]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, SCHEMA)


def test_inline_waiver_suppresses_with_its_reason(tmp_path: Path) -> None:
    waived = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
    write_model(tmp_path, "m", "# triton-doctor: ignore[invalid-dims] fixed by the exporter\n"
                + waived)
    report = check_json(tmp_path)
    jsonschema.validate(report, SCHEMA)
    assert report["findings"] == []
    (suppressed,) = report["suppressed"]
    assert suppressed["rule"] == "TD212"
    assert suppressed["reason"] == "fixed by the exporter (config.pbtxt:1)"
    assert run_cli("check", str(tmp_path)).returncode == 0
    assert "1 suppressed inline" in run_cli("check", str(tmp_path)).stdout


def test_inline_waiver_covers_only_the_rules_it_names(tmp_path: Path) -> None:
    broken = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
    write_model(tmp_path, "m", "# triton-doctor: ignore[TD3] other family\n" + broken)
    write_model(tmp_path, "other", "# triton-doctor: ignore[TD2]\n" + GOOD_CONFIG)
    report = check_json(tmp_path)
    assert [f["rule"] for f in report["findings"]] == ["TD212"]
    assert report["suppressed"] == []


def test_negative_version_directory_is_looked_up_as_unsigned(tmp_path: Path) -> None:
    """Seen on the real 2.51 server: version -1 makes the stub look in 18446744073709551615/."""
    write_model(tmp_path, "m", GOOD_CONFIG, {"-1/model.py": "class TritonPythonModel: ...\n"})
    findings = {f["rule"]: f for f in check_json(tmp_path)["findings"]}
    assert "/m/18446744073709551615/model.py" in findings["TD108"]["triton_message"]
    assert "18446744073709551615/" in findings["TD106"]["message"]


def test_sarif_output_names_rules_lines_and_levels() -> None:
    proc = run_cli("check", "--format", "sarif", str(DEMO))
    assert proc.returncode == 1
    sarif = json.loads(proc.stdout)
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {r["rule"] for r in check_json(DEMO)["findings"]}
    results = run["results"]
    assert len(results) == len(check_json(DEMO)["findings"])
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
    located = [r for r in results if r["ruleId"] == "TD212"]
    region = located[0]["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"].endswith("text_encoder/config.pbtxt")
    assert not region["artifactLocation"]["uri"].startswith("/")
    assert region["region"]["startLine"] == 8


INCIDENT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"


@pytest.mark.parametrize("args", [
    ("watch", "--snapshot", str(INCIDENT)),
    ("check", str(DEMO), "--tui"),
])
def test_the_terminal_ui_without_a_terminal_says_what_to_use(args: tuple[str, ...]) -> None:
    proc = run_cli(*args)  # stdin and stdout are pipes here
    assert proc.returncode == 2
    assert "needs a terminal" in proc.stderr
    assert "--format json" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [
    ("watch",),
    ("watch", "--url", "localhost:8000", "--snapshot", str(INCIDENT)),
])
def test_watch_needs_one_source(args: tuple[str, ...]) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert ("give --url URL of a running server, --prometheus URL of a fleet's Prometheus, or "
            "--snapshot FILE") in proc.stderr


def test_watch_on_a_snapshot_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    saved = tmp_path / "x.json"
    saved.write_text("not json")
    proc = run_cli("watch", "--snapshot", str(saved))
    assert proc.returncode == 2
    assert str(saved) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_gpus_judges_instance_groups_for_that_machine_and_unknown_stays_silent(
        tmp_path: Path) -> None:
    write_model(tmp_path, "on_gpu", GOOD_CONFIG + "instance_group [ { kind: KIND_GPU } ]\n")
    write_model(tmp_path, "gpu_one", GOOD_CONFIG + "instance_group [ { gpus: [ 1 ] } ]\n")

    def errors(*args: str) -> set[tuple[str, str]]:
        report = check_json(tmp_path, "--select", "TD23", *args)
        return {(f["rule"], f["model"]) for f in report["findings"] if f["severity"] == "error"}

    assert errors() == set()  # the machine is unknown: nothing is claimed
    assert errors("--gpus", "0") == {("TD236", "on_gpu"), ("TD231", "gpu_one")}
    assert errors("--gpus", "1") == {("TD231", "gpu_one")}
    assert errors("--gpus", "2") == set()
    assert check_json(tmp_path, "--gpus", "2")["target"]["gpus"] == 2
    assert "gpus" not in check_json(tmp_path)["target"]
    text = run_cli("check", "--gpus", "0", str(tmp_path)).stdout
    assert text.startswith("machine: 0 GPUs (a CPU-only server)\n")
    assert "machine:" not in run_cli("check", str(tmp_path)).stdout


@pytest.mark.parametrize("value", ["-1", "1025", "two", "1.5"])
def test_gpus_is_a_count(value: str) -> None:
    proc = run_cli("check", "--gpus", value, str(DEMO))
    assert proc.returncode == 2 and "give a whole number, 0 to 1024" in proc.stderr


def test_help_tells_the_gpu_model_from_the_gpu_count() -> None:
    text = " ".join(run_cli("check", "--help").stdout.split())
    assert "how many GPUs the server can use" in text
    assert "Not --gpu, which names the GPU model" in text
    assert "the GPU model served on" in text and "(how many: --gpus)" in text


def test_a_kindless_group_naming_a_gpu_no_machine_has_is_made_kind_cpu(tmp_path: Path) -> None:
    """On any machine core's NormalizeInstanceGroup makes it KIND_CPU, which takes no gpus."""
    write_model(tmp_path, "gpu_twenty", GOOD_CONFIG + "instance_group [ { gpus: [ 20 ] } ]\n")
    (finding,) = check_json(tmp_path, "--select", "TD231")["findings"]
    assert finding["triton_message"] == ("instance group gpu_twenty_0 of model gpu_twenty has "
                                         "kind KIND_CPU but specifies one or more GPUs")


@pytest.mark.parametrize(("argv", "suggestion"), [
    (("chek", "repo"), "did you mean check?"),
    (("check", "--foramt", "json", "repo"), "did you mean --format?"),
    (("check", "--fail-on=warnin", "repo"), "did you mean warning?"),
    (("config", "--disable-autocomplete-config", "repo"),
     "did you mean --disable-auto-complete-config?"),
])
def test_a_mistyped_word_is_a_usage_error_naming_the_closest(
        argv: tuple[str, ...], suggestion: str) -> None:
    proc = run_cli(*argv)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.rstrip().endswith(suggestion), proc.stderr


@pytest.mark.parametrize(("env", "flag", "coloured"), [
    ({"FORCE_COLOR": "1"}, "auto", True),
    ({"FORCE_COLOR": "0"}, "auto", False),
    ({"FORCE_COLOR": ""}, "auto", False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, "auto", False),
    ({"FORCE_COLOR": "1"}, "never", False),
    ({"NO_COLOR": "1"}, "always", True),
])
def test_force_color_colours_a_pipe_unless_no_color_or_the_flag_says_otherwise(
        env: dict[str, str], flag: str, coloured: bool) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    proc = subprocess.run(
        [sys.executable, "-m", "triton_doctor", "check", "--color", flag, str(DEMO)],
        capture_output=True, text=True, timeout=60, check=False, env={**environment, **env})
    assert proc.returncode == 1, proc.stderr
    assert ("\x1b[31m" in proc.stdout) == coloured


@pytest.mark.parametrize("output", ["full disk", "closed pipe"])
def test_output_that_cannot_be_written_is_exit_2_in_one_line(output: str) -> None:
    if output == "full disk":
        stdout = os.open("/dev/full", os.O_WRONLY)
    else:
        reader, stdout = os.pipe()
        os.close(reader)
    try:
        proc = subprocess.run([sys.executable, "-m", "triton_doctor", "check", str(DEMO)],
                              stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60,
                              check=False)
    finally:
        os.close(stdout)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("triton-doctor: cannot write the output: ")
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_a_report_written_to_a_file_from_a_terminal_has_no_colour(tmp_path: Path) -> None:
    import pty

    write_model(tmp_path / "repo", "ranker", GOOD_CONFIG)
    report = tmp_path / "report.txt"
    environment = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    primary, terminal = pty.openpty()
    try:
        for to_file in ([], ["-o", str(report)]):
            subprocess.run([sys.executable, "-m", "triton_doctor", "check",
                            str(tmp_path / "repo"), *to_file], stdout=terminal,
                           stderr=subprocess.DEVNULL, timeout=60, check=False, env=environment)
        on_terminal = os.read(primary, 1 << 16)
    finally:
        os.close(terminal)
        os.close(primary)
    assert b"\x1b[" in on_terminal
    assert "\x1b[" not in report.read_text() and "0 errors" in report.read_text()
