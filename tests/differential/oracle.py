"""Ask the real server and triton-doctor about the same repository, and keep both answers.

The server is the oracle: one explicit-mode server loads every case of one shared
repository, and its reason for each refusal is taken from where 2.51.0 puts it:

* the load answer (``POST /v2/repository/models/<m>/load``) for load-time errors;
* the log for poll-time errors, where the load answer only says
  ``failed to poll from model repository``: ``Poll failed for model directory '<m>': <msg>``,
  preceded, for a config that does not parse, by libprotobuf's
  ``Error parsing text-format inference.ModelConfig: <line>:<col>: <why>``.

Other error and warning lines that name the model are kept as related text: a linter that
quotes one of them quotes the server too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.differential.cases import Case
from tests.server_harness import LoadResult, TritonServer

__all__ = [
    "EXPLICIT_MODE",
    "SERVER_TARGET",
    "DoctorRun",
    "ExplicitModeResult",
    "HasFiles",
    "InferAnswer",
    "LoadResult",
    "LogLine",
    "PendingDoctor",
    "Refusal",
    "TritonServer",
    "agreeing",
    "infer",
    "load_all",
    "parse_log",
    "refusal",
    "refusal_from_log",
    "strict_xfails",
    "version_dirs",
    "write_repository",
]

GENERIC_POLL_FAILURE = "failed to poll from model repository"
TEXT_PROTO_FAILURE = "failed to read text proto from "

# E1129 18:49:45.463106 3668 model_repository_manager.cc:1460] "Poll failed for ..."
_TRITON_LINE = re.compile(r"^(?P<level>[EWI])\d{4} \S+ +\d+ (?P<where>[^\]\s]+)\] (?P<msg>.*)$")
# [libprotobuf ERROR /tmp/.../text_format.cc:337] Error parsing text-format ...
_PROTOBUF_LINE = re.compile(r"^\[libprotobuf (?P<level>\w+) (?P<where>[^\]]+)\] (?P<msg>.*)$")
_POLL_FAILED = re.compile(r"^Poll failed for model directory '(?P<model>[^']*)': (?P<msg>.*)$")


@dataclass(frozen=True)
class LogLine:
    """One message of the server log; ``level`` is E/W/I, ``libprotobuf`` or ``fatal``."""

    index: int
    level: str
    where: str
    message: str


def _unquote(message: str) -> str:
    """Triton 2.51 prints messages in double quotes, escaped like a JSON string."""
    if len(message) >= 2 and message[0] == message[-1] == '"':
        try:
            value = json.loads(message)
        except ValueError:
            return message[1:-1]
        if isinstance(value, str):
            return value
    return message


def parse_log(text: str) -> list[LogLine]:
    """The messages of a server log (tables and banners are skipped)."""
    lines: list[LogLine] = []
    for index, raw in enumerate(text.splitlines()):
        if match := _TRITON_LINE.match(raw):
            message = _unquote(match["msg"])
            lines.append(LogLine(index, match["level"], match["where"], message))
        elif match := _PROTOBUF_LINE.match(raw):
            lines.append(LogLine(index, "libprotobuf", match["where"], match["msg"]))
        elif raw.startswith("error: "):
            lines.append(LogLine(index, "fatal", "", raw.removeprefix("error: ")))
    return lines


def _names(model: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(model)}(?!\w)")


@dataclass(frozen=True)
class Refusal:
    """Why the server refused a model, as it said it."""

    model: str
    reason: str
    """The primary reason, verbatim (paths point into the original repository)."""
    source: str
    """Where ``reason`` came from: the load answer or which log line(s)."""
    related: tuple[str, ...] = ()
    """Other error/warning log messages that name the model."""

    @property
    def text(self) -> str:
        """Everything the server said about the model, for substring matching."""
        return "\n".join((self.reason, *self.related))


def refusal_from_log(model: str, log: list[LogLine]) -> Refusal | None:
    """The poll-time reason for ``model`` from the log, if the log has one."""
    for position, line in enumerate(log):
        match = _POLL_FAILED.match(line.message)
        if line.level != "E" or not match or match["model"] != model:
            continue
        reason, source = match["msg"], f"log: Poll failed ({line.where})"
        if reason.startswith(TEXT_PROTO_FAILURE):
            # Polls run one at a time, so the parse error is the closest libprotobuf line above.
            for earlier in reversed(log[:position]):
                if earlier.level == "libprotobuf":
                    reason = f"{earlier.message}\n{reason}"
                    where = earlier.where.rsplit("/", 1)[-1]
                    source = f"log: libprotobuf ({where}) + Poll failed ({line.where})"
                    break
        return Refusal(model, reason, source)
    prefix = f"failed to load model '{model}': "
    for line in log:
        if line.level == "E" and line.message.startswith(prefix):
            return Refusal(model, line.message, f"log: failed to load model ({line.where})")
    return None


def refusal(model: str, load: LoadResult, log: list[LogLine]) -> Refusal | None:
    """The server's reason for refusing ``model``; None if it loaded (or gave no reason)."""
    if load.ok or load.status == 0 or not load.error:
        return None
    found: Refusal | None
    if GENERIC_POLL_FAILURE in load.error:
        found = refusal_from_log(model, log)
    else:
        found = Refusal(model, load.error, "load response")
    if found is None:
        return None
    pattern = _names(model)
    related = tuple(
        dict.fromkeys(
            line.message
            for line in log
            if line.level in ("E", "W")
            and pattern.search(line.message)
            and line.message not in found.reason
        )
    )
    return Refusal(model, found.reason, found.source, related)


