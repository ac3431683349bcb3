"""The YAML writer: what it writes reads back, through PyYAML, as what it was given."""

from __future__ import annotations

import yaml
from triton_doctor.alerts import yaml_text

AWKWARD = ['plain', 'say "hi"', "back\\slash", "{{ $labels.model }}", "µs ÷ €", "a: b # c",
           "- dash", "line\u2028separator", "nel\x85", "tab\there", "", " leading", "yes",
           "10", "multi\nline", "trailing \nspace", "  indented\nfirst", "ends\n",
           "\nstarts empty", "blank\n\nline", "null", "~"]


def test_what_it_writes_reads_back() -> None:
    value = {"groups": [{"name": text, "rules": [], "annotations": {}} for text in AWKWARD],
             "odd key: x": {"nested": ["a", {"b": "c"}]}}
    assert yaml.safe_load(yaml_text.dump(value)) == value


def test_several_lines_are_a_block_that_reads_as_written() -> None:
    text = yaml_text.dump({"expr": "rate(x[5m])\n  > 0\nand\ny"})
    assert text == "expr: |-\n  rate(x[5m])\n    > 0\n  and\n  y\n"
