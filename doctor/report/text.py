"""The text report: grouped by model, the fix under each finding, fits 100 columns."""

from __future__ import annotations

import textwrap
from itertools import groupby

from triton_doctor.engine import Result
from triton_doctor.findings import Finding, Severity
from triton_doctor.report.json_report import summary

WIDTH = 100
INDENT = " " * 10
COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


class Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text


def _wrap(label: str, text: str) -> list[str]:
    lines: list[str] = []
    for index, paragraph in enumerate(text.splitlines() or [""]):
        first = INDENT + (label if index == 0 else " " * len(label))
        lines.extend(
            textwrap.wrap(
                paragraph,
                WIDTH,
                initial_indent=first,
                subsequent_indent=INDENT + " " * len(label),
                break_long_words=True,
                break_on_hyphens=False,
            )
            or [first.rstrip()]
        )
    return lines


def _where(finding: Finding, model_path: str | None) -> str:
    path = finding.location.path or ""
    if model_path and path.startswith(model_path + "/"):
        path = path[len(model_path) + 1 :]
    elif model_path and path == model_path:
        path = ""
    return f"{path}:{finding.location.line}" if path and finding.location.line else path


def render(result: Result, colour: bool = False, repository: str | None = None) -> str:
    """``repository`` is the repository's path as the findings' paths begin with it; without
    it the reporter finds the root from the models' config paths where it can."""
    style = Style(colour)
    out: list[str] = []
    root = repository if repository is not None else _repository_root(result)
    for model, group in groupby(result.findings, key=lambda f: f.model):
        findings = list(group)
        model_path = _model_path(model, findings, root)
        label = model or ("(server)" if findings[0].rule[2] in "678" else "(repository)")
        out.append(style(label, "1") + (f"  {model_path}" if model_path else ""))
        for finding in findings:
            severity = f"{finding.severity!s:<8}"
            head = f"  {style(severity, COLOURS[finding.severity])}{finding.rule} {finding.name}"
            where = _where(finding, model_path)
            if where:
                head += f"  {style(where, '2')}"
            out.append(head)
            out.extend(_wrap("", finding.message))
            if finding.triton_message:
                out.extend(_wrap("triton: ", finding.triton_message))
            if finding.fix:
                out.extend(_wrap("fix: ", finding.fix))
        out.append("")
    counts = summary(result)
    affected = len({f.model for f in result.findings})
    tally = ", ".join(_plural(counts[str(s)], str(s)) for s in reversed(Severity))
    line = (f"{tally} in {affected} of {_plural(result.models, 'model')}" if result.models
            else tally)
    line += f" · {result.rules_run} rules" + (
        f", {counts['skipped']} skipped" if counts["skipped"] else ""
    )
    if counts["suppressed"]:
        line += f" · {counts['suppressed']} suppressed inline"
    mark = style("✗", "31") if counts["error"] else style("✓", "32")
    out.append(f"{mark} {line}")
    return "\n".join(out) + "\n"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 or noun == "info" else "s")


def _model_path(model: str | None, findings: list[Finding], root: str | None) -> str | None:
    """The model directory, shown once in the header so that locations under it stay short.

    A model's directory is the path component right under the repository root, named as the
    model; the model's name may recur deeper (``model/1/model.onnx``, a model named ``1``) or
    in the root itself, so a path is never cut at just any ``/<model>``.
    """
    if model is None:
        for finding in findings:
            path = finding.location.path
            if path and path.endswith("/config.pbtxt"):
                return path.rsplit("/", 1)[0]
        return None
    paths = [f.location.path for f in findings if f.location.path]
    if root is not None:
        directory = f"{root.rstrip('/')}/{model}"
        if any(path == directory or path.startswith(directory + "/") for path in paths):
            return directory
    for path in paths:
        found = _config_dir(model, path)
        if found is not None:
            return found
    for path in paths:
        parts = path.split("/")
        # parts[0] is (the start of) the repository root: a model directory lies below it
        if model in parts[1:]:
            return "/".join(parts[: parts.index(model, 1) + 1])
    return None


def _config_dir(model: str, path: str) -> str | None:
    """The model's directory when ``path`` is the model's config: ``<dir>/config.pbtxt``, or
    ``<dir>/configs/<name>.pbtxt`` (--model-config-name), where ``<dir>`` is named ``model``."""
    head, _, name = path.rpartition("/")
    if name == "config.pbtxt" and head.rpartition("/")[2] == model:
        return head
    parent, _, sub = head.rpartition("/")
    if sub == "configs" and name.endswith(".pbtxt") and parent.rpartition("/")[2] == model:
        return parent
    return None


def _repository_root(result: Result) -> str | None:
    """The repository root, from the config paths of the models judged (suppressed findings
    included); None when no finding is on a model's config, or they disagree."""
    roots = set()
    for finding in [*result.findings, *(s.finding for s in result.suppressed)]:
        if finding.model is not None and finding.location.path:
            directory = _config_dir(finding.model, finding.location.path)
            if directory is not None:
                roots.add(directory.rpartition("/")[0])
    return roots.pop() if len(roots) == 1 else None