@dataclass
class DoctorRun:
    """One ``python -m triton_doctor check --format json`` run over a repository."""

    command: list[str]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""

    def _report(self) -> dict[str, Any]:
        try:
            report = json.loads(self.stdout)
        except ValueError:
            report = None
        if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
            raise AssertionError(
                f"triton-doctor did not print a JSON report with a 'findings' list\n"
                f"command: {' '.join(self.command)}\nexit code: {self.returncode}\n"
                f"stdout: {self.stdout[-2000:]!r}\nstderr: {self.stderr[-2000:]}"
            )
        return report

    def findings(self) -> list[dict[str, Any]]:
        """The parsed ``findings``; AssertionError (with what the CLI printed) otherwise."""
        return [f for f in self._report()["findings"] if isinstance(f, dict)]

    def crashed_rules(self) -> list[str]:
        """``rule model: reason`` of each rule that crashed (a skip marked ``internal``)."""
        skipped = self._report().get("skipped")
        return [
            f"{s.get('rule')} {s.get('model')}: {s.get('reason')}"
            for s in (skipped if isinstance(skipped, list) else [])
            if isinstance(s, dict) and s.get("internal") is True
        ]

    def for_model(self, *models: str | None) -> list[dict[str, Any]]:
        return [f for f in self.findings() if f.get("model") in models]


#: The server the oracle runs, as triton-doctor's target: release 24.10 (Triton 2.51.0), with no
#: GPUs. Judged for it, triton-doctor must say what that server says.
SERVER_TARGET = ("--triton-version", "2.51.0", "--gpus", "0")

#: How the oracle's server runs: it loads only what it is asked to, keeps running after a
#: refusal, and answers /v2/health/ready while a model is refused.
EXPLICIT_MODE = (
    "--model-control-mode=explicit",
    "--exit-on-error=false",
    "--strict-readiness=false",
)


class PendingDoctor:
    """triton-doctor started in the background, so it runs while the server loads models."""

    def __init__(self, repository: Path, *options: str) -> None:
        command = [sys.executable, "-m", "triton_doctor", "check", "--format", "json"]
        command += ["--exit-zero", *options, str(repository)]
        self.run = DoctorRun(command)
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def result(self, timeout: float = 120.0) -> DoctorRun:
        try:
            self.run.stdout, self.run.stderr = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self.run.stdout, self.run.stderr = self._process.communicate()
            self.run.stderr += f"\n[killed after {timeout} s]"
        self.run.returncode = self._process.returncode
        return self.run


class HasFiles(Protocol):
    """A case, or a generated repository: its files relative to the repository root."""

    @property
    def files(self) -> Mapping[str, str]: ...


