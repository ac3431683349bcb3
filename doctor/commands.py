"""The commands' bodies: each runs one Invocation (``rules`` and ``explain`` their one argument)
and returns the exit code, an API (see README): 0 nothing at or above --fail-on, 1 findings
at or above it, 2 a usage error or unreadable target, 3 a live source out of reach."""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from triton_doctor.catalogue import all_rules, describe, find_rule
from triton_doctor.evidence import Evidence
from triton_doctor.findings import Severity
from triton_doctor.invocation import Invocation, Output
from triton_doctor.printable import display_name, printable
from triton_doctor.result import Result, merged
from triton_doctor.result_cache import prepare
from triton_doctor.safe_files import write_file

if TYPE_CHECKING:
    from triton_doctor.baseline import Applied

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


def say(message: object) -> None:
    """A message on stderr; what it quotes from outside (paths, server replies, reasons)
    is escaped so that it cannot drive the terminal or pass for another line."""
    print(f"triton-doctor: {printable(str(message))}", file=sys.stderr)


class _Stop(Exception):
    """The command ends here with an exit code; its message is on stderr already."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _collected(invocation: Invocation, live: bool = True,
               meanwhile: Callable[[], None] | None = None) -> Evidence:
    """The Evidence the invocation asks for (the server left out unless ``live``); a target that
    cannot be read (exit 2) is said and raised as _Stop. A live source out of reach is said
    here and stays in the Evidence (``unreachable``), reported with the rest. ``meanwhile``:
    work of this process's, done while others read the models."""
    from triton_doctor.checks import collect

    try:
        evidence = collect.collect(invocation, live=live, meanwhile=meanwhile)
    except (ValueError, collect.TargetError) as error:  # SnapshotError, UsageError too
        say(error)
        raise _Stop(EXIT_USAGE) from None
    for why in evidence.unreachable.values():
        say(f"the snapshot records: {why}" if invocation.sources.snapshot else why)
    return evidence


