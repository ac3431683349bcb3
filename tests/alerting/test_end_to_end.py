"""The alerting pipeline end to end, every part real: a tritonserver with a model refused at
load and a slow model under load; ``triton-doctor exporter`` judging it; Prometheus scraping
both and evaluating the rules ``triton-doctor alerts`` writes; Alertmanager delivering what
fires to a receiver here, as Slack (docs/alerting/triton-doctor.tmpl's message) and as a
webhook. The configurations are docs/alerting's, as the README shows them, with this test's
ports and 1 s intervals."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from triton_doctor.catalogue import find_rule

from tests.conftest import _missing
from tests.monitoring_harness import (
    Exporter,
    Receiver,
    Service,
    binary,
    start_alertmanager,
    start_prometheus,
    wait_until,
)
from tests.python_models import INCIDENT, Load, infer, wait_ready, write_models
from tests.server_harness import TritonServer

EXAMPLES = Path(__file__).parents[2] / "docs" / "alerting"
@pytest.fixture(scope="module")
def parts() -> None:
    for part in ("prometheus", "alertmanager"):
        if binary(part) is None:
            _missing(f"{part} not installed: apt-get install prometheus "
                     "prometheus-alertmanager (scripts/test.sh does)")


def _prometheus_config(exporter: str, triton_metrics: str, alertmanager: str) -> str:
    config = yaml.safe_load((EXAMPLES / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    targets = {"triton-doctor": exporter, "triton": triton_metrics}
    for job in config["scrape_configs"]:
        job["static_configs"] = [{"targets": [targets[job["job_name"]]]}]
    config["alerting"]["alertmanagers"][0]["static_configs"] = [{"targets": [alertmanager]}]
    return yaml.safe_dump(config)


def _alertmanager_config(receiver: str) -> str:
    config = yaml.safe_load((EXAMPLES / "alertmanager.yml").read_text())
    config["route"].update(group_wait="1s", group_interval="1s")
    chosen = config["receivers"][0]
    chosen["slack_configs"][0]["api_url"] = f"{receiver}/slack"
    chosen["webhook_configs"][0]["url"] = f"{receiver}/webhook"
    return yaml.safe_dump(config)


@pytest.fixture(scope="module")
def pipeline(parts: None, triton_server: Callable[..., TritonServer],
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    work = tmp_path_factory.mktemp("alerting")
    server = triton_server(write_models(work / "models", INCIDENT), "--exit-on-error=false",
                           wait_for="/v2/health/live")
    wait_ready(server.http_url, "slow")
    load = Load()
    load.clients(8, lambda i: infer(server.http_url, "slow", 1.0, batched=False))
    started: list[Any] = []
    receiver = Receiver()
    try:
        started.append(Exporter("--url", server.http_url, "--metrics-url", server.metrics_url,
                                "--interval", "1", "--window", "2", workdir=work))
        subprocess.run([sys.executable, "-m", "triton_doctor", "alerts", "--rate-window", "10s",
                        "--for", "2s", "-o", str(work / "triton-doctor-alerts.yml")], check=True,
                       timeout=60)
        shutil.copy(EXAMPLES / "triton-doctor.tmpl", work)
        alertmanager: Service = start_alertmanager(_alertmanager_config(receiver.url), work)
        started.append(alertmanager)
        started.append(start_prometheus(_prometheus_config(
            started[0].url.removeprefix("http://"), server.metrics_url.split("/")[2],
            alertmanager.url.removeprefix("http://")), work))
        yield receiver
    finally:
        for part in reversed(started):
            part.stop()
        receiver.stop()
        load.end()


def _alerts(receiver: Receiver) -> list[dict[str, Any]]:
    return [alert for body in receiver.bodies("/webhook") for alert in body["alerts"]]


def _firing(receiver: Receiver, rule: str, model: str) -> dict[str, Any] | None:
    return next((alert for alert in _alerts(receiver) if alert["status"] == "firing"
                 and alert["labels"].get("rule") == rule
                 and alert["labels"].get("model") == model), None)


def test_a_model_refused_at_load_reaches_the_webhook_with_its_fix(
        pipeline: Receiver) -> None:
    alert = wait_until(lambda: _firing(pipeline, "TD601", "broken"), 120,
                       "TD601 on broken delivered")
    rule = find_rule("TD601")
    assert rule is not None
    assert alert["labels"]["alertname"] == "TritonDoctorFinding"
    assert alert["labels"]["severity"] == "error"
    assert alert["annotations"]["fix"] == rule.section("Fix")
    assert alert["annotations"]["runbook_url"].endswith("/rules/TD601")


def test_a_swamped_model_alerts_from_tritons_own_metrics(pipeline: Receiver) -> None:
    alert = wait_until(lambda: _firing(pipeline, "TD611", "slow"), 120,
                       "TD611 on slow delivered")
    rule = find_rule("TD611")
    assert rule is not None
    assert alert["labels"]["alertname"].startswith("Triton")
    assert not alert["labels"]["alertname"].startswith("TritonDoctor")  # no exporter needed
    assert alert["annotations"]["fix"] == rule.section("Fix")
    assert "ms in the queue" in alert["annotations"]["description"]


def test_the_template_puts_rule_model_fix_and_docs_in_the_message(pipeline: Receiver) -> None:
    def delivered() -> str | None:
        texts = [attachment.get("title", "") + "\n" + attachment.get("text", "")
                 for body in pipeline.bodies("/slack")
                 for attachment in body.get("attachments", [])]
        return next((text for text in texts if "TD601" in text and "broken" in text), None)

    message = wait_until(delivered, 120, "the Slack message for TD601")
    rule = find_rule("TD601")
    assert rule is not None
    assert "[FIRING" in message
    assert f"Fix: {rule.section('Fix')}" in message
    assert "Docs: http://" in message and "/rules/TD601" in message
