"""`check --log`: each captured log names exactly its problems, whatever carried the lines,
and the command reads files, standard input and pipes, and refuses what it cannot read."""

from __future__ import annotations

import gzip
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from triton_doctor.cli import main

from tests.helpers import DEMO, ROOT

LOGS = ROOT / "fixtures" / "logs"

#: What each captured log shows, read from the log itself: (rule, model; "" when its lines
#: name none). A new log must be added here.
EXPECTED: dict[str, set[tuple[str, str]]] = {
    "healthy.log": set(),
    # 2.51 reports a missing ensemble input with other words than the deadlock: no rule.
    "ensemble_missing_output_client.log": set(),
    "client_batch_too_large.log": {("TD809", "healthy_add"), ("TD810", "healthy_add")},
    "client_batch_too_large_client.log": {("TD810", "healthy_add")},
    "client_wrong_dtype.log": {("TD809", "healthy_add")},
    "client_wrong_dtype_client.log": {("TD809", "healthy_add")},
    "dev_shm_byte_size_too_big.log": {("TD802", ""), ("TD805", "healthy_add")},
    "dev_shm_too_small.log": {("TD802", ""), ("TD805", "healthy_add")},
    "no_temp_dir.log": {("TD802", ""), ("TD806", "feature_cache")},
    "public_cuda_oom_onnxruntime.log": {("TD803", "")},
    "public_cuda_oom_tensorrtllm.log": {("TD803", "")},
    "public_ensemble_deadlock.log": {("TD808", "custom_mood_ensemble")},
    "public_ensemble_deadlock_2021.log": {("TD808", "ensemble_mask_detection")},
    "public_failed_deserialize_cuda_engine.log": {("TD813", "tensorrt_llm")},
    "public_onnx_ir_version.log": {("TD801", "DeepSeek-R1-Distill-Qwen-1.5B")},
    "public_stub_not_healthy_client.log": {("TD804", "damage")},
    "public_stub_unhealthy_restart.log": {("TD804", "")},
    "public_tensorrt_serialization_assertion.log": {("TD813", "")},
    # TensorRT's line names no model (the 2019 servable lines around it have no rule's words).
    "public_tensorrt_version_mismatch.log": {("TD813", "")},
    "public_unknown_platform.log": {("TD801", "1")},
    "python_env_tmp_readonly.log": {("TD806", ""), ("TD811", "")},
    "python_execute_raises.log": {("TD814", "tokenizer")},
    "python_initialize_raises.log": {("TD801", "tokenizer"), ("TD802", "")},
    "python_module_missing.log": {("TD802", ""), ("TD807", "preprocess")},
    # --exit-on-error=false: "failed to load all models" and the server went on.
    "python_stub_died_loading.log": {("TD804", "embedder")},
    "python_stub_killed.log": {("TD804", "healthy_add")},
    "python_stub_killed_server.log": {("TD812", "")},
    "repository_load_failed.log": {("TD801", "detector"), ("TD801", "ranker"), ("TD802", "")},
    "server_crash_signal11.log": {("TD811", "")},
    "shm_pool_growth_failed_client.log": {("TD805", "")},
}
RENDERINGS = ("docker_timestamps_", "kubernetes_json_", "kubernetes_cri_")
RENDERED = "python_initialize_raises.log"


def _check_log(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """``check --format json ARGS`` in this process: (exit code, report)."""
    code = main(["check", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def _named(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], f["model"] or "") for f in report["findings"]}


def _cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triton_doctor", *args], capture_output=True,
                          text=True, timeout=60, check=False, **kwargs)


