"""The ``triton-doctor`` command line. Exit codes are an API (see README)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from triton_doctor import __version__
from triton_doctor.catalogue import all_rules, describe, find_rule, select_rules
from triton_doctor.engine import Result, run
from triton_doctor.evidence import CheckOptions, Evidence
from triton_doctor.findings import Severity
from triton_doctor.flag_types import count, seconds
from triton_doctor.printable import display_name, printable
from triton_doctor.settings import Settings, load_settings
from triton_doctor.triton import model_config, profiles

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


def _say(message: object) -> None:
    """A message on stderr; what it quotes from outside (paths, server replies, reasons)
    is escaped so that it cannot drive the terminal or pass for another line."""
    print(f"triton-doctor: {printable(str(message))}", file=sys.stderr)


def _split(values: Sequence[str] | None) -> list[str]:
    return [key.strip() for value in values or [] for key in value.split(",") if key.strip()]


class _Parser(argparse.ArgumentParser):
    """Usage errors quote the command line, which may hold names globbed from a repository
    (``check models/*``): escaped like every other message."""

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="triton-doctor",
        description="Find what Triton Inference Server would refuse or do badly, and the fix.",
    )
    parser.add_argument("--version", action="version", version=f"triton-doctor {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser(
        "check", help="check a model repository offline, a running server, or both"
    )
    check.add_argument("repository", nargs="?", help="path to the model repository")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    check.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default=None,
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    check.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when findings reach --fail-on"
    )
    check.add_argument(
        "--select",
        action="append",
        metavar="IDS",
        help="only these rules: ids, id prefixes (TD2) or names, comma-separated",
    )
    check.add_argument(
        "--ignore",
        action="append",
        metavar="IDS",
        help="skip these rules: ids, id prefixes or names, comma-separated",
    )
    check.add_argument(
        "--disable-auto-complete-config",
        action="store_true",
        default=None,
        help="judge as tritonserver --disable-auto-complete-config would",
    )
    check.add_argument(
        "--model-config-name",
        metavar="NAME",
        help="judge configs/NAME.pbtxt where a model has one, as "
        "tritonserver --model-config-name=NAME would",
    )
    check.add_argument(
        "--config",
        metavar="FILE",
        help="settings file (default: the nearest .triton-doctor.toml, or pyproject.toml with "
        "[tool.triton-doctor], at or above the repository)",
    )
    _add_target_options(check)
    _add_live_options(check, required=False)
    check.add_argument(
        "--snapshot", metavar="FILE", help="judge the Evidence saved by `triton-doctor snapshot`"
    )
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.add_argument(
        "--tui", action="store_true",
        help="browse the findings in a terminal UI (Enter: a model, /: filter, q: quit)",
    )

    watch = commands.add_parser(
        "watch", help="a live terminal UI: the rules judged against a running server, again "
        "and again",
        description="Poll a running tritonserver (and its metrics, GPUs, container, /dev/shm "
        "and log) every --interval seconds and show what is broken and what to do, in a "
        "terminal UI. Keys: ? help, / filter, Enter details, Esc back, p pause, r refresh, "
        "s save a snapshot, q quit. With --snapshot FILE it replays saved Evidence.",
    )
    watch.add_argument("repository", nargs="?",
                       help="the model repository the server serves (adds the static rules)")
    _add_live_options(watch, required=False)
    watch.add_argument(
        "--interval", type=seconds(0.1, 86400), default=1.0, metavar="SECONDS",
        help="time between polls, 0.1 to 86400 (default 1); a poll never starts before the "
        "last one ended",
    )
    watch.add_argument("--snapshot", metavar="FILE", help="replay Evidence saved by "
                       "`triton-doctor snapshot` or the s key, instead of polling")
    watch.add_argument("--save-dir", default=".", metavar="DIR",
                       help="where the s key writes snapshots (default: here)")
    watch.add_argument("--config", metavar="FILE", help="settings file, as for check")
    _add_target_options(watch)
    # What the server does on its own: it says whether it auto-completes and which configs.
    watch.set_defaults(disable_auto_complete_config=None, model_config_name=None)

    snapshot = commands.add_parser(
        "snapshot", help="save a running server's Evidence (and a repository's) to a file",
        description="Collect what check --url collects and write it as JSON, to judge later "
        "with `check --snapshot FILE` (post-mortems, sharing with a colleague). Credentials "
        "are never written.",
    )
    snapshot.add_argument("repository", nargs="?", help="path to the model repository")
    snapshot.add_argument("-o", "--output", required=True, metavar="FILE")
    _add_live_options(snapshot, required=True)
    # Evidence as it is: the target is chosen when the snapshot is judged.
    snapshot.set_defaults(triton_version=None, gpu=None, disable_auto_complete_config=False,
                          model_config_name=None, snapshot=None)

    config = commands.add_parser(
        "config",
        help="print the configuration the server would run for one model directory",
        description="Print, in config.pbtxt format, the configuration tritonserver would run "
        "for MODEL_DIR after its normalisation and its backend's auto-complete (from the "
        "model file or model.py). Problems the server would refuse go to stderr (exit 1).",
    )
    config.add_argument("model_dir", help="path to one model directory of a repository")
    config.add_argument(
        "--gpus", type=count(0, 1024), default=1, metavar="N",
        help="GPUs on the serving machine, for instance groups, 0 to 1024 (default 1; 0 for "
        "CPU-only)",
    )
    config.add_argument(
        "--disable-auto-complete-config", action="store_true",
        help="as tritonserver --disable-auto-complete-config: no backend auto-complete",
    )
    _add_target_options(config)

    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    explain = commands.add_parser("explain", help="print one rule's documentation")
    explain.add_argument("rule", help="rule id (TD201) or name (config-syntax)")
    return parser


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--triton-version", metavar="RELEASE",
        help="the Triton release served with: a container release (24.08) or server version "
        f"(2.49.0); default the newest known ({profiles.NEWEST.container})",
    )
    parser.add_argument(
        "--gpu", metavar="GPU",
        help="the GPU served on, for TensorRT plans: sm_89, 8.9 or a name such as L4",
    )


def _add_live_options(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument(
        "--url", required=required, metavar="URL",
        help="a running tritonserver's HTTP endpoint, e.g. localhost:8000",
    )
    parser.add_argument(
        "--metrics-url", metavar="URL",
        help="its Prometheus endpoint (default: the --url host, port 8002, /metrics)",
    )
    parser.add_argument(
        "--window", type=seconds(0, 3600), default=5.0, metavar="SECONDS",
        help="time between the two samples rates are computed from, 0 to 3600 (default 5)",
    )
    parser.add_argument(
        "--timeout", type=seconds(0, 3600, low_excluded=True), default=5.0, metavar="SECONDS",
        help="limit for every request to a live source, more than 0 and at most 3600 "
        "(default 5)",
    )
    parser.add_argument("--log", metavar="FILE", help="the server's log file")
    parser.add_argument(
        "--container", metavar="NAME", help="the server's Docker container (default: found)"
    )


def target_options(args: argparse.Namespace, triton_version: str | None, gpu: str | None,
                    backends: list[str], strict: bool) -> CheckOptions:
    """CheckOptions from flags and settings; raises ProfileError for an unknown target."""
    version = args.triton_version or triton_version or ""
    profiles.find_release(version)
    target_gpu = args.gpu or gpu
    return CheckOptions(
        disable_auto_complete_config=strict,
        triton_version=version,
        gpu_compute_capability=profiles.compute_capability(target_gpu) if target_gpu else "",
        extra_backends=backends,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "config":
            return _config(args)
        if args.command == "snapshot":
            return _snapshot(args)
        if args.command == "watch":
            return _watch(args)
        return _explain(args)
    except model_config.SchemaUnavailable as error:
        _say(error)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


class _Stop(Exception):
    """End the command with an exit code and a message on stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _check(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config, Path(args.repository or ".").absolute())
        select = _split(args.select) or settings.select
        rules = select_rules(select, [*settings.ignore, *_split(args.ignore)])
        evidence = _gather(args, settings)
    except ValueError as error:  # SettingsError too
        _say(error)
        return EXIT_USAGE
    except _Stop as stop:
        _say(stop)
        return stop.code
    def judge(evidence: Evidence) -> Result:
        return run(evidence, rules, settings.waivers, settings.source or "settings")

    if args.tui:
        from triton_doctor.tui.launch import browse

        try:
            result = browse(evidence, judge, args,
                            args.model_config_name or settings.model_config_name)
        except ValueError as error:
            _say(error)
            return EXIT_USAGE
    else:
        result = judge(evidence)
    for skipped in result.skipped:
        if skipped.internal:
            _say(f"{skipped.rule} on {skipped.model or 'the repository'}: {skipped.reason}")
    code = _exit_code(result, Severity.parse(args.fail_on or settings.fail_on), args.exit_zero)
    if args.tui:
        return code
    if args.format == "json":
        from triton_doctor.report import json_report

        sys.stdout.write(json_report.render(result, _target(args, evidence, settings), code))
    elif args.format == "sarif":
        from triton_doctor.report import sarif

        sys.stdout.write(sarif.render(result, list(rules), os.getcwd()))
    else:
        from triton_doctor.report import text

        colour = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and "NO_COLOR" not in os.environ
        )
        sys.stdout.write(text.render(
            result, colour=colour,
            repository=evidence.repository.path if evidence.repository else None,
            settings=settings.source))
    return code


def _target(args: argparse.Namespace, evidence: Evidence, settings: Settings) -> dict[str, str]:
    target = {}
    if settings.source:
        target["settings"] = settings.source
    if evidence.repository is not None:
        target["repository"] = evidence.repository.path
    if evidence.server is not None:
        target["server"] = evidence.server.url
    if args.snapshot:
        target["snapshot"] = args.snapshot
    return target


def _gather(args: argparse.Namespace, settings: Settings, live: bool = True) -> Evidence:
    """The Evidence to judge: a snapshot, or a repository and/or a live server (read here
    unless not ``live``: ``watch`` polls it itself)."""
    from triton_doctor import snapshot
    from triton_doctor.checks.repository import TargetError, collect_repository

    strict = args.disable_auto_complete_config or settings.disable_auto_complete_config
    options = target_options(args, settings.triton_version, settings.gpu, settings.backends,
                             strict)
    options.thresholds = settings.thresholds
    if args.snapshot:
        if args.repository or args.url:
            raise _Stop(EXIT_USAGE, "--snapshot judges a saved snapshot; give it alone")
        evidence = snapshot.read(args.snapshot)
        evidence.options = _merged(evidence.options, options, args, settings)
        try:
            profiles.find_release(evidence.options.triton_version)
        except profiles.ProfileError as error:
            raise _Stop(EXIT_USAGE, f"{args.snapshot}: the snapshot's "
                        f"evidence.options.triton_version: {error}; or judge it with "
                        "--triton-version RELEASE") from None
        return evidence
    if not args.repository and not args.url:
        raise _Stop(EXIT_USAGE, "give a model repository, --url URL of a running server, or "
                    "--snapshot FILE")
    repository = None
    if args.repository:
        config_name = args.model_config_name or settings.model_config_name
        try:
            repository = collect_repository(args.repository, config_name)
        except TargetError as error:
            raise _Stop(EXIT_USAGE, str(error)) from None
    evidence = Evidence(repository=repository, options=options)
    if args.url and live:
        from triton_doctor.checks.live import LiveRequest, Unreachable, collect_live

        request = LiveRequest(args.url, args.metrics_url, args.window, args.timeout, args.log,
                              args.container)
        try:
            collect_live(evidence, request)
        except Unreachable as error:
            raise _Stop(EXIT_UNREACHABLE, str(error)) from None
        _target_from_live(evidence, args, settings)
    return evidence


def _merged(saved: CheckOptions, given: CheckOptions, args: argparse.Namespace,
            settings: Settings) -> CheckOptions:
    """A snapshot keeps the target it was taken with, unless this command names another."""
    if args.triton_version or settings.triton_version:
        saved.triton_version = given.triton_version
    if args.gpu or settings.gpu:
        saved.gpu_compute_capability = given.gpu_compute_capability
    saved.thresholds = given.thresholds or saved.thresholds
    saved.extra_backends = given.extra_backends or saved.extra_backends
    return saved


def _target_from_live(evidence: Evidence, args: argparse.Namespace, settings: Settings) -> None:
    """The running server names the release, and NVML the GPU, unless the user did."""
    options = evidence.options
    if not (args.triton_version or settings.triton_version) and evidence.server:
        # A release newer than the table is judged against the newest known.
        with contextlib.suppress(profiles.ProfileError):
            options.triton_version = profiles.find_release(evidence.server.version).container
    if not (args.gpu or settings.gpu) and evidence.gpu and evidence.gpu.devices:
        options.gpu_compute_capability = evidence.gpu.devices[0].compute_capability


def _snapshot(args: argparse.Namespace) -> int:
    from triton_doctor import snapshot

    try:
        settings = load_settings(None, Path(args.repository or ".").absolute())
        evidence = _gather(args, settings)
        snapshot.write(evidence, args.output)
    except ValueError as error:
        _say(error)
        return EXIT_USAGE
    except OSError as error:
        _say(f"cannot write {args.output}: {error.strerror or error}")
        return EXIT_USAGE
    except _Stop as stop:
        _say(stop)
        return stop.code
    parts = [part for part in ("repository", "server", "metrics", "gpu", "container", "host",
                               "log") if getattr(evidence, part) is not None]
    _say(f"wrote {args.output} ({', '.join(parts)}; unavailable: "
         f"{', '.join(evidence.unavailable) or 'none'})")
    return EXIT_OK


def _watch(args: argparse.Namespace) -> int:
    from triton_doctor.tui.launch import watch

    try:
        settings = load_settings(args.config, Path(args.repository or ".").absolute())
        rules = select_rules(settings.select, settings.ignore)
        waiver_source = settings.source or "settings"
        if bool(args.url) == bool(args.snapshot):
            raise _Stop(EXIT_USAGE, "give --url URL of a running server, or --snapshot FILE "
                        "to replay (not both)")
        base = _gather(args, settings, live=False)
        if args.snapshot:
            return watch(args, lambda e: run(e, rules, settings.waivers, waiver_source), base)

        def judge(evidence: Evidence) -> Result:
            evidence.repository, evidence.options = base.repository, base.options
            _target_from_live(evidence, args, settings)
            return run(evidence, rules, settings.waivers, waiver_source)

        return watch(args, judge)
    except ValueError as error:  # SettingsError, ProfileError, SnapshotError too
        _say(error)
        return EXIT_USAGE
    except _Stop as stop:
        _say(stop)
        return stop.code


def _config(args: argparse.Namespace) -> int:
    from triton_doctor.checks.repository import TargetError, collect_repository
    from triton_doctor.triton.effective_config import effective_config_text

    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        _say(f"{model_dir}: not a model directory")
        return EXIT_USAGE
    try:
        options = target_options(args, None, None, [], args.disable_auto_complete_config)
        repository = collect_repository(model_dir.absolute().parent)
    except (TargetError, profiles.ProfileError) as error:
        _say(error)
        return EXIT_USAGE
    evidence = Evidence(repository=repository, options=options)
    name = display_name(model_dir.absolute().name)
    refusals = [finding.triton_message or finding.message
                for finding in run(evidence, all_rules(), [], "").findings
                if finding.model == name and finding.severity >= Severity.ERROR]
    text = effective_config_text(evidence, name, args.gpus)
    sys.stdout.write(text)
    for refusal in refusals:
        _say(f"the server would refuse this model: {refusal}")
    return EXIT_FINDINGS if refusals else EXIT_OK


def _exit_code(result: Result, fail_on: Severity, exit_zero: bool) -> int:
    if exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if any(f.severity >= fail_on for f in result.findings) else EXIT_OK


def _rules(args: argparse.Namespace) -> int:
    rules = all_rules()
    if args.format == "json":
        print(json.dumps([describe(r) for r in rules], indent=2))
        return EXIT_OK
    for candidate in rules:
        print(f"{candidate.id}  {candidate.name:<34} {candidate.severity!s:<8} {candidate.title}")
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    candidate = find_rule(args.rule)
    if candidate is None:
        _say(f"no rule {args.rule!r}; `triton-doctor rules` lists them")
        return EXIT_USAGE
    print(f"{candidate.id} {candidate.name} ({candidate.severity}): {candidate.title}\n")
    print(candidate.doc)
    return EXIT_OK
