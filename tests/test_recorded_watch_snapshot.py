"""The recorded incident the terminal UI's screenshots use still shows each of its conditions.

fixtures/recorded/watch/incident.snapshot.json was recorded from a real tritonserver, with a
real H200's GPU part spliced in; if a rule change stops one of its findings, the screenshots
would silently lose it. Being an old file, it also shows that a newer triton-doctor reads what
an older one wrote (docs/snapshots.md, Compatibility).
"""

from __future__ import annotations

import json
from pathlib import Path

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
        ("TD814", "tokenizer"),  # the same failures, read from its log lines
    }


def test_fields_dropped_since_the_recording_are_ignored(tmp_path: Path) -> None:
    """The recording holds the CUDA shared-memory regions, which Evidence no longer keeps: it
    still loads, and judges the same as the file without them."""
    document = json.loads(SNAPSHOT.read_text())
    samples = document["evidence"]["server"]["samples"]
    assert samples and all("cuda_shm" in sample for sample in samples)
    for sample in samples:
        del sample["cuda_shm"]
    stripped = tmp_path / "stripped.snapshot.json"
    stripped.write_text(json.dumps(document))
    judged = []
    for path in (SNAPSHOT, stripped):
        proc = run_cli("check", "--snapshot", str(path), "--format", "json", "--exit-zero")
        assert proc.returncode == 0, proc.stderr
        judged.append(json.loads(proc.stdout)["findings"])
    assert judged[0] and judged[0] == judged[1]