def test_every_captured_log_has_an_expectation() -> None:
    logs = {path.name for path in LOGS.glob("*.log")}
    derived = {prefix + RENDERED for prefix in RENDERINGS}
    assert logs - derived == set(EXPECTED), "add each new log's expectation to EXPECTED"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_check_log_names_exactly_the_logs_problems(
        capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, report = _check_log(capsys, "--log", str(LOGS / name))
    assert _named(report) == EXPECTED[name], report["findings"]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert code == report["summary"]["exit_code"] == (1 if errors else 0)
    assert {f["location"]["path"] for f in report["findings"]} <= {str(LOGS / name)}


def _time_of_line(path: Path, number: int) -> str:
    """The time the wrapper (docker, CRI, JSON record) gives line ``number`` of ``path``."""
    line = path.read_text().splitlines()[number - 1]
    return json.loads(line)["time"] if line.startswith("{") else line.split(" ", 1)[0]


@pytest.mark.parametrize("prefix", RENDERINGS)
def test_renderings_give_the_plain_logs_findings_with_the_wrappers_time(
        capsys: pytest.CaptureFixture[str], prefix: str) -> None:
    _, plain = _check_log(capsys, "--log", str(LOGS / RENDERED))
    path = LOGS / (prefix + RENDERED)
    _, rendered = _check_log(capsys, "--log", str(path))

    def essence(report: dict[str, Any]) -> list[tuple[Any, ...]]:
        return sorted((f["rule"], f["model"], f["triton_message"], f["evidence"]["count"])
                      for f in report["findings"])

    assert essence(rendered) == essence(plain)
    for finding in rendered["findings"]:
        evidence = finding["evidence"]
        first = _time_of_line(path, evidence["first_line"])
        last = _time_of_line(path, evidence["last_line"])
        assert first.startswith("2026-12-01T"), first
        assert (evidence["first_time"], evidence["last_time"]) == (first, last)
        assert evidence["span_s"] is not None and evidence["span_s"] >= 0
    spans = {f["rule"]: f["evidence"]["span_s"] for f in rendered["findings"]}
    assert spans["TD801"] == pytest.approx(0.000023)  # 19:47:36.620393 to .620416


def test_td802_only_when_the_server_gave_up(capsys: pytest.CaptureFixture[str]) -> None:
    went_on = (LOGS / "python_stub_died_loading.log").read_text()
    assert "failed to load all models" in went_on and "--exit-on-error=false" in went_on
    _, report = _check_log(capsys, "--log", str(LOGS / "python_stub_died_loading.log"))
    assert "TD802" not in {f["rule"] for f in report["findings"]}
    _, report = _check_log(capsys, "--log", str(LOGS / "python_initialize_raises.log"))
    [exited] = [f for f in report["findings"] if f["rule"] == "TD802"]
    assert exited["evidence"]["failed_models"] == ["tokenizer"]


# --- the command line -----------------------------------------------------------------------

def test_log_on_standard_input() -> None:
    log = (LOGS / "repository_load_failed.log").read_text()
    proc = _cli("check", "--format", "json", "--log", "-", input=log)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert _named(report) == EXPECTED["repository_load_failed.log"]
    assert report["target"]["log"] == "standard input"


def test_log_from_a_terminal_is_refused_with_how_to_pipe_it() -> None:
    controller, terminal = pty.openpty()
    try:
        proc = _cli("check", "--log", "-", stdin=terminal)
    finally:
        os.close(controller)
        os.close(terminal)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pipe the log" in proc.stderr


def test_missing_log_names_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.log"
    proc = _cli("check", "--log", str(missing))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert str(missing) in proc.stderr


def test_gzip_log_is_refused_with_zcat(tmp_path: Path) -> None:
    packed = tmp_path / "server.log.gz"
    packed.write_bytes(gzip.compress((LOGS / "python_initialize_raises.log").read_bytes()))
    proc = _cli("check", "--log", str(packed))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "zcat" in proc.stderr and str(packed) in proc.stderr


def test_repository_and_log_are_both_judged(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _check_log(capsys, str(DEMO), "--log",
                              str(LOGS / "python_initialize_raises.log"))
    _, alone = _check_log(capsys, str(DEMO))
    assert code == 1
    rules = {f["rule"] for f in report["findings"]}
    assert {f["rule"] for f in alone["findings"]} <= rules
    assert _named(report) >= EXPECTED["python_initialize_raises.log"]
    assert report["target"]["log"] == str(LOGS / "python_initialize_raises.log")


def test_pipe_whose_writer_stays_open_is_cut_off_and_judged(tmp_path: Path) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    log = (LOGS / "python_initialize_raises.log").read_bytes()
    assert len(log) < 60_000  # fits in the pipe's buffer: written before the doctor reads
    holder = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer that never closes
    try:
        os.write(holder, log)
        proc = _cli("check", "--format", "json", "--timeout", "1", "--log", str(fifo))
    finally:
        os.close(holder)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert _named(report) == EXPECTED["python_initialize_raises.log"]
    assert "cut off" in report["target"]["log"]



@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_point_at_their_lines(capsys: pytest.CaptureFixture[str], name: str) -> None:
    _, report = _check_log(capsys, "--log", str(LOGS / name))
    lines = (LOGS / name).read_text().splitlines()
    for finding in report["findings"]:
        evidence = finding["evidence"]
        assert 1 <= evidence["first_line"] <= evidence["last_line"] <= len(lines), finding
        assert finding["location"]["line"] == evidence["first_line"]


def test_a_client_error_said_earlier_does_not_hide_a_later_load_failure(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """TD801 leaves a model to another log rule only when the reason was that rule's line."""
    log = tmp_path / "server.log"
    log.write_text(
        "E1201 10:00:00.000001 77 http_server.cc:4582] \"[request id: <id_unknown>] inference "
        "input 'INPUT0' data-type is 'INT64', but model 'bert' expects 'INT32'\"\n"
        "I1201 11:00:00.000001 77 model_lifecycle.cc:473] \"loading: bert:2\"\n"
        "E1201 11:00:01.000001 77 model_lifecycle.cc:654] \"failed to load 'bert' version 2: "
        "Invalid argument: unable to find backend library for backend 'onnxruntim'\"\n"
        "I1201 11:00:01.000002 77 model_lifecycle.cc:777] \"failed to load 'bert'\"\n")
    _, report = _check_log(capsys, "--log", str(log))
    assert _named(report) == {("TD801", "bert"), ("TD809", "bert")}
