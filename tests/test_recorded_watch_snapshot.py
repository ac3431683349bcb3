"""The recorded incident the terminal UI's screenshots use still shows each of its conditions.

fixtures/recorded/watch/incident.snapshot.json was recorded from a real tritonserver, with a
real H200's GPU part spliced in; if a rule change stops one of its findings, the screenshots
would silently lose it.
"""

from __future__ import annotations

import json

from tests.helpers import ROOT, run_cli

SNAPSHOT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"


def test_check_finds_every_condition_of_the_incident() -> None:
    proc = run_cli("check", "--snapshot", str(SNAPSHOT), "--format", "json", "--exit-zero")
    assert proc.returncode == 0, proc.stderr
    found = {(f["rule"], f["model"]) for f in json.loads(proc.stdout)["findings"]}
    assert found >= {
        ("TD601", "detector"),
        ("TD611", "image_classifier"),
        ("TD612", "reranker"),
        ("TD613", "tokenizer"),
        ("TD701", None),
    }
