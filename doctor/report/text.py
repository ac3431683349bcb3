"""The text report: grouped by model, the fix under each finding, fits 100 columns.

Every line is the reporter's own: a model's header starts at column 0 (its name quoted when
it begins or ends with white space), a finding at column 2 with its severity, and everything
else under the finding at column 10. Text from outside is escaped before it is placed
(``printable``), so it cannot drive the terminal or start a line; the newlines a server's
reason or a fix holds on purpose (a traceback, a config block) become lines indented under
their label, never a line that passes for a header, a finding or a label. A message is one
sentence, so a newline in it (from a name it quotes) is shown as ``\\n``.
"""

from __future__ import annotations

import textwrap
from itertools import groupby

from triton_doctor.findings import Finding, Severity
from triton_doctor.printable import printable
from triton_doctor.report.json_report import summary
from triton_doctor.result import Result

WIDTH = 100
INDENT = " " * 10
COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


class Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text


def _wrap(label: str, text: str, keep_newlines: bool = True) -> list[str]:
    lines: list[str] = []
    shown = printable(text.rstrip("\n"), keep_newlines=keep_newlines)
    for index, paragraph in enumerate(shown.split("\n")):
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
    path = printable(path)
    return f"{path}:{finding.location.line}" if path and finding.location.line else path


def _label(model: str) -> str:
    """A model's name for its header: quoted when white space would hide where it begins or
    ends (a name "  error ..." would pass for a finding)."""
    shown = printable(model)
    return f'"{shown}"' if shown[0].isspace() or shown[-1].isspace() else shown


def _unnamed(finding: Finding) -> str:
    """The heading of the findings about no model: the fleet's, the server's or the
    repository's."""
    if finding.rule.startswith("TD9") or finding.instance:
        return "(fleet)"
    return "(server)" if finding.rule[2] in "678" else "(repository)"


def header(settings: str | None = None, gpus: int | None = None) -> list[str]:
    """``settings``: the settings file that applied, named first, since it can select, ignore
    and waive rules. ``gpus``: how many GPUs the judged server has, named since instance
    groups are judged for that machine (None: unknown)."""
    out: list[str] = [f"settings: {printable(settings)}"] if settings else []
    if gpus is not None:
        out.append(f"machine: {gpus} GPU{'' if gpus == 1 else 's'}"
                   + (" (a CPU-only server)" if gpus == 0 else ""))
    return out


def render(result: Result, colour: bool = False, repository: str | None = None,
           settings: str | None = None, gpus: int | None = None,
           lowest: Severity = Severity.INFO) -> str:
    """``repository``: the path the findings' paths begin with, under which each model's
    directory heads its findings; ``settings`` and ``gpus`` as for ``header``. Only the
    findings at or above ``lowest`` are shown (``--quiet``); the summary counts them all."""
    style = Style(colour)
    out = header(settings, gpus)
    shown = (f for f in result.findings if f.severity >= lowest)
    for model, group in groupby(shown, key=lambda f: f.model):
        findings = list(group)
        model_path = _model_path(model, findings, repository)
        label = _label(model) if model else _unnamed(findings[0])
        out.append(style(label, "1") + (f"  {printable(model_path)}" if model_path else ""))
        for finding in findings:
            severity = f"{finding.severity!s:<8}"
            head = f"  {style(severity, COLOURS[finding.severity])}{finding.rule} {finding.name}"
            where = _where(finding, model_path) or printable(finding.instance or "")
            if where:
                head += f"  {style(where, '2')}"
            out.append(head)
            # A message is one sentence: a newline in it comes from a name it quotes, and
            # its next line would start where "triton:" and "fix:" do.
            out.extend(_wrap("", finding.message, keep_newlines=False))
            if finding.triton_message:
                out.extend(_wrap("triton: ", finding.triton_message))
            if finding.fix:
                out.extend(_wrap("fix: ", finding.fix))
        out.append("")
    out.append(summary_line(result, colour))
    return "\n".join(out) + "\n"


def summary_line(result: Result, colour: bool = False, prefix: str = "") -> str:
    """The counts of ``result`` on one line, marked ✗ when it holds an error."""
    style = Style(colour)
    counts = summary(result)
    # A model is known by its repository too: two repositories may each have an "m".
    affected = len({(f.root, f.model) for f in result.findings if f.model is not None})
    tally = ", ".join(_plural(counts[str(s)], str(s)) for s in reversed(Severity))
    line = (f"{tally} in {affected} of {_plural(result.models, 'model')}" if result.models
            else tally)
    line += f" · {result.rules_run} rules" + (
        f", {counts['skipped']} skipped" if counts["skipped"] else ""
    )
    if counts["suppressed"]:
        line += f" · {counts['suppressed']} suppressed inline"
    if result.without_model_files:
        line += (f" · {_plural(result.without_model_files, 'model')} judged without "
                 "model files (--configs-only)")
    mark = style("✗", "31") if counts["error"] else style("✓", "32")
    return f"{mark} {prefix}{line}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 or noun == "info" else "s")


def _model_path(model: str | None, findings: list[Finding],
                repository: str | None) -> str | None:
    """The model directory, shown once in the header so that locations under it stay short:
    the component named as the model right under the repository (the name may recur deeper,
    as in ``model/1/model.onnx``, or in the repository's own path)."""
    paths = [f.location.path for f in findings if f.location.path]
    if model is None:
        return next((p.rsplit("/", 1)[0] for p in paths if p.endswith("/config.pbtxt")), None)
    if repository is None:
        return None
    directory = f"{repository.rstrip('/')}/{model}"
    return directory if any(p == directory or p.startswith(directory + "/")
                            for p in paths) else None
