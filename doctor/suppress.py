"""Inline waivers in config.pbtxt: ``# triton-doctor: ignore[TD217,zero-queue-delay] why``.

A waiver applies to the whole model it is written in. Waived findings are still reported, as
suppressed with their reason, and never count towards the exit code.
"""

from __future__ import annotations

import re

from triton_doctor.records import record
from triton_doctor.registry import key_matches

_WAIVER = re.compile(r"#\s*triton-doctor:\s*ignore\[([^\]]*)\]\s*(.*)$", re.MULTILINE)


@record(frozen=True)
class Waiver:
    line: int
    keys: tuple[str, ...]
    reason: str

    def covers(self, rule_id: str, rule_name: str) -> bool:
        return any(key_matches(rule_id, rule_name, key) for key in self.keys)


def waivers(text: str) -> list[Waiver]:
    found = []
    for match in _WAIVER.finditer(text):
        keys = tuple(key.strip() for key in match.group(1).split(",") if key.strip())
        if keys:
            line = text.count("\n", 0, match.start()) + 1
            found.append(Waiver(line, keys, match.group(2).strip()))
    return found