def write_repository(root: Path, cases: Iterable[HasFiles]) -> Path:
    """Write the cases' files under ``root`` (a path ending in '/' is an empty directory)."""
    for case in cases:
        for relative, content in case.files.items():
            path = root / relative
            if relative.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def version_dirs(case: Case, model: str) -> set[str]:
    """The numeric version directories ``case`` creates for ``model``."""
    versions = set()
    for relative in case.files:
        parts = relative.split("/")
        if len(parts) > 2 and parts[0] == model and parts[1].isdigit():
            versions.add(parts[1])
    return versions


@dataclass
class ExplicitModeResult:
    """What one explicit-mode server said about each case of a shared repository."""

    repository: Path
    loads: dict[str, LoadResult]
    refusals: dict[str, Refusal]
    index: list[dict[str, Any]]
    log: str
    states: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entry in self.index:
            if "version" in entry:
                self.states[(entry["name"], entry["version"])] = entry.get("state", "")


def load_all(
    server: TritonServer, models: Iterable[str], workers: int = 8, timeout: float = 60.0
) -> ExplicitModeResult:
    """POST a load for every model in parallel; collect answers, refusals and the index."""
    names = list(models)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda m: server.load(m, timeout=timeout), names))
    loads = {answer.model: answer for answer in answers}
    index = server.get_json("/v2/repository/index")
    log_text = server.to_source_paths(server.log())
    log = parse_log(log_text)
    refusals: dict[str, Refusal] = {}
    for name, answer in loads.items():
        local = LoadResult(
            answer.model,
            answer.status,
            None if answer.error is None else server.to_source_paths(answer.error),
            answer.seconds,
        )
        loads[name] = local
        if (found := refusal(name, local, log)) is not None:
            refusals[name] = found
    entries = [e for e in index if isinstance(e, dict)] if isinstance(index, list) else []
    return ExplicitModeResult(server.repository, loads, refusals, entries, log_text)


def agreeing(findings: Sequence[Mapping[str, Any]], said: Refusal) -> list[Mapping[str, Any]]:
    """Error findings whose ``triton_message`` quotes what the server said (or vice versa)."""
    text, reason = said.text, said.reason.strip()
    matches = []
    for finding in findings:
        quoted = finding.get("triton_message")
        if finding.get("severity") != "error" or not isinstance(quoted, str) or not quoted:
            continue
        if quoted in text or reason in quoted:
            matches.append(finding)
    return matches


@dataclass(frozen=True)
class InferAnswer:
    """The answer to one ``POST /v2/models/<m>/infer`` (JSON, no binary data)."""

    status: int
    """HTTP status; 0 when the request timed out or the connection failed."""
    outputs: tuple[str, ...] = ()
    """Names of the outputs in a successful answer."""
    error: str | None = None
    """The ``error`` field of a failed answer (or the raw body, or the client error)."""


def infer(server: TritonServer, model: str, timeout: float = 30.0) -> InferAnswer:
    """Send ``model`` one request with INPUT0 = FP32 [ 1, 4 ] and no requested outputs."""
    tensor = {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}
    data = json.dumps({"inputs": [tensor]}).encode()
    status, body = server.post(f"/v2/models/{model}/infer", data, timeout)
    if status == 0:
        return InferAnswer(0, error=body)
    try:
        answer = json.loads(body)
    except ValueError:
        return InferAnswer(status, error=body)
    if status != 200:
        return InferAnswer(status, error=str(answer.get("error", body)))
    names = tuple(str(o.get("name")) for o in answer.get("outputs", []) if isinstance(o, dict))
    return InferAnswer(status, outputs=names)


def strict_xfails(items: Iterable[Any], ids: Callable[[Any], str],
                  known: Mapping[str, str]) -> list[Any]:
    """``items`` as pytest parameters; one whose id ``known`` names is a strict xfail giving
    the reason, so that a fix shows up as XPASS and the entry must then go."""
    return [pytest.param(item, id=ids(item),
                         marks=[pytest.mark.xfail(strict=True, reason=known[ids(item)])]
                         if ids(item) in known else [])
            for item in items]
