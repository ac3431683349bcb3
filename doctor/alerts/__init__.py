"""``triton-doctor alerts``: Prometheus alerting rules that agree with ``check``.

The definitions (``definitions``) say when each alert fires; this module gives each its labels
and annotations (the rule's Fix and documentation) and writes the file, whose header says
which settings and thresholds it encodes, since a rules file outlives the run that wrote it.
"""

from __future__ import annotations

import textwrap

from triton_doctor import __version__
from triton_doctor.alerts import yaml_text
from triton_doctor.alerts.definitions import (
    ENCODED_THRESHOLDS,
    EXPORTER_RULE,
    Alert,
    alerts,
    number,
)
from triton_doctor.catalogue import find_rule
from triton_doctor.invocation import Invocation
from triton_doctor.triton.server_model import THRESHOLDS

GROUP_NAMES = {"metrics": "triton-doctor-metrics", "exporter": "triton-doctor-exporter"}


def rules_text(invocation: Invocation) -> str:
    """The rules file ``alerts`` writes: one YAML document of the groups asked for."""
    thresholds = {**THRESHOLDS, **invocation.target.thresholds}
    found = alerts(thresholds, invocation.alerting)
    docs_url = invocation.output.docs_url
    groups: list[yaml_text.Value] = [
        {"name": GROUP_NAMES[group],
         "rules": [_entry(alert, docs_url) for alert in found if alert.group == group]}
        for group in invocation.alerting.groups
    ]
    return _header(invocation) + yaml_text.dump({"groups": groups})


def _entry(alert: Alert, docs_url: str | None) -> dict[str, yaml_text.Value]:
    """The rule as Prometheus reads it; a finding's severity and rule come from its series."""
    rule = find_rule(alert.rule) if alert.rule else None
    entry: dict[str, yaml_text.Value] = {"alert": alert.name, "expr": alert.expr,
                                         "for": alert.hold}
    if alert.rule and alert.severity:
        entry["labels"] = {"severity": alert.severity, "rule": alert.rule}
    fix = alert.fix
    if fix is None:
        assert rule is not None, f"{alert.name}: no fix and no rule to take it from"
        fix = rule.section("Fix")
    annotations = {"summary": alert.summary, "description": alert.description, "fix": fix,
                   "rule": alert.rule or "{{ $labels.rule }}"}
    runbook = alert.runbook or (f"{docs_url}#{rule.anchor}" if docs_url and rule else None)
    if runbook:
        annotations["runbook_url"] = runbook
    entry["annotations"] = annotations
    return entry


def _header(invocation: Invocation) -> str:
    alerting = invocation.alerting
    lines = [f"Prometheus alerting rules (rule_files) written by triton-doctor {__version__}: "
             "`triton-doctor alerts`.",
             f"Settings: {invocation.settings_source or 'none (no settings file applied)'}."]
    if "metrics" in alerting.groups:
        chosen = invocation.target.thresholds
        lines += ["Thresholds, as `check` judges:"]
        lines += [f"  {name} = {number(chosen.get(name, THRESHOLDS[name]))}"
                  + (" (settings)" if name in chosen else "") for name in ENCODED_THRESHOLDS]
        lines += [f"Rates over {alerting.rate_window}.",
                  "Where a rule's warning and error alerts fire together, an Alertmanager "
                  'inhibit rule keeps the error: source_matchers [severity="error"], '
                  'target_matchers [severity="warning"], equal [rule, instance, model, version, '
                  "gpu_uuid]."]
    lines += [
        "Each alert waits its own `for:`." if alerting.hold is None else
        f"Every alert waits {alerting.hold} (--for).",
        f'Label rule: the TD id of the rule an alert restates; "{EXPORTER_RULE}" for the '
        "exporter's own health.",
    ]
    wrapped = [part for line in lines for part in textwrap.wrap(line, 97, break_on_hyphens=False)]
    return "".join(f"# {part}\n" for part in wrapped)
