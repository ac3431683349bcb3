"""The subset of Go templates the generated annotations use, rendered as Prometheus would, so
that a test can give promtool the exact annotations it must find. Anything else in a template
is an error here: a new construct needs its rendering added first."""

from __future__ import annotations

import re
from collections.abc import Mapping

#: The finding alert's look-up of its rule's static labels (``triton_doctor_rule_info``).
_RULE_INFO = re.compile(
    r'\{\{ with printf "triton_doctor_rule_info\{rule=%q\}" \$labels\.rule \| query \}\}'
    r'\{\{ \. \| first \| label "(\w+)" \}\}\{\{ end \}\}')
_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")
_VALUE = re.compile(r'\{\{ \$value \| printf "(%\.\d+f)" \}\}')


def render(template: str, labels: Mapping[str, str], value: float,
           rule_info: Mapping[str, Mapping[str, str]]) -> str:
    """``template`` for an alert of ``labels`` and ``value``; ``rule_info``: the labels of each
    rule's info series, by rule id."""
    text = _RULE_INFO.sub(lambda found: rule_info[labels["rule"]][found.group(1)], template)
    # A label the alert lacks is empty, as Prometheus renders it (a finding about the server
    # as a whole has no model).
    text = _LABEL.sub(lambda found: labels.get(found.group(1), ""), text)
    text = _VALUE.sub(lambda found: found.group(1) % value, text)
    if "{{" in text:
        raise ValueError(f"a template construct the test renderer does not know: {template!r}")
    return text
