"""The ``triton-doctor`` command line: its arguments, and which command runs them (the bodies
are in commands.py; exit codes are an API, see README)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Any, NoReturn

from triton_doctor import __version__
from triton_doctor.flag_types import (
    alert_groups,
    count,
    duration,
    http_header,
    listen_address,
    positive_duration,
    seconds,
    window,
)
from triton_doctor.printable import printable


class _Formatter(argparse.HelpFormatter):
    """argparse's own, given the width it would take (the terminal's less 2, as
    ``shutil.get_terminal_size`` finds it) without importing shutil: its compression modules
    cost a run 7 ms, and argparse makes a formatter for every argument added."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


def _columns() -> int:
    """The terminal's width: COLUMNS, else stdout's terminal's, else 80."""
    with contextlib.suppress(KeyError, ValueError):
        if (columns := int(os.environ["COLUMNS"])) > 0:
            return columns
    stdout = sys.__stdout__
    try:
        columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
    except (AttributeError, ValueError, OSError):  # not a file, or not a terminal
        columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """Usage errors quote the command line, which may hold names globbed from a repository
    (``check models/*``): escaped like every other message. A mistyped flag, subcommand or
    choice is answered with the closest known one. Subcommands' parsers are of this class
    too, and so take its formatter."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            known = self._option_strings(getattr(parsed, "command", None))
            hints = [_did_you_mean(extra.split("=", 1)[0], known)
                     for extra in extras if extra.startswith("-")]
            self.error(f"unrecognized arguments: {' '.join(extras)}{''.join(hints)}")
        return parsed

    def _check_value(self, action: argparse.Action, value: object) -> None:
        try:
            super()._check_value(action, value)  # type: ignore[misc]
        except argparse.ArgumentError as error:
            choices = [str(choice) for choice in action.choices or ()]
            raise argparse.ArgumentError(
                action, error.message + _did_you_mean(str(value), choices)) from None

    def _option_strings(self, command: str | None) -> list[str]:
        """The flags this parser and the subcommand it ran know."""
        known = list(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                known += action.choices[command]._option_string_actions
        return known


def _did_you_mean(word: str, known: Sequence[str]) -> str:
    """``; did you mean X?`` for the known word closest to ``word``, or nothing."""
    import difflib  # only on a usage error

    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {close[0]}?" if close else ""


def build_parser(chosen: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Every subcommand is named (as usage and --help show them);
    only those ``chosen`` (None: all) get their arguments: a run parses one, and building the
    others would cost it a sixth of its start."""
    parser = _Parser(
        prog="triton-doctor",
        description="Find what Triton Inference Server would refuse or do badly, and the fix.",
    )
    parser.add_argument("--version", action="version", version=f"triton-doctor {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True)
    for name, (add_arguments, about) in SUBCOMMANDS.items():
        subparser = subcommands.add_parser(name, **about)
        if chosen is None or name in chosen:
            add_arguments(subparser)
    return parser


def _named(argv: Sequence[str]) -> tuple[str, ...]:
    """The subcommand ``argv`` runs: its first word that is no option (none, or one that names
    no subcommand, reaches no subparser: argparse stops at it with usage or an error)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return (first,) if first in SUBCOMMANDS else ()


def _check(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "repositories", nargs="*", metavar="REPOSITORY",
        help="path to a model repository; several make one report, summed per repository",
    )
    check.add_argument(
        "--format", choices=("text", "json", "sarif", "github", "gitlab", "junit"),
        default="text",
        help="github: workflow annotations; gitlab: Code Quality JSON; junit: one test per model",
    )
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
        "--configs-only", action="store_true",
        help="judge layout and configurations of a checkout without its model files: a "
        "missing model file is not reported",
    )
    check.add_argument(
        "--config",
        metavar="FILE",
        help="settings file (default: the nearest .triton-doctor.toml, or pyproject.toml with "
        "[tool.triton-doctor], at or above the repository)",
    )
    _add_target_options(check)
    _add_gpus_option(check)
    _add_live_options(check, required=False)
    check.add_argument(
        "--snapshot", metavar="FILE", help="judge the Evidence saved by `triton-doctor snapshot`"
    )
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.add_argument(
        "-o", "--output-file", metavar="FILE",
        help="write the report to FILE (replaced whole, never left half-written), not stdout",
    )
    check.add_argument(
        "-q", "--quiet", action="store_true",
        help="text: only the findings at or above --fail-on and the summary line; nothing "
        "when none reaches it",
    )
    check.add_argument(
        "--statistics", action="store_true",
        help="count the findings per rule (text: a table after the report; json: statistics)",
    )
    check.add_argument(
        "--baseline", metavar="FILE",
        help="findings recorded in FILE are known: listed as baselined, not counted for the "
        "exit code; recorded ones no longer found are reported as fixed (default: the "
        "settings file's baseline)",
    )
    check.add_argument(
        "--write-baseline", metavar="FILE",
        help="record the current findings in FILE (sorted JSON, replaced whole) as known",
    )
    check.add_argument(
        "--tui", action="store_true",
        help="browse the findings in a terminal UI (Enter: a model, /: filter, q: quit)",
    )
    check.add_argument(
        "--no-cache", action="store_true",
        help="read every model and judge anew, neither reading nor writing the cache",
    )
    check.add_argument(
        "--cache-dir", metavar="DIR",
        help="where the cache of unchanged models and judged results is kept (default: "
        "the user's cache directory, e.g. ~/.cache/triton-doctor)",
    )
    check.add_argument(
        "--jobs", type=count(1, 256), metavar="N",
        help="processes reading and judging a large repository (default: the CPUs available)",
    )


def _watch(watch: argparse.ArgumentParser) -> None:
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
    _add_gpus_option(watch)
    # What the server does on its own: it says whether it auto-completes and which configs.
    watch.set_defaults(disable_auto_complete_config=None, model_config_name=None)


def _snapshot(snapshot: argparse.ArgumentParser) -> None:
    snapshot.add_argument("repository", nargs="?", help="path to the model repository")
    snapshot.add_argument("-o", "--output", required=True, metavar="FILE")
    _add_live_options(snapshot, required=False)
    # No flags for the target: the one saved with the Evidence comes from the settings file
    # found from the repository, or the server; `check --snapshot --triton-version` overrides it.
    snapshot.set_defaults(triton_version=None, gpu=None, gpus=None,
                          disable_auto_complete_config=False, model_config_name=None,
                          snapshot=None, config=None)


def _config(config: argparse.ArgumentParser) -> None:
    from triton_doctor.triton.normalize import MAX_GPUS

    config.add_argument("model_dir", help="path to one model directory of a repository")
    config.add_argument(
        "--gpus", type=count(0, MAX_GPUS), metavar="N",
        help=f"how many GPUs the serving machine has, for instance groups, 0 to {MAX_GPUS} "
        "(0: CPU-only); default: groups shown as on one GPU, and what a GPU count decides "
        "not judged",
    )
    config.add_argument(
        "--disable-auto-complete-config", action="store_true",
        help="as tritonserver --disable-auto-complete-config: no backend auto-complete",
    )
    config.add_argument(
        "-o", "--output", metavar="FILE",
        help="write FILE (replaced whole, never half-written) instead of stdout; not the "
        "model's own config.pbtxt unless --force",
    )
    config.add_argument(
        "--force", action="store_true",
        help="let -o replace the config.pbtxt being read (its comments and layout are lost)",
    )
    _add_target_options(config)


def _exporter(exporter: argparse.ArgumentParser) -> None:
    from triton_doctor.invocation import DEFAULT_LISTEN

    exporter.add_argument("repository", nargs="?",
                          help="the model repository the servers serve (adds the static rules)")
    exporter.add_argument(
        "--url", action="append", metavar="URL",
        help="a running tritonserver's HTTP endpoint; repeat for several servers, each with "
        "its own instance label",
    )
    _add_live_options(exporter, required=False, url=False)
    exporter.add_argument(
        "--listen", type=listen_address, default=f":{DEFAULT_LISTEN[1]}", metavar="HOST:PORT",
        help=f"where to serve /metrics (default :{DEFAULT_LISTEN[1]}, every address; port 0: "
        "a free one, said on stderr)",
    )
    exporter.add_argument(
        "--interval", type=seconds(0.1, 86400), default=30.0, metavar="SECONDS",
        help="time between checks, 0.1 to 86400 (default 30); each check reads every source "
        "once, each read bounded by --timeout",
    )
    exporter.add_argument(
        "--docs-url", metavar="URL",
        help="where the rules' documentation is, for the alerts' runbook links: the rule's "
        "anchor is added (default: this exporter's own /rules/ID pages)",
    )
    exporter.add_argument("--config", metavar="FILE", help="settings file, as for check")
    _add_target_options(exporter)
    _add_gpus_option(exporter)
    exporter.set_defaults(disable_auto_complete_config=None, model_config_name=None,
                          snapshot=None)


def _alerts(alerts: argparse.ArgumentParser) -> None:
    from triton_doctor.invocation import ALERT_GROUPS

    alerts.add_argument("--format", choices=("prometheus",), default="prometheus")
    alerts.add_argument(
        "--groups", type=alert_groups, default=ALERT_GROUPS, metavar="GROUPS",
        help="metrics (from Triton's metrics alone), exporter (from `triton-doctor exporter`), "
        "or both, comma-separated (default: both; the exporter's finding alert then leaves "
        "out the rules the metrics group encodes)",
    )
    alerts.add_argument(
        "--rate-window", type=positive_duration, default="5m", metavar="DURATION",
        help="the range rates are taken over, a Prometheus duration (default 5m: at least "
        "four scrape intervals)",
    )
    alerts.add_argument(
        "--for", dest="hold", type=duration, metavar="DURATION",
        help="how long a condition must hold before its alert fires, for every alert "
        "(default: each alert's own, 2m to 15m)",
    )
    alerts.add_argument(
        "--exporter-job", default="triton-doctor", metavar="JOB",
        help="the scrape job of `triton-doctor exporter` in Prometheus, for the exporter-down "
        "alert (default triton-doctor)",
    )
    alerts.add_argument(
        "--docs-url", metavar="URL",
        help="where the rules' documentation is (docs/rules.md as published): the metrics "
        "alerts' runbook links point there",
    )
    alerts.add_argument("--config", metavar="FILE", help="settings file, as for check "
                        "(default: the nearest one at or above this directory)")
    alerts.add_argument("-o", "--output", metavar="FILE",
                        help="write FILE (replaced whole) instead of stdout")


def _rules(rules: argparse.ArgumentParser) -> None:
    rules.add_argument("--format", choices=("text", "json"), default="text")


def _explain(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("rule", help="rule id (TD201) or name (config-syntax)")


#: Each subcommand: what adds its arguments, and its help line (and description) for argparse.
SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], dict[str, Any]]] = {
    "check": (_check, {
        "help": "check a model repository offline, a running server, or both"}),
    "watch": (_watch, {
        "help": "a live terminal UI: the rules judged against a running server, again and again",
        "description": "Poll a running tritonserver (and its metrics, GPUs, container, "
        "/dev/shm and log) every --interval seconds and show what is broken and what to do, "
        "in a terminal UI. Keys: ? help, / filter, Enter details, Esc back, p pause, "
        "r refresh, s save a snapshot, q quit. With --snapshot FILE it replays saved "
        "Evidence."}),
    "snapshot": (_snapshot, {
        "help": "save a running server's Evidence (and a repository's) to a file",
        "description": "Collect what check --url collects and write it as JSON, to judge later "
        "with `check --snapshot FILE` (post-mortems, sharing with a colleague). Credentials "
        "are never written."}),
    "config": (_config, {
        "help": "print the configuration the server would run for one model directory",
        "description": "Print, in config.pbtxt format, the configuration tritonserver would "
        "run for MODEL_DIR after its normalisation and its backend's auto-complete (from the "
        "model file or model.py). Problems the server would refuse go to stderr (exit 1)."}),
    "exporter": (_exporter, {
        "help": "judge running servers on an interval and serve what fires as Prometheus "
        "series",
        "description": "Run the rules against each --url server (and REPOSITORY) every "
        "--interval seconds and serve the findings on /metrics as triton_doctor_finding{rule,"
        "name,severity,model,version,instance} (1 while firing; a cleared finding's series is "
        "gone), with the checks' own health. /findings gives the latest findings as JSON and "
        "/rules/ID a rule's documentation. Scrape it with honor_labels: true (its instance "
        "label names the Triton server); `triton-doctor alerts` writes the alerting rules. "
        "With --prometheus URL instead of --url, a fleet is checked through its Prometheus, "
        "each replica's findings under its own instance label."}),
    "alerts": (_alerts, {
        "help": "print Prometheus alerting rules for the live rules and the exporter",
        "description": "Write Prometheus alerting rules (YAML, for rule_files): the live rules "
        "as PromQL over Triton's own metrics (queue backlog, requests pending, failure rate, "
        "p99, compute time, GPU memory and its trend), and alerts on the exporter's series "
        "(every finding, exporter down, check failing, source down). Thresholds come from "
        "the settings file, so the alerts agree with `check`."}),
    "rules": (_rules, {"help": "list the rules"}),
    "explain": (_explain, {"help": "print one rule's documentation"}),
}


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    from triton_doctor.triton import profiles

    parser.add_argument(
        "--triton-version", metavar="RELEASE",
        help="the Triton release served with: a container release (24.08) or server version "
        f"(2.49.0); default the newest known ({profiles.NEWEST.container})",
    )
    parser.add_argument(
        "--gpu", metavar="GPU",
        help="the GPU model served on, for TensorRT plans: sm_89, 8.9 or a name such as L4 "
        "(how many: --gpus)",
    )


def _add_gpus_option(parser: argparse.ArgumentParser) -> None:
    from triton_doctor.triton.normalize import MAX_GPUS

    parser.add_argument(
        "--gpus", type=count(0, MAX_GPUS), metavar="N",
        help=f"how many GPUs the server can use, 0 to {MAX_GPUS} (0: a CPU-only server), to "
        "judge instance groups (KIND_GPU, gpus: [ ... ]) as that machine would; default: "
        "the GPUs the --url server's metrics report, or NVML counts where it runs here, else "
        "unknown and not judged. Not --gpu, "
        "which names the GPU model for TensorRT plans",
    )


def _add_live_options(parser: argparse.ArgumentParser, required: bool, url: bool = True) -> None:
    if url:
        parser.add_argument(
            "--url", required=required, metavar="URL",
            help="a running tritonserver's HTTP endpoint, e.g. localhost:8000",
        )
    parser.add_argument(
        "--metrics-url", metavar="URL",
        help="its Prometheus endpoint (default: the --url host, port 8002, /metrics)",
    )
    parser.add_argument(
        "--window", type=window, default=None, metavar="SECONDS",
        help="time between the two samples rates are computed from, 0 to 3600 seconds "
        "(default 5); with --prometheus the range judged, ending now, as seconds or a "
        "duration such as 15m, up to 7d (default 15m)",
    )
    parser.add_argument(
        "--timeout", type=seconds(0, 3600, low_excluded=True), default=5.0, metavar="SECONDS",
        help="limit for every request to a live source, more than 0 and at most 3600 "
        "(default 5)",
    )
    parser.add_argument(
        "--log", metavar="FILE",
        help="the server's log: a file, a pipe, or - for standard input (kubectl logs POD | "
        "triton-doctor check --log -); Triton's own lines, docker logs --timestamps, and "
        "Kubernetes (CRI or JSON) log lines are read; `check --log` judges a log alone too",
    )
    parser.add_argument(
        "--container", metavar="NAME", help="the server's Docker container (default: found)"
    )
    fleet = parser.add_argument_group(
        "fleets", "replicas judged through Prometheus (or Thanos Query, Mimir, VictoriaMetrics) "
        "instead of one --url server")
    fleet.add_argument(
        "--prometheus", metavar="URL",
        help="the engine's base URL (http://prometheus:9090; Mimir: with its /prometheus "
        "prefix): each replica (instance label) judged from its series, and compared",
    )
    fleet.add_argument(
        "--selector", default="", metavar="MATCHERS",
        help='label matchers every query carries, e.g. \'{job="triton"}\' (default: none)',
    )
    fleet.add_argument(
        "--prometheus-header", action="append", type=http_header, default=[],
        metavar="NAME:VALUE",
        help="a header sent with every query (Mimir's X-Scope-OrgID: TENANT, an "
        "Authorization); repeat for several",
    )
    fleet.add_argument(
        "--ask-replicas", action="store_true",
        help="also read each replica's HTTP API (readiness, load errors, configs), 8 at a "
        "time, to explain its series and compare configs",
    )
    fleet.add_argument(
        "--replica-url", default="{scheme}://{host}:8000", metavar="TEMPLATE",
        help="each replica's HTTP API for --ask-replicas, from its scrape address ({scheme}, "
        "{host}, {port}) and its target labels ({pod}); default {scheme}://{host}:8000",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (None: this process's own, which ends when main
    returns)."""
    args = build_parser(_named(sys.argv[1:] if argv is None else argv)).parse_args(argv)
    try:
        code = _run(args, ended=_ended if argv is None else None)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at exit
    except OSError as error:
        if error.errno not in _OUTPUT_LOST:
            raise
        code = _output_lost(error)
    if argv is None:
        _ending()
    return code


def _ended(code: int) -> None:
    """The process's own check, its report written: the process ends here, with ``code``,
    unless something is still to run after it (an atexit handler, such as a coverage tool's
    or NVML's; another thread; a profiler or debugger, which reports when the program
    returns). The interpreter's teardown would free one by one what the check made, its
    Evidence, views and modules: 10-15 ms of a 1,000-model check after its report is out,
    which the operating system does at once. Returns when the process does not end here
    (main then ends it as any other run); a lost output raises, as main's flush would."""
    sys.stdout.flush()
    # A handler is registered through the atexit module: where nothing imported it, there is
    # none. CPython counts them; elsewhere the process is never ended here.
    atexit = sys.modules.get("atexit")
    handlers = 0 if atexit is None else getattr(atexit, "_ncallbacks", lambda: 1)()
    threading = sys.modules.get("threading")
    if (handlers or sys.getprofile() is not None or sys.gettrace() is not None
            or (threading is not None and threading.active_count() > 1)):
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


def _ending() -> None:
    """Before the process ends: the interpreter's collections at exit walk every object left
    (a tenth of a one-model check); frozen, they are not walked. The report is written and
    flushed by now; atexit handlers, weakref finalizers and the flush of sys.stderr still run.
    What is lost: a ``__del__`` of an object left in a reference cycle does not run at exit
    (none of the tool's objects has one; files are closed where they are written)."""
    import gc

    gc.freeze()


#: What writing to stdout meets when its file fills up or its reader has gone.
_OUTPUT_LOST = {errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _output_lost(error: OSError) -> int:
    """A report that could not be written whole is a failed run (exit 2), said on stderr in
    one line; stdout is pointed at /dev/null so that Python's flush at exit, which would meet
    the same error, adds no traceback of its own."""
    from triton_doctor import commands

    commands.say(f"cannot write the output: {error.strerror or error}")
    with contextlib.suppress(OSError, ValueError):  # not a file descriptor (tests capture it)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return commands.EXIT_USAGE


def _run(args: argparse.Namespace, ended: Callable[[int], None] | None = None) -> int:
    """The subcommand's exit code; a check calls ``ended`` with it once its report is written
    (see ``_ended``)."""
    from triton_doctor import commands
    from triton_doctor.invocation import Invocation
    from triton_doctor.triton import SchemaUnavailable

    try:
        if args.command == "rules":
            return commands.rules(args.format)
        if args.command == "explain":
            return commands.explain(args.rule)
        try:
            invocation = Invocation.from_args(args)
        except ValueError as error:  # SettingsError, ProfileError, UsageError
            commands.say(error)
            return commands.EXIT_USAGE
        if invocation.command == "check":
            return commands.check(invocation, ended)
        run = {"watch": commands.watch, "snapshot": commands.snapshot,
               "config": commands.config, "exporter": commands.exporter,
               "alerts": commands.alerts}[invocation.command]
        return run(invocation)
    except SchemaUnavailable as error:
        commands.say(error)
        return commands.EXIT_USAGE
