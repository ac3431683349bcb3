"""Partial answers (issue 14, item 2): a source the user named that cannot be read is a finding
(TD603) beside everything that could be read, in every format, and the run exits 3; and
``--metrics-url`` is written as ``--url`` is."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.live import LiveRequest
from triton_doctor.checks.poll import Poller
from triton_doctor.checks.urls import metrics_endpoint
from triton_doctor.engine import run

from tests.helpers import DEMO, ROOT, run_cli
from tests.hostile.test_http import MARGIN, TRITON, reply, serve

LOG = ROOT / "fixtures" / "logs" / "python_initialize_raises.log"
#: A fake tritonserver's repository index: one model that failed to load (TD601).
INDEX = json.dumps([{"name": "broken", "version": "1", "state": "UNAVAILABLE",
                     "reason": "failed to load 'broken'"}]).encode()


@pytest.fixture
def dead() -> str:
    """``127.0.0.1:PORT`` where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def broken_triton(conn: socket.socket, path: str, head: bytes, stop: threading.Event) -> None:
    """A live tritonserver (no metrics) with one model that failed to load."""
    routes = {**TRITON, "/v2/repository/index": INDEX}
    if path in routes:
        reply(conn, 200, routes[path])
    else:
        reply(conn, 404)


def check(*args: str) -> subprocess.CompletedProcess[str]:
    proc = run_cli("check", "--timeout", "1", "--window", "0.2", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def findings(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return list(json.loads(proc.stdout)["findings"])


def unreachable(report: list[dict[str, Any]]) -> dict[str, str]:
    """TD603's findings: source -> message."""
    found = [f for f in report if f["rule"] == "TD603"]
    assert all(f["severity"] == "error" for f in found)
    return {f["evidence"]["source"]: f["message"] for f in found}


def others(report: list[dict[str, Any]]) -> list[tuple[str, str | None, str]]:
    return sorted((f["rule"], f["model"], f["message"]) for f in report if f["rule"] != "TD603")


# --- check REPO --url DEAD ---------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_findings() -> list[tuple[str, str | None, str]]:
    """The demo repository's findings, checked without a server."""
    proc = run_cli("check", str(DEMO), "--format", "json", "--exit-zero")
    assert proc.returncode == 0, proc.stderr
    return others(findings(proc))


def test_a_dead_server_keeps_the_repository_findings_in_json(
        dead: str, demo_findings: list[tuple[str, str | None, str]]) -> None:
    proc = check(str(DEMO), "--url", dead, "--format", "json")
    assert proc.returncode == 3
    report = json.loads(proc.stdout)  # stdout is the report alone
    assert demo_findings and others(report["findings"]) == demo_findings
    assert list(unreachable(report["findings"])) == ["server"]
    assert dead in unreachable(report["findings"])["server"]
    assert report["summary"]["exit_code"] == 3
    assert report["target"]["server"] == dead
    assert "cannot reach" in proc.stderr and dead in proc.stderr


def test_a_dead_server_is_a_sarif_result_beside_the_repository_ones(
        dead: str, demo_findings: list[tuple[str, str | None, str]]) -> None:
    proc = check(str(DEMO), "--url", dead, "--format", "sarif")
    assert proc.returncode == 3
    results = json.loads(proc.stdout)["runs"][0]["results"]
    (td603,) = [r for r in results if r["ruleId"] == "TD603"]
    assert td603["level"] == "error" and dead in td603["message"]["text"]
    assert sorted(r["ruleId"] for r in results if r["ruleId"] != "TD603") == sorted(
        rule for rule, _, _ in demo_findings)
    assert "cannot reach" in proc.stderr


def test_a_dead_server_is_shown_in_text(
        dead: str, demo_findings: list[tuple[str, str | None, str]]) -> None:
    proc = check(str(DEMO), "--url", dead, "--format", "text")
    assert proc.returncode == 3
    assert "TD603 source-unreachable" in proc.stdout and dead in proc.stdout
    assert {rule for rule, _, _ in demo_findings} <= set(proc.stdout.split())
    assert "cannot reach" in proc.stderr


def test_exit_zero_does_not_hide_a_dead_server(dead: str) -> None:
    proc = check(str(DEMO), "--url", dead, "--format", "json", "--exit-zero")
    assert proc.returncode == 3
    assert list(unreachable(findings(proc))) == ["server"]


def test_a_hanging_server_exits_3_within_the_timeout(silent_port: int) -> None:
    started = time.monotonic()
    proc = check(str(DEMO), "--url", f"127.0.0.1:{silent_port}", "--format", "json")
    took = time.monotonic() - started
    assert proc.returncode == 3
    assert list(unreachable(findings(proc))) == ["server"]
    assert others(findings(proc))
    assert took < 1 + MARGIN


# --- a live server, a dead --metrics-url or --log ----------------------------------------


@pytest.mark.parametrize("metrics", ["{dead}", "http://{dead}", "http://{dead}/metrics"])
def test_a_dead_metrics_url_keeps_the_server_findings(dead: str, metrics: str) -> None:
    with serve(broken_triton) as port:
        proc = check("--url", f"127.0.0.1:{port}", "--metrics-url", metrics.format(dead=dead),
                     "--format", "json")
    assert proc.returncode == 3
    report = findings(proc)
    assert ("TD601", "broken") in {(f["rule"], f["model"]) for f in report}
    gone = unreachable(report)
    assert list(gone) == ["metrics"] and f"http://{dead}/metrics" in gone["metrics"]
    assert "metrics" in proc.stderr


def test_metrics_the_user_did_not_name_are_not_unreachable() -> None:
    """Without --metrics-url the metrics are looked for on port 8002 of the server's host;
    not finding them there is no partial answer."""
    with serve(broken_triton) as port:
        proc = check("--url", f"127.0.0.1:{port}", "--format", "json")
    assert proc.returncode == 1
    assert unreachable(findings(proc)) == {}


def test_a_dead_server_keeps_the_log_findings(dead: str) -> None:
    proc = check("--url", dead, "--log", str(LOG), "--format", "json")
    assert proc.returncode == 3
    report = findings(proc)
    rules = {(f["rule"], f["model"]) for f in report}
    assert {("TD801", "tokenizer"), ("TD802", None)} <= rules
    assert list(unreachable(report)) == ["server"]


def test_a_log_that_cannot_be_read_beside_a_live_server(tmp_path: Path) -> None:
    missing = tmp_path / "server.log"
    with serve(broken_triton) as port:
        proc = check("--url", f"127.0.0.1:{port}", "--log", str(missing), "--format", "json")
    assert proc.returncode == 3
    report = findings(proc)
    assert ("TD601", "broken") in {(f["rule"], f["model"]) for f in report}
    gone = unreachable(report)
    assert list(gone) == ["log"] and str(missing) in gone["log"]


def test_a_log_on_its_own_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    """The log alone is the target, not a source beside one: exit 2, no report."""
    proc = check("--log", str(tmp_path / "server.log"), "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""


def test_a_bad_metrics_url_is_a_usage_error(dead: str) -> None:
    proc = check("--url", dead, "--metrics-url", "triton:99999", "--format", "json")
    assert proc.returncode == 2 and "triton:99999" in proc.stderr


# --- snapshot ----------------------------------------------------------------------------


def test_a_snapshot_of_a_dead_server_is_written_and_judged_partial(
        dead: str, tmp_path: Path) -> None:
    saved = tmp_path / "out.json"
    proc = run_cli("snapshot", "--url", dead, "--timeout", "1", "-o", str(saved))
    assert proc.returncode == 3, proc.stderr
    assert "cannot reach" in proc.stderr
    evidence = json.loads(saved.read_text())["evidence"]
    assert list(evidence["unreachable"]) == ["server"] and dead in evidence["unreachable"]["server"]
    again = check("--snapshot", str(saved), "--format", "json")
    # The snapshot is as partial as the run that took it: the same finding, the same exit.
    assert again.returncode == 3
    gone = unreachable(findings(again))
    assert list(gone) == ["server"] and gone["server"] == evidence["unreachable"]["server"]
    # Replayed, the reason is said as what the snapshot records, not as a connection tried now.
    assert f"the snapshot records: {evidence['unreachable']['server']}" in again.stderr


# --- watch's polls -----------------------------------------------------------------------


def test_each_poll_of_a_dead_server_fires_td603(dead: str) -> None:
    poller = Poller(LiveRequest(f"http://{dead}", timeout_s=1))
    for _ in range(2):
        evidence = poller.poll()
        assert list(evidence.unreachable) == ["server"]
        fired = [f for f in run(evidence, all_rules()).findings if f.rule == "TD603"]
        assert len(fired) == 1 and dead in fired[0].message


def test_a_poll_with_a_dead_metrics_url_the_user_named(dead: str) -> None:
    with serve(broken_triton) as port:
        named = Poller(LiveRequest(f"http://127.0.0.1:{port}", f"http://{dead}/metrics", 0.2, 1))
        unnamed = Poller(LiveRequest(f"http://127.0.0.1:{port}", None, 0.2, 1))
        assert list(named.poll().unreachable) == ["metrics"]
        assert unnamed.poll().unreachable == {}


# --- metrics_endpoint ----------------------------------------------------------------------


@pytest.mark.parametrize(("written", "scraped"), [
    ("triton:8002", "http://triton:8002/metrics"),
    ("triton", "http://triton:8002/metrics"),
    ("http://triton:8002", "http://triton:8002/metrics"),
    ("http://triton", "http://triton:8002/metrics"),
    ("HTTP://triton:9102/", "http://triton:9102/metrics"),
    ("  triton:8002  ", "http://triton:8002/metrics"),
    ("http://h:9/m?x=1", "http://h:9/m?x=1"),
    ("https://u:p@h/", "https://u:p@h/metrics"),
    ("https://h", "https://h/metrics"),
    ("[::1]", "http://[::1]:8002/metrics"),
    ("http://[::1]:8002/", "http://[::1]:8002/metrics"),
])
def test_metrics_endpoint(written: str, scraped: str) -> None:
    assert metrics_endpoint(written) == scraped


@pytest.mark.parametrize("written", ["triton:99999", "triton:port", "http://[::1:8002/", "",
                                     "http://", "ftp://triton:8002"])
def test_metrics_endpoint_refuses_what_is_no_metrics_url(written: str) -> None:
    with pytest.raises(ValueError, match=r"port|URL"):
        metrics_endpoint(written)