@contextlib.contextmanager
def _collections_paused() -> Iterator[None]:
    """The garbage collector paused while a check reads, judges and reports (and in its forked
    processes, which inherit the pause). Each automatic collection walks every object the run
    keeps, the whole Evidence: a check of 5,000 models spent a sixth of its time in them. What
    it leaves in reference cycles is little (8,000 objects, 0.6 MB, per 1,000 models), and
    freed when the collector runs again or the process ends. Not around the TUI, which lives
    on.

    Once resumed, the first collection would walk everything made while paused (20 ms for
    1,000 models), as all of it is still in the youngest generation. So the objects are moved
    to the oldest one first (frozen and thawed: no walk), which is collected only once it has
    grown by a quarter; unless some were frozen already (another caller's, left as they are)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _unreached(evidence: Sequence[Evidence], code: int) -> int:
    """EXIT_UNREACHABLE when a source the user named could not be read (whatever the findings
    and --exit-zero: the report is partial), else ``code``."""
    return EXIT_UNREACHABLE if any(e.unreachable for e in evidence) else code


def check(invocation: Invocation, ended: Callable[[int], None] | None = None) -> int:
    """Each repository is collected and judged on its own (``per_repository``), and the
    Results merged into one report (or browsed, with --tui). Without --tui, ``ended`` (the
    process's own run's) is called with the exit code once the report is written, while what
    the check made is still held: the process may end there without freeing it."""
    try:
        with _collections_paused():
            # While other processes read the models, this one imports what judging takes.
            judged = [(one, _collected(one, meanwhile=functools.partial(
                prepare, one.chosen_rules, bool(one.sources.cache_dir))))
                      for one in invocation.per_repository()]
            if not invocation.output.tui:
                code = _reported(invocation, judged,
                                 [one.judge(evidence) for one, evidence in judged])
                if ended is not None:
                    ended(code)
                return code
    except _Stop as stop:
        return stop.code
    from triton_doctor.tui.launch import browse

    try:
        results = [browse(invocation, judged[0][1])]
    except ValueError as error:
        say(error)
        return EXIT_USAGE
    return _reported(invocation, judged, results)


def _reported(invocation: Invocation, judged: list[tuple[Invocation, Evidence]],
              results: list[Result]) -> int:
    """The check's exit code, after its cache is saved and its report written (with --tui,
    the report was the screen)."""
    output = invocation.output
    for _, evidence in judged:
        if evidence.repository is not None and evidence.repository.cache is not None:
            evidence.repository.cache.save()
    try:
        results, known = _baselined(output, results, invocation.sources.repositories)
    except ValueError as error:  # BaselineError
        say(error)
        return EXIT_USAGE
    result = merged(results)
    for skipped in result.skipped:
        if skipped.internal:
            say(f"{skipped.rule} on {skipped.model or 'the repository'}: {skipped.reason}")
    code = _unreached([e for _, e in judged], _exit_code(result, output))
    if output.tui:
        return code
    evidence = judged[0][1]
    parts = [(e.repository.path if e.repository else None, r)
             for (_, e), r in zip(judged, results, strict=True)]
    statistics = None
    if output.statistics:
        from triton_doctor.report.statistics import per_rule

        statistics = per_rule(f for f in result.findings
                              if not output.quiet or f.severity >= output.fail_on)
    if output.format == "json":
        from triton_doctor.report import json_report

        held_back = None
        if known:
            from triton_doctor.report.baselined import json_parts

            held_back = json_parts(known)
        report = json_report.render(result, _judged(invocation, evidence), code,
                                    json_report.summaries(parts) or None, statistics, held_back)
    elif output.format in ("sarif", "github", "gitlab", "junit"):
        from triton_doctor.report import platforms

        report = platforms.render(
            output.format, [(e, r) for (_, e), r in zip(judged, results, strict=True)],
            list(invocation.rules), output.fail_on, _checkout_root(invocation),
            known.baselined if known else (), output.write_baseline or output.baseline)
    else:
        from triton_doctor.report import several

        report = several.render(
            parts, colour=output.colour, settings=invocation.settings_source,
            gpus=evidence.options.gpus, quiet_below=output.fail_on if output.quiet else None)
        if statistics is not None and (report or not output.quiet):
            from triton_doctor.report.statistics import table

            report += table(statistics)
        if known is not None and not output.quiet:
            from triton_doctor.report import baselined

            report += baselined.text(known, output.write_baseline or output.baseline or "")
    return _written(report, output.path) or code


def _checkout_root(invocation: Invocation) -> str:
    """What CI systems name files from: the checkout holding the (first) repository, the
    nearest directory above it with a ``.git``; else the working directory."""
    if invocation.sources.repositories:
        here = os.path.abspath(invocation.sources.repositories[0])
        while not os.path.exists(os.path.join(here, ".git")):
            if os.path.dirname(here) == here:
                return os.getcwd()
            here = os.path.dirname(here)
        return here
    return os.getcwd()


def _baselined(output: Output, results: list[Result],
               checked: Sequence[str]) -> tuple[list[Result], Applied | None]:
    """The Results less the known findings, and what the baseline held back and what it
    records as gone; ``--write-baseline`` first records every current finding as known (and
    reads no older baseline). Raises BaselineError naming the file."""
    if output.write_baseline is None and output.baseline is None:
        return results, None
    from triton_doctor import baseline

    if output.write_baseline is not None:
        found = [f for r in results for f in r.findings]
        baseline.write(found, output.write_baseline)
        recorded = baseline.entries(found, output.write_baseline)
        say(f"wrote {output.write_baseline} ({len(recorded)} known finding"
            f"{'' if len(recorded) == 1 else 's'})")
    else:
        assert output.baseline is not None
        recorded = baseline.read(output.baseline)
    applied = baseline.apply(results, recorded, output.write_baseline or output.baseline or "",
                             checked)
    return applied.results, applied


def _written(report: str, path: str | None) -> int | None:
    """``report`` on stdout, or in the file ``path`` (replaced whole); EXIT_USAGE, said, when
    that file cannot be written."""
    if path is None:
        sys.stdout.write(report)
        return None
    try:
        write_file(path, report.encode())
    except OSError as error:
        say(f"cannot write {path}: {error.strerror or error}")
        return EXIT_USAGE
    return None


def _judged(invocation: Invocation, evidence: Evidence,
            ) -> dict[str, str | int | float | list[str]]:
    """What was judged, for the JSON report (``evidence``: the first repository's)."""
    target: dict[str, str | int | float | list[str]] = {}
    if invocation.settings_source:
        target["settings"] = invocation.settings_source
    if len(invocation.sources.repositories) > 1:
        target["repositories"] = list(invocation.sources.repositories)
    elif evidence.repository is not None:
        target["repository"] = evidence.repository.path
    if invocation.sources.url:
        from triton_doctor.checks.collect import hide_credentials

        target["server"] = hide_credentials(invocation.sources.url)
    elif evidence.server is not None:  # a snapshot's
        target["server"] = evidence.server.url
    target.update(_fleet_judged(invocation, evidence))
    if evidence.log is not None:
        target["log"] = evidence.log.source
    if invocation.sources.snapshot:
        target["snapshot"] = invocation.sources.snapshot
    if evidence.options.gpus is not None:
        target["gpus"] = evidence.options.gpus
    return target


def _fleet_judged(invocation: Invocation, evidence: Evidence) -> dict[str, str | int | float]:
    """The fleet judged, for the JSON report: where its series were read (the engine's URL,
    the selector, the window), and how many replicas were found."""
    fleet, asked = evidence.fleet, invocation.sources.fleet
    if fleet is None and asked is None:
        return {}
    if fleet is None:
        from triton_doctor.checks.collect import hide_credentials

        assert asked is not None
        return {"prometheus": hide_credentials(asked.url), **(
            {"selector": asked.selector} if asked.selector else {}),
            "window_s": invocation.sources.window_s}
    found: dict[str, str | int | float] = {"prometheus": fleet.url}
    if fleet.selector:
        found["selector"] = fleet.selector
    found["window_s"] = fleet.window_s
    found["replicas"] = len({t.instance for t in fleet.targets}
                            | {r.instance for r in fleet.replicas})
    return found


def snapshot(invocation: Invocation) -> int:
    from triton_doctor import snapshot as snapshot_file

    path = invocation.output.path
    assert path is not None
    try:
        evidence = _collected(invocation)
        snapshot_file.write(evidence, path)
    except _Stop as stop:
        return stop.code
    except ValueError as error:
        say(error)
        return EXIT_USAGE
    except OSError as error:
        say(f"cannot write {path}: {error.strerror or error}")
        return EXIT_USAGE
    parts = [part for part in ("repository", "server", "metrics", "gpu", "container", "host",
                               "log", "fleet") if getattr(evidence, part) is not None]
    say(f"wrote {path} ({', '.join(parts)}; unavailable: "
        f"{', '.join(evidence.unavailable) or 'none'})")
    return _unreached([evidence], EXIT_OK)


def watch(invocation: Invocation) -> int:
    from triton_doctor.tui import launch

    try:
        # The repository (or the snapshot) is read before the UI starts: its errors end here.
        return launch.watch(invocation, _collected(invocation, live=False))
    except _Stop as stop:
        return stop.code
    except ValueError as error:  # NeedsTerminal, UiFailed
        say(error)
        return EXIT_USAGE


def config(invocation: Invocation) -> int:
    """The configuration the server would run for one model directory; its refusals on
    stderr (exit 1)."""
    from triton_doctor.triton.effective_config import effective_config_text

    try:
        evidence = _collected(invocation)
    except _Stop as stop:
        return stop.code
    assert invocation.sources.model_dir is not None
    name = display_name(invocation.sources.model_dir)
    refusals = [finding.triton_message or finding.message
                for finding in invocation.judge(evidence).findings
                if finding.model == name and finding.severity >= Severity.ERROR]
    text = effective_config_text(evidence, name)
    if invocation.output.path is None:
        sys.stdout.write(text)
    else:
        try:
            write_file(invocation.output.path, text.encode("utf-8"))
        except OSError as error:
            say(f"cannot write {invocation.output.path}: {error.strerror or error}")
            return EXIT_USAGE
    for refusal in refusals:
        say(f"the server would refuse this model: {refusal}")
    return EXIT_FINDINGS if refusals else EXIT_OK


def exporter(invocation: Invocation) -> int:
    """Serve the findings until interrupted; ends only on a usage error (exit 2) or a signal
    (exit 0)."""
    from triton_doctor.exporter.serve import serve

    try:
        # The repository, read before serving: its errors end here (exit 2).
        base = _collected(invocation, live=False)
        return serve(invocation, base)
    except _Stop as stop:
        return stop.code
    except ValueError as error:  # ListenError
        say(error)
        return EXIT_USAGE


def alerts(invocation: Invocation) -> int:
    from triton_doctor.alerts import rules_text

    text = rules_text(invocation)
    return _written(text, invocation.output.path) or EXIT_OK


def _exit_code(result: Result, output: Output) -> int:
    if output.exit_zero:
        return EXIT_OK
    failing = any(f.severity >= output.fail_on for f in result.findings)
    return EXIT_FINDINGS if failing else EXIT_OK


def rules(fmt: str) -> int:
    chosen = all_rules()
    if fmt == "json":
        print(json.dumps([describe(r) for r in chosen], indent=2))
        return EXIT_OK
    for candidate in chosen:
        print(f"{candidate.id}  {candidate.name:<34} {candidate.severity!s:<8} {candidate.title}")
    return EXIT_OK


def explain(key: str) -> int:
    candidate = find_rule(key)
    if candidate is None:
        say(f"no rule {key!r}; `triton-doctor rules` lists them")
        return EXIT_USAGE
    print(f"{candidate.id} {candidate.name} ({candidate.severity}): {candidate.title}\n")
    print(candidate.doc)
    return EXIT_OK
