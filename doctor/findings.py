"""What a rule reports: Hits from the rule, Findings once the engine adds who and where."""

from __future__ import annotations

import enum
import re
from typing import Any

from triton_doctor.records import field as default
from triton_doctor.records import record


class Severity(enum.IntEnum):
    """error = the server will refuse it or requests will fail; warning = works, but wrongly or
    slowly; info = worth knowing."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}; use error, warning or info") from None


@record(frozen=True)
class Hit:
    """One problem as a rule sees it; the engine turns it into a Finding."""

    message: str
    triton_message: str | None = None
    fix: str | None = None
    #: Field path inside config.pbtxt, e.g. ``input[0].dims``; the engine maps it to a line.
    field: str | None = None
    #: File the problem is in, when it is not the model's config.pbtxt.
    path: str | None = None
    line: int | None = None
    version: str | None = None
    evidence: dict[str, Any] = default(default_factory=dict)
    #: The model, for repository-scoped rules (model-scoped rules get theirs from the engine).
    model: str | None = None
    #: Overrides the rule's default severity (e.g. a layout quirk that becomes fatal).
    severity: Severity | None = None
    #: The replica (its Prometheus ``instance`` label), for fleet rules.
    instance: str | None = None


@record(frozen=True)
class Location:
    path: str | None
    line: int | None = None
    field: str | None = None


@record(frozen=True)
class Finding:
    rule: str
    name: str
    severity: Severity
    title: str
    model: str | None
    version: str | None
    location: Location
    message: str
    triton_message: str | None
    fix: str | None
    evidence: dict[str, Any]
    #: The replica the finding is about (its ``instance`` label), in a fleet run.
    instance: str | None = None
    #: The repository path as the run spelt it (``repo``, ``../x/repo``, ``/abs/repo``), which
    #: the fingerprint leaves out of the message.
    root: str | None = default(default=None, compare=False, repr=False)

    @property
    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the rule id, model, version, config field
        path and message, joined by U+001F, where the message has the repository's path
        (``root``) taken out: the same for the repository given as ``repo``, ``./repo/`` or
        ``/abs/repo``, on any machine, and wherever the field sits in config.pbtxt (no line
        numbers). Text from a snapshot or a server may hold lone surrogates (JSON's
        ``\\ud800``): hashed as they are."""
        from triton_doctor.hashes import algorithm  # only where findings are reported

        message = self.message
        if self.root:
            # The root where a path starts (not inside a longer name, nor "." of "../").
            message = re.sub(rf"(?<![\w./-]){re.escape(self.root)}/", "", message)
        identity = self.identity(message).encode("utf-8", "surrogatepass")
        return str(algorithm("sha256")(identity).hexdigest()[:16])

    def identity(self, message: str, *about: str) -> str:
        """What makes two findings the same problem: the rule, where it is (model, version,
        config field), ``about`` (what else tells them apart) and ``message`` as given."""
        replica = (self.instance,) if self.instance else ()
        return "\x1f".join([self.rule, self.model or "", self.version or "",
                             self.location.field or "", *replica, *about, message])


@record(frozen=True)
class Skipped:
    """A rule that could not judge, and why (never reported as passed)."""

    rule: str
    model: str | None
    reason: str
    #: True when the rule itself failed (a defect to report), not its input.
    internal: bool = False
