"""The rules file ``triton-doctor alerts`` writes: promtool accepts it for every choice, every
alert carries what an on-call engineer reads, and the settings file's thresholds are the ones
encoded."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from triton_doctor import cli
from triton_doctor.catalogue import find_rule

DOCS = "https://example.com/triton-doctor/rules.md"
DURATION = re.compile(r"\d+[smh]")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root (it holds .git, so its settings file applies) as the working directory."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _alerts_file(project: Path, *flags: str, name: str = "rules.yaml") -> tuple[str, list[Any]]:
    """The file ``alerts`` writes with ``flags``, and its groups as PyYAML reads them."""
    assert cli.main(["alerts", *flags, "-o", name]) == 0
    text = (project / name).read_text()
    return text, yaml.safe_load(text)["groups"]


def _rules(groups: list[Any]) -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for group in groups for rule in group["rules"]}


#: The alerts whose severity, rule, fix and docs come from the exporter's series.
FROM_SERIES = ("TritonDoctorFinding", "TritonDoctorLogEvent")


def test_promtool_accepts_every_choice(project: Path, promtool: str) -> None:
    (project / ".triton-doctor.toml").write_text("[thresholds]\nqueue-ms = 50\np99-ms = 250.5\n")
    choices = {"both.yaml": (), "metrics.yaml": ("--groups", "metrics"),
               "exporter.yaml": ("--groups", "exporter"),
               "flags.yaml": ("--for", "1m", "--rate-window", "90s", "--docs-url", DOCS,
                              "--exporter-job", 'a "quoted" job')}
    for name, flags in choices.items():
        _alerts_file(project, *flags, name=name)
    done = subprocess.run([promtool, "check", "rules", *choices], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = [int(count) for count in re.findall(r"SUCCESS: (\d+) rules found", done.stdout)]
    assert counts == [14, 9, 5, 14]


def test_every_alert_carries_its_wait_labels_and_annotations(project: Path) -> None:
    _, groups = _alerts_file(project, "--docs-url", DOCS)
    assert [group["name"] for group in groups] == ["triton-doctor-metrics",
                                                   "triton-doctor-exporter"]
    for group in groups:
        for rule in group["rules"]:
            name, annotations = rule["alert"], rule["annotations"]
            assert DURATION.fullmatch(rule["for"]), name
            assert rule["for"].endswith("m"), name
            # A log line is an event: it has happened once counted, so its alert does not wait.
            assert (2 <= int(rule["for"][:-1]) <= 15) != (name == "TritonDoctorLogEvent"), name
            assert {"summary", "description", "fix", "rule"} <= set(annotations), name
            if name in FROM_SERIES:  # severity and rule: the finding's own labels
                assert "labels" not in rule
                assert annotations["rule"] == "{{ $labels.rule }}"
                assert '| label "fix"' in annotations["fix"]
                assert '| label "docs"' in annotations["runbook_url"]
                continue
            labels = rule["labels"]
            assert set(labels) == {"severity", "rule"} and annotations["rule"] == labels["rule"]
            assert labels["severity"] in ("warning", "error"), name
            found = find_rule(labels["rule"])
            if found is None:  # the exporter's own health
                assert labels["rule"] == "exporter" and "runbook_url" not in annotations
                continue
            assert annotations["fix"] == found.section("Fix") != ""
            assert annotations["runbook_url"] == f"{DOCS}#{found.anchor}"
            assert "{{ $labels." in annotations["description"], name
    metrics = _rules(groups[:1])
    assert all("{{ $value" in rule["annotations"]["description"] for rule in metrics.values())


def test_without_docs_url_the_metrics_alerts_link_nowhere(project: Path) -> None:
    _, groups = _alerts_file(project)
    linked = [rule["alert"] for rule in _rules(groups).values()
              if "runbook_url" in rule["annotations"]]
    assert linked == list(FROM_SERIES)  # from the exporter's own rule_info series


def test_settings_file_moves_the_thresholds(project: Path) -> None:
    settings = project / ".triton-doctor.toml"
    settings.write_text("[thresholds]\nqueue-ms = 50\ngpu-memory = 0.99\n")
    text, groups = _alerts_file(project)
    rules = _rules(groups)
    assert "/ 1000 >= 50\n" in rules["TritonQueueBacklog"]["expr"]
    assert "(threshold 50 ms)" in rules["TritonQueueBacklog"]["annotations"]["description"]
    # The error is judged above the warning's threshold, as TD701 does.
    assert rules["TritonGpuMemoryPressure"]["expr"].endswith(">= 0.99")
    assert rules["TritonGpuMemoryFull"]["expr"].endswith(">= 0.99")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert f"# Settings: {settings}." in header
    assert {"#   queue-ms = 50 (settings)", "#   queue-share = 0.5",
            "#   queue-error-ms = 1000", "#   gpu-memory = 0.99 (settings)"} <= set(header)


def test_an_unknown_threshold_is_a_usage_error(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / ".triton-doctor.toml").write_text("[thresholds]\nqueue_ms = 50\n")
    assert cli.main(["alerts"]) == 2
    assert "queue_ms" in capsys.readouterr().err
    assert not (project / "rules.yaml").exists()


def test_groups_window_hold_and_job(project: Path) -> None:
    text, groups = _alerts_file(project, "--groups", "exporter", "--exporter-job", "tdoc")
    rules = _rules(groups)
    assert [group["name"] for group in groups] == ["triton-doctor-exporter"]
    # Without the metrics group, every finding but a source's alerts through the exporter.
    assert rules["TritonDoctorFinding"]["expr"] == (
        'triton_doctor_finding{rule!~"TD603",severity!="info"} == 1')
    assert rules["TritonDoctorExporterDown"]["expr"] == 'up{job="tdoc"} == 0'
    assert "Thresholds" not in text
    _, groups = _alerts_file(project, "--groups", "metrics", "--rate-window", "2m",
                             "--for", "1m")
    rules = _rules(groups)
    assert [group["name"] for group in groups] == ["triton-doctor-metrics"]
    assert {rule["for"] for rule in rules.values()} == {"1m"}
    exprs = "".join(rule["expr"] for rule in rules.values())
    assert "[2m]" in exprs and "[5m]" not in exprs
    assert "nv_gpu_memory_used_bytes[12m]" in rules["TritonGpuMemoryFillingUp"]["expr"]
