"""Each generated alert run by promtool on series made from the thresholds: it fires once its
condition has held for its ``for:``, with exactly the labels and annotations expected; not
before; and not for series just the other side of any of its conditions."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from triton_doctor.alerts import rules_text
from triton_doctor.invocation import Invocation, Target
from triton_doctor.triton.server_model import THRESHOLDS

from tests.alerting.render import render
from tests.alerting.scenarios import Case, Firing, cases

#: The defaults, and a settings file that moves every threshold the alerts encode (GPU memory
#: past the error share, which then moves too).
THRESHOLD_SETS = {
    "defaults": dict(THRESHOLDS),
    "custom": {**THRESHOLDS, "min-requests": 40, "queue-ms": 50, "queue-share": 0.25,
               "queue-error-ms": 500, "failure-rate": 0.05, "min-failures": 3,
               "compute-growth": 2, "p99-ms": 250, "gpu-memory": 0.98},
}
RuleFiles = dict[str, tuple[Path, dict[str, dict[str, Any]]]]


@pytest.fixture(scope="module")
def rule_files(tmp_path_factory: pytest.TempPathFactory) -> RuleFiles:
    """For each threshold set, the rules file of both groups and its alerts by name."""
    folder = tmp_path_factory.mktemp("rules")
    found = {}
    for name, thresholds in THRESHOLD_SETS.items():
        text = rules_text(Invocation("alerts", target=Target(thresholds=thresholds)))
        path = folder / f"{name}.yaml"
        path.write_text(text)
        alerts = {rule["alert"]: rule for group in yaml.safe_load(text)["groups"]
                  for rule in group["rules"]}
        found[name] = (path, alerts)
    return found


def test_every_alert_has_a_case(rule_files: RuleFiles) -> None:
    for name, (_, alerts) in rule_files.items():
        assert set(alerts) == set(cases(THRESHOLD_SETS[name])), name


@pytest.mark.parametrize("thresholds", THRESHOLD_SETS)
@pytest.mark.parametrize("alert", sorted(cases(THRESHOLDS)))
def test_fires_after_its_hold_and_only_past_its_threshold(
        alert: str, thresholds: str, rule_files: RuleFiles, promtool: str,
        tmp_path: Path) -> None:
    path, alerts = rule_files[thresholds]
    rule = alerts[alert]
    case = cases(THRESHOLD_SETS[thresholds])[alert]
    hold = _minutes(rule["for"])
    quiet_until, fires_at = case.onset[0] + hold - 1, case.onset[1] + hold + 1
    checks = [{"eval_time": f"{quiet_until}m", "alertname": alert, "exp_alerts": []}]
    checks.append({"eval_time": f"{fires_at}m", "alertname": alert,
                   "exp_alerts": [_expected(rule, firing, fires_at, case)
                                  for firing in case.firing]})
    unit = {"rule_files": [str(path)], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": [s.promtool() for s in case.series],
                       "alert_rule_test": checks}]}
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(unit, sort_keys=False))
    done = subprocess.run([promtool, "test", "rules", str(tmp_path / "test.yaml")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _expected(rule: dict[str, Any], firing: Firing, minute: int, case: Case) -> dict[str, Any]:
    value = firing.value_at(minute)
    return {"exp_labels": {**firing.labels, **rule.get("labels", {})},
            "exp_annotations": {key: render(template, firing.labels, value, case.rule_info)
                                for key, template in rule["annotations"].items()}}


def _minutes(duration: str) -> int:
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", duration)
    assert found and duration, f"a hold the tests do not read: {duration}"
    return int(found.group(1) or 0) * 60 + int(found.group(2) or 0)
