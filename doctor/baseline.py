"""Baselines: adopt the tool on a repository that already has findings, and fail only on new
ones.

``check --write-baseline FILE`` records the fingerprints of the current findings (see
``Finding.fingerprint``: stable across line moves and the repository's spelling);
``check --baseline FILE`` moves the findings whose fingerprint it holds out of the findings that
count (they are listed as baselined) and reports the recorded ones that no longer appear as
fixed. The file is JSON, sorted and written atomically, so that it diffs well under review::

    {"schema": "triton-doctor/baseline/v1",
     "findings": [{"fingerprint": "0a1b2c3d4e5f6a7b", "rule": "TD303", "model": "bert",
                   "repository": "models"}]}

``repository`` is the repository's directory relative to the baseline file's, so a baseline of
one repository holds back nothing in another checked in the same run, however either is spelled
on the command line; an entry without it holds back its fingerprint in any repository. Only
reading and writing the file does I/O; ``apply`` is pure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from triton_doctor.findings import Finding
from triton_doctor.records import record, replace
from triton_doctor.result import Result
from triton_doctor.safe_files import read_file, write_file

SCHEMA = "triton-doctor/baseline/v1"
#: A baseline holds a line per finding: a larger file is refused, not read into memory whole.
MAX_BASELINE_BYTES = 16 * 1024 * 1024


class BaselineError(ValueError):
    """A baseline file that cannot be read or is not one (a usage error, exit 2)."""


@record(frozen=True)
class Entry:
    """One recorded finding: its fingerprint, and the rule and model to tell a reader which."""

    fingerprint: str
    rule: str
    model: str | None
    #: The repository's directory relative to the baseline file's; None: any repository.
    repository: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"fingerprint": self.fingerprint, "rule": self.rule, "model": self.model,
                "repository": self.repository}


@record(frozen=True)
class Applied:
    """Results with a baseline applied: their ``findings`` hold only the new findings."""

    results: list[Result]
    baselined: list[Finding]
    #: Recorded findings that no longer appear (neither found nor suppressed).
    fixed: list[Entry]


def entries(findings: list[Finding], path: str) -> list[Entry]:
    """The baseline file ``path`` of ``findings``: one entry per repository and fingerprint,
    sorted."""
    base = _directory_of(path)
    unique = {(where := _repository(f, base), f.fingerprint):
              Entry(f.fingerprint, f.rule, f.model, where) for f in findings}
    return [unique[key] for key in sorted(unique, key=lambda k: (k[0] or "", k[1]))]


def _directory_of(path: str) -> str:
    return os.path.dirname(os.path.abspath(path))


def _repository(finding: Finding, base: str) -> str | None:
    """The finding's repository as a baseline names it: relative to ``base``, "/" separated."""
    if not finding.root:
        return None
    return os.path.relpath(os.path.abspath(finding.root), base).replace(os.sep, "/")


def write(findings: list[Finding], path: str) -> None:
    """Raises BaselineError naming ``path`` when it cannot be written."""
    document = {"schema": SCHEMA,
                "findings": [e.as_dict() for e in entries(findings, path)]}
    try:
        write_file(path, (json.dumps(document, indent=1) + "\n").encode("utf-8"))
    except OSError as error:
        raise BaselineError(f"{path}: cannot write the baseline: "
                            f"{error.strerror or error}") from None


def read(path: str) -> list[Entry]:
    """Raises BaselineError naming ``path`` for a missing, unreadable or malformed file."""
    try:
        data = json.loads(read_file(path, MAX_BASELINE_BYTES).decode("utf-8"))
    except OSError as error:
        raise BaselineError(f"{path}: cannot read the baseline: {error.strerror or error}; "
                            "write one with `triton-doctor check REPO --write-baseline "
                            f"{path}`") from None
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested past Python
        raise BaselineError(f"{path}: not a baseline (not JSON: {error})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise BaselineError(f"{path}: not a {SCHEMA} baseline (schema: {found!r})")
    recorded = data.get("findings")
    if not isinstance(recorded, list):
        raise BaselineError(f"{path}: findings must be a list")
    return [_entry(item, f"{path}: findings[{index}]") for index, item in enumerate(recorded)]


def _entry(item: Any, where: str) -> Entry:
    optional = (str, type(None))
    if not isinstance(item, dict) or not isinstance(item.get("fingerprint"), str) \
            or not isinstance(item.get("rule"), str) \
            or not isinstance(item.get("model"), optional) \
            or not isinstance(item.get("repository"), optional):
        raise BaselineError(f"{where} must be an object with a fingerprint and a rule (strings) "
                            "and a model and a repository (each a string or null)")
    return Entry(item["fingerprint"], item["rule"], item["model"], item.get("repository"))


def apply(results: list[Result], recorded: list[Entry], path: str,
          checked: Sequence[str]) -> Applied:
    """Split each Result's findings into new and baselined by the baseline file ``path``'s
    entries; a finding now suppressed is not fixed, nor one of a repository not ``checked``."""
    base = _directory_of(path)
    repositories = {os.path.relpath(os.path.abspath(r), base).replace(os.sep, "/")
                    for r in checked}
    recorded = [e for e in recorded if e.repository is None or e.repository in repositories]
    anywhere = {e.fingerprint for e in recorded if e.repository is None}
    known = {(e.repository, e.fingerprint) for e in recorded}

    def is_known(finding: Finding) -> bool:
        return (finding.fingerprint in anywhere
                or (_repository(finding, base), finding.fingerprint) in known)

    found = [f for r in results for f in r.findings]
    seen = [*found, *(s.finding for r in results for s in r.suppressed)]
    present = {(_repository(f, base), f.fingerprint) for f in seen}
    present_anywhere = {f.fingerprint for f in seen}
    fixed = sorted({e for e in recorded
                    if ((e.repository, e.fingerprint) not in present if e.repository is not None
                        else e.fingerprint not in present_anywhere)},
                   key=lambda e: (e.repository or "", e.model or "", e.rule, e.fingerprint))
    return Applied([replace(r, findings=[f for f in r.findings if not is_known(f)])
                    for r in results],
                   [f for f in found if is_known(f)], fixed)
