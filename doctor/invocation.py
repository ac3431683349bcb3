"""One run of triton-doctor, resolved once: what it reads, the rules that judge it, the server
it is judged for, and how it reports.

Every choice between the places a value can come from is made here, in one order: a flag, else
the settings file, else a snapshot's saved value, else what the live server (its release) and
NVML (its GPU) reveal, else the default. Two exceptions, both of the snapshot: its auto-complete
setting always stays (it describes how that server ran), and thresholds, extra backends or
repository agents given by the settings file replace the saved ones as a whole. Front-ends (the
commands, the TUI) take an Invocation; none reads a flag or a setting itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from triton_doctor.catalogue import all_rules, select_rules
from triton_doctor.evidence import CheckOptions, Evidence
from triton_doctor.findings import Severity
from triton_doctor.records import field, record, replace
from triton_doctor.registry import Rule
from triton_doctor.result import Result
from triton_doctor.result_cache import judged
from triton_doctor.settings import ModelWaiver, Settings, SettingsError, load_settings
from triton_doctor.triton import profiles
from triton_doctor.triton.normalize import MAX_GPUS

T = TypeVar("T")

#: ``exporter``: where /metrics is served unless --listen says (every address).
DEFAULT_LISTEN = ("0.0.0.0", 9780)
#: ``alerts``: the rule groups written unless --groups says.
ALERT_GROUPS = ("metrics", "exporter")


class UsageError(ValueError):
    """Flags that do not make a run (exit 2)."""


@record(frozen=True)
class Sources:
    """What the run reads: a snapshot, or a repository and/or a running server."""

    repository: str | None = None
    #: ``check``: every repository given, the first being ``repository``; each is judged on
    #: its own (``Invocation.per_repository``) and the reports merged.
    repositories: tuple[str, ...] = ()
    #: Read configs/NAME.pbtxt where a model has one, as tritonserver --model-config-name.
    model_config_name: str | None = None
    #: ``config``: the model directory shown (``repository`` is the directory above it).
    model_dir: str | None = None
    url: str | None = None
    #: ``exporter``: every server given, the first being ``url``; each is judged on its own
    #: (``Invocation.per_server``) under its own instance label.
    urls: tuple[str, ...] = ()
    metrics_url: str | None = None
    window_s: float = 5.0
    timeout_s: float = 5.0
    log: str | None = None
    container: str | None = None
    snapshot: str | None = None
    #: ``--prometheus``: a fleet's replicas read from the engine's series instead of one server.
    fleet: Fleet | None = None
    #: ``check``: where unchanged models and judged results are kept (None: no cache).
    cache_dir: str | None = None
    #: ``check --jobs``: processes reading the repository (None: as many as there are CPUs,
    #: for a repository large enough to pay for them).
    jobs: int | None = None


@record(frozen=True)
class Fleet:
    """``--prometheus``: where the fleet's series are, which of them, and how to reach each
    replica's own API (``--ask-replicas``)."""

    url: str
    selector: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    ask_replicas: bool = False
    replica_url: str = "{scheme}://{host}:8000"


#: The window judged when --window is not given: two samples of one server, or a fleet's range.
SERVER_WINDOW_S, FLEET_WINDOW_S = 5.0, 900.0
#: The longest window between two samples of one server (the command waits it out).
MAX_SERVER_WINDOW_S = 3600.0
#: The shortest window over a fleet's series: a range holding two scrapes at 1 s apart.
MIN_FLEET_WINDOW_S = 2.0


@record(frozen=True)
class Target:
    """The server judged for as the user chose it (a flag, else the settings file); None where
    they chose nothing, so that a snapshot's or the live server's value applies."""

    triton_version: str | None = None
    gpu_compute_capability: str | None = None
    disable_auto_complete_config: bool = False
    extra_backends: tuple[str, ...] = ()
    extra_repo_agents: tuple[str, ...] = ()
    thresholds: dict[str, float] = field(default_factory=dict)
    #: GPUs the serving machine gives the server (0: CPU-only), for its instance groups.
    gpus: int | None = None
    #: ``check --configs-only`` (or the settings file): model files are not in the checkout.
    configs_only: bool = False


@record(frozen=True)
class Output:
    """How the run reports and which exit code it ends with."""

    format: str = "text"
    colour: bool = False
    fail_on: Severity = Severity.ERROR
    exit_zero: bool = False
    #: ``check --tui``: browse the findings instead of printing them.
    tui: bool = False
    #: ``snapshot -o FILE``; ``check -o FILE``, the report's file (None: stdout).
    path: str | None = None
    #: ``check --quiet``: the text report shows only the findings at or above fail_on.
    quiet: bool = False
    #: ``check --statistics``: findings counted per rule.
    statistics: bool = False
    #: ``check --baseline`` (or the settings file): the known findings' fingerprints to read.
    baseline: str | None = None
    #: ``check --write-baseline``: where to record the current findings' fingerprints.
    write_baseline: str | None = None
    #: ``watch``, ``exporter``: seconds between polls; where watch's s key writes snapshots.
    interval_s: float = 1.0
    save_dir: str = "."
    #: ``exporter``: the address /metrics is served on.
    listen: tuple[str, int] = DEFAULT_LISTEN
    #: ``exporter``, ``alerts``: where the rules' documentation is published (None: the
    #: exporter's own pages; the metrics alerts then link to nothing).
    docs_url: str | None = None


@record(frozen=True)
class Alerting:
    """``alerts``: which rule groups, the range rates are taken over, and how long a condition
    holds before it fires (None: each alert's own), as Prometheus durations."""

    groups: tuple[str, ...] = ALERT_GROUPS
    rate_window: str = "5m"
    hold: str | None = None
    #: The scrape job Prometheus reads the exporter under.
    exporter_job: str = "triton-doctor"


@record(frozen=True)
class Invocation:
    command: str
    sources: Sources = field(default_factory=Sources)
    target: Target = field(default_factory=Target)
    output: Output = field(default_factory=Output)
    #: The rules --select, --ignore and the settings file chose; None when they chose none:
    #: every rule, imported only once the run judges (a check answered by the cache never
    #: loads them).
    chosen_rules: tuple[Rule, ...] | None = ()
    waivers: tuple[ModelWaiver, ...] = ()
    #: The settings file that applied, named in reports; None when none did.
    settings_source: str | None = None
    alerting: Alerting = field(default_factory=Alerting)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Invocation:
        """The run ``check``, ``watch``, ``snapshot``, ``config``, ``exporter`` or ``alerts`` asks
        for. Raises ValueError (SettingsError, ProfileError, UsageError) for the first thing the
        user must fix, the settings file first."""
        if args.command == "config":
            return _config(args)
        settings = load_settings(args.config, Path((_repositories(args) or (".",))[0]).absolute())
        builder = {"check": _check, "watch": _watch, "exporter": _exporter,
                   "alerts": _alerts}.get(args.command, _snapshot)
        return builder(args, settings)

    def options_for(self, evidence: Evidence, earlier: CheckOptions | None = None) -> CheckOptions:
        """The target for Evidence read now: the user's choice, else what the server (its
        release) and NVML (its GPU) reveal in ``evidence``, else what ``earlier`` held (the
        previous poll's: a poll that missed the server keeps the release it named), else
        the default."""
        earlier = earlier or CheckOptions()
        target = self.target
        return CheckOptions(
            disable_auto_complete_config=target.disable_auto_complete_config,
            triton_version=_first(target.triton_version, _revealed_release(evidence),
                                  earlier.triton_version),
            gpu_compute_capability=_first(target.gpu_compute_capability,
                                          _revealed_gpu(evidence),
                                          earlier.gpu_compute_capability),
            gpus=_first_count(target.gpus, _revealed_gpus(evidence), earlier.gpus),
            extra_backends=list(target.extra_backends),
            extra_repo_agents=list(target.extra_repo_agents),
            thresholds=dict(target.thresholds),
            configs_only=target.configs_only,
        )

    def options_for_snapshot(self, saved: CheckOptions) -> CheckOptions:
        """The target for a snapshot: the user's choice, else the one it was taken with (its
        auto-complete setting always: it describes how that server ran)."""
        target = self.target
        options = CheckOptions(
            disable_auto_complete_config=saved.disable_auto_complete_config,
            triton_version=_first(target.triton_version, saved.triton_version),
            gpu_compute_capability=_first(target.gpu_compute_capability,
                                          saved.gpu_compute_capability),
            gpus=_first_count(target.gpus, saved.gpus),
            extra_backends=list(target.extra_backends) or saved.extra_backends,
            extra_repo_agents=list(target.extra_repo_agents) or saved.extra_repo_agents,
            thresholds=dict(target.thresholds) or saved.thresholds,
            configs_only=target.configs_only or saved.configs_only,
        )
        try:
            profiles.find_release(options.triton_version)
        except profiles.ProfileError as error:
            raise UsageError(f"{self.sources.snapshot}: the snapshot's "
                             f"evidence.options.triton_version: {error}; or judge it with "
                             "--triton-version RELEASE") from None
        if options.gpus is not None and not 0 <= options.gpus <= MAX_GPUS:
            raise UsageError(f"{self.sources.snapshot}: the snapshot's evidence.options.gpus is "
                             f"{options.gpus}, not 0 to {MAX_GPUS}; or judge it with --gpus N")
        return options

    def per_repository(self) -> list[Invocation]:
        """The run for each repository given, alone (one settings file, found from the first,
        for them all)."""
        if len(self.sources.repositories) < 2:
            return [self]
        return [replace(self, sources=replace(self.sources, repository=path,
                                              repositories=(path,)))
                for path in self.sources.repositories]

    def per_server(self) -> list[Invocation]:
        """``exporter``: the run for each server given, alone."""
        return [replace(self, sources=replace(self.sources, url=url, urls=(url,)))
                for url in self.sources.urls]

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(all_rules()) if self.chosen_rules is None else self.chosen_rules

    def judge(self, evidence: Evidence) -> Result:
        """The selected rules and the settings file's waivers over ``evidence``."""
        return judged(evidence, self.chosen_rules, self.waivers,
                      self.settings_source or "settings", self.sources.jobs)


def _check(args: argparse.Namespace, settings: Settings) -> Invocation:
    select = _split(args.select) or settings.select
    ignore = [*settings.ignore, *_split(args.ignore)]
    rules = None  # a static check: the rules are imported once it judges
    if select or ignore or args.url or args.log or args.prometheus or args.snapshot:
        _settings_rules(settings)  # a log's scan, too, reads the registered rules
        rules = tuple(select_rules(select, ignore))
    target = _target(args, settings)
    sources = _sources(args, settings)
    if len(sources.repositories) > 1 and (args.url or args.prometheus or args.tui):
        raise UsageError("several repositories make one static report; --url, --prometheus "
                         "and --tui take one")
    if args.output_file and args.tui:
        raise UsageError("--output-file writes a report; --tui shows one")
    if args.quiet and args.format != "text":
        raise UsageError(f"--quiet shortens the text report; --format {args.format} reports "
                         "everything")
    if args.statistics and args.format not in ("text", "json"):
        raise UsageError(f"--statistics adds counts to the text or JSON report; --format "
                         f"{args.format} has no place for them")
    _writes_apart(args.output_file, args.write_baseline, sources.repositories)
    output = Output(
        format=args.format,
        colour=_colour(args.color, terminal=not args.output_file and sys.stdout.isatty()),
        fail_on=Severity.parse(args.fail_on or settings.fail_on),
        exit_zero=args.exit_zero,
        tui=args.tui,
        path=args.output_file,
        quiet=args.quiet,
        statistics=args.statistics,
        baseline=args.baseline or settings.baseline,
        write_baseline=args.write_baseline,
    )
    return Invocation("check", sources, target, output, rules, tuple(settings.waivers),
                      settings.source)


def _writes_apart(report: str | None, baseline: str | None,
                  repositories: tuple[str, ...]) -> None:
    """The report and the baseline go to two files, neither one of a repository checked (a
    config.pbtxt would be replaced by a report)."""
    if report and baseline and os.path.realpath(report) == os.path.realpath(baseline):
        raise UsageError(f"--output-file and --write-baseline both name {report}: give each "
                         "its own file")
    roots = [os.path.realpath(r) + os.sep for r in repositories]
    for flag, path in (("--output-file", report), ("--write-baseline", baseline)):
        inside = path and os.path.isfile(path) and any(
            os.path.realpath(path).startswith(root) for root in roots)
        if inside:
            raise UsageError(f"{flag} {path} would replace a file of the repository checked; "
                             "write it outside the repository")


def _watch(args: argparse.Namespace, settings: Settings) -> Invocation:
    rules = _settings_rules(settings)
    if (bool(args.url) + bool(args.snapshot) + bool(args.prometheus)) != 1:
        raise UsageError("give --url URL of a running server, --prometheus URL of a fleet's "
                         "Prometheus, or --snapshot FILE to replay (one of them)")
    if args.log == "-":
        raise UsageError("watch draws on the terminal, so its standard input cannot be the "
                         "log: give a file, or a pipe (--log <(kubectl logs -f POD))")
    target = _target(args, settings)
    return Invocation("watch", _sources(args, settings), target,
                      Output(interval_s=args.interval, save_dir=args.save_dir), tuple(rules),
                      tuple(settings.waivers), settings.source)


def _exporter(args: argparse.Namespace, settings: Settings) -> Invocation:
    """Several servers share the repository and the settings; what belongs to one server (its
    metrics URL, log, container) can be named only when there is one."""
    rules = _settings_rules(settings)
    if bool(args.url) == bool(args.prometheus):
        raise UsageError("give --url URL of each server, or --prometheus URL of a fleet's "
                         "Prometheus (one or the other)")
    urls = _servers(args.url or [])
    if len(urls) > 1:
        own = [flag for flag, value in (("--metrics-url", args.metrics_url), ("--log", args.log),
                                        ("--container", args.container)) if value]
        if own:
            raise UsageError(f"{', '.join(own)} belong(s) to one server; with several --url "
                             "run one exporter per server to give them")
    if args.log == "-":
        raise UsageError("the exporter runs for days: give the log as a file or a pipe, not "
                         "standard input")
    sources = replace(_sources(args, settings, url=urls[0] if urls else None), urls=urls)
    output = Output(interval_s=args.interval, listen=args.listen, docs_url=args.docs_url)
    return Invocation("exporter", sources, _target(args, settings), output, tuple(rules),
                      tuple(settings.waivers), settings.source)


def _servers(urls: Sequence[str]) -> tuple[str, ...]:
    """The servers named, each once (``host:8000`` and ``http://host:8000/`` are one); raises
    UsageError for a URL that names no server."""
    from triton_doctor.checks.collect import server_address

    first: dict[str, str] = {}
    for url in urls:
        try:
            first.setdefault(server_address(url), url)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return tuple(first.values())


def _alerts(args: argparse.Namespace, settings: Settings) -> Invocation:
    """The rules judge nothing here: the settings file gives the thresholds they encode."""
    _settings_rules(settings)
    return Invocation("alerts", target=Target(thresholds=dict(settings.thresholds)),
                      output=Output(format=args.format, path=args.output,
                                    docs_url=args.docs_url),
                      settings_source=settings.source,
                      alerting=Alerting(args.groups, args.rate_window, args.hold,
                                        args.exporter_job))


def _snapshot(args: argparse.Namespace, settings: Settings) -> Invocation:
    """A snapshot judges nothing; its rules are those whose words its log scan records."""
    if not (args.url or args.prometheus):
        raise UsageError("give --url URL of a running server, or --prometheus URL of a fleet's "
                         "Prometheus")
    target = _target(args, settings)
    return Invocation("snapshot", _sources(args, settings), target, Output(path=args.output),
                      chosen_rules=tuple(all_rules()), settings_source=settings.source)


def _config(args: argparse.Namespace) -> Invocation:
    """``config`` reads no settings file: it prints what the server would run, flags alone."""
    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        raise UsageError(f"{model_dir}: not a model directory")
    _not_the_config_read(model_dir / "config.pbtxt", args.output, args.force)
    target = _target(args, Settings())
    sources = Sources(repository=str(model_dir.absolute().parent),
                      model_dir=model_dir.absolute().name)
    return Invocation("config", sources, target, Output(path=args.output),
                      chosen_rules=None)  # every rule: those of a repository judge it


def _not_the_config_read(config: Path, output: str | None, force: bool) -> None:
    """``config DIR > DIR/config.pbtxt`` has emptied the config before it is read (the shell
    truncates first): refused, --force or not. ``-o DIR/config.pbtxt`` is safe but replaces
    the user's file: refused without --force."""
    redirected = False
    with contextlib.suppress(OSError, ValueError):  # no config, or stdout not a descriptor
        redirected = output is None and os.path.samestat(os.fstat(sys.stdout.fileno()),
                                                         os.stat(config))
    if redirected:
        raise UsageError(f"stdout is {config}, which the shell emptied before it could be "
                         "read; restore it and write with -o FILE")
    if output is not None and not force and os.path.realpath(output) == os.path.realpath(
            config):
        raise UsageError(f"-o {output} would replace the config being read, {config}, with "
                         "what the server would run (its comments and layout lost); add "
                         "--force to do so")


def _settings_rules(settings: Settings) -> list[Rule]:
    """The rules the settings file selects; a key there that names no rule is the file's error
    (SettingsError naming it), not the command line's."""
    try:
        return select_rules(settings.select, settings.ignore)
    except ValueError as error:
        raise SettingsError(f"{settings.source}: {error}") from None


def _target(args: argparse.Namespace, settings: Settings) -> Target:
    """Raises ProfileError for a release or GPU that names nothing known; SettingsError, naming
    the file, when the settings file named it."""
    version = args.triton_version or settings.triton_version or None
    _known(profiles.find_release, version, bool(args.triton_version), settings)
    gpu = args.gpu or settings.gpu
    capability = (_known(profiles.compute_capability, gpu, bool(args.gpu), settings)
                  if gpu else None)
    return Target(
        triton_version=version,
        gpu_compute_capability=capability,
        disable_auto_complete_config=bool(args.disable_auto_complete_config
                                          or settings.disable_auto_complete_config),
        extra_backends=tuple(settings.backends),
        extra_repo_agents=tuple(settings.repo_agents),
        thresholds=dict(settings.thresholds),
        gpus=settings.gpus if args.gpus is None else args.gpus,
        configs_only=args.command == "check" and bool(args.configs_only
                                                      or settings.configs_only),
    )


def _known(resolve: Callable[[Any], T], value: str | None, by_flag: bool,
           settings: Settings) -> T:
    """``resolve(value)``; a ProfileError about a value the settings file gave names the file."""
    try:
        return resolve(value)
    except profiles.ProfileError as error:
        if by_flag or not value:
            raise
        raise SettingsError(f"{settings.source}: {error}") from None


def _sources(args: argparse.Namespace, settings: Settings, url: str | None = None) -> Sources:
    """Raises UsageError unless the run reads a snapshot alone, or a repository and/or a
    server (``url``, else ``--url``)."""
    repositories = _repositories(args)
    if args.snapshot and (repositories or args.url):
        raise UsageError("--snapshot judges a saved snapshot; give it alone")
    if args.snapshot and args.log:
        raise UsageError("--snapshot judges a saved snapshot; give it alone")
    fleet = _fleet(args, url or args.url)
    if not (args.snapshot or repositories or args.url or url or fleet
            or (args.log and args.command == "check")):
        raise UsageError("give a model repository, --url URL of a running server, "
                         "--prometheus URL of a fleet's Prometheus, "
                         + ("--log FILE, " if args.command == "check" else "")
                         + "or --snapshot FILE")
    if args.window is not None and args.window > MAX_SERVER_WINDOW_S and not fleet:
        raise UsageError(f"--window {args.window:g}: one server is sampled twice, at most "
                         f"{MAX_SERVER_WINDOW_S:g} s apart; longer ranges are read from "
                         "Prometheus (--prometheus URL)")
    default_window = FLEET_WINDOW_S if fleet else SERVER_WINDOW_S
    return Sources(
        repository=repositories[0] if repositories else None,
        repositories=repositories,
        model_config_name=args.model_config_name or settings.model_config_name,
        url=url or args.url,
        metrics_url=args.metrics_url,
        window_s=default_window if args.window is None else args.window,
        timeout_s=args.timeout,
        log=args.log,
        container=args.container,
        snapshot=args.snapshot,
        fleet=fleet,
        cache_dir=_cache_dir(args),
        jobs=getattr(args, "jobs", None),
    )


def _cache_dir(args: argparse.Namespace) -> str | None:
    """``check``'s cache: --cache-dir, else the user's cache directory (none where the user has
    no home); none with --no-cache."""
    if args.command != "check" or args.no_cache:
        return None
    from triton_doctor.cache import default_dir

    return args.cache_dir or default_dir()



def _fleet(args: argparse.Namespace, url: str | None) -> Fleet | None:
    """``--prometheus`` and its flags; UsageError for what names one server beside it, or a
    fleet flag without it."""
    prometheus = getattr(args, "prometheus", None)
    if not prometheus:
        named = [flag for flag, value in (
            ("--selector", getattr(args, "selector", "")),
            ("--ask-replicas", getattr(args, "ask_replicas", False)),
            ("--prometheus-header", getattr(args, "prometheus_header", [])))
            if value]
        if named:
            raise UsageError(f"{', '.join(named)} belong(s) to --prometheus URL")
        return None
    one_server = [flag for flag, value in (
        ("--url", url), ("--metrics-url", args.metrics_url), ("--log", args.log),
        ("--container", args.container), ("--snapshot", args.snapshot)) if value]
    if one_server:
        raise UsageError(f"--prometheus judges a fleet from its series; {', '.join(one_server)} "
                         "name(s) one server: give one or the other")
    from triton_doctor.checks.collect import prometheus_base

    try:
        prometheus_base(prometheus)
    except ValueError as error:
        raise UsageError(f"--prometheus {error}") from None
    if args.window is not None and args.window < MIN_FLEET_WINDOW_S:
        raise UsageError(f"--window {args.window:g}: a fleet's window holds at least two "
                         f"scrapes; give {MIN_FLEET_WINDOW_S:g} s or more (default 15m)")
    return Fleet(prometheus, args.selector, tuple(args.prometheus_header), args.ask_replicas,
                 args.replica_url)


def _repositories(args: argparse.Namespace) -> tuple[str, ...]:
    """The repositories named: ``check`` takes several, ``watch`` and ``snapshot`` one."""
    several = getattr(args, "repositories", None)
    one = getattr(args, "repository", None)
    if several:  # a repository named twice (check a ./a) is checked once
        first: dict[str, str] = {}
        for path in several:
            first.setdefault(os.path.realpath(path), path)
        return tuple(first.values())
    return (one,) if one else ()


def _colour(flag: str, terminal: bool) -> bool:
    """``--color`` first; then NO_COLOR (no-color.org) over FORCE_COLOR (force-color.org), each
    set when not empty, so that a user's "no colour" is never overruled by a CI's "colour";
    FORCE_COLOR=0, which some tools read as "off", forces nothing; else only when the report
    goes to a ``terminal``."""
    if flag != "auto":
        return flag == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return terminal


def _split(values: Sequence[str] | None) -> list[str]:
    """``--select A,B --select C``: the keys, in order."""
    return [key.strip() for value in values or [] for key in value.split(",") if key.strip()]


def _first(*values: str | None) -> str:
    """The first value that was given (None: not given); "" when none was."""
    return next((value for value in values if value is not None), "")


def _first_count(*values: int | None) -> int | None:
    """The first count that was given; None when none was."""
    return next((value for value in values if value is not None), None)


def _revealed_release(evidence: Evidence) -> str | None:
    """The release the server names; None without a server, or for a release newer than the
    table (judged against the newest known)."""
    if evidence.server is None:
        return None
    try:
        return profiles.find_release(evidence.server.version).container
    except profiles.ProfileError:
        return None


def _revealed_gpu(evidence: Evidence) -> str | None:
    """The compute capability of the first GPU NVML lists; None without one."""
    if evidence.gpu is None or not evidence.gpu.devices:
        return None
    return evidence.gpu.devices[0].compute_capability


def _revealed_gpus(evidence: Evidence) -> int | None:
    """How many GPUs the server uses: those its own metrics report (``nv_gpu_*`` series, one
    ``gpu_uuid`` each), else those NVML lists when the server runs on this machine (its host part
    was read, or its container found; a remote server's GPUs are not this machine's). Never 0:
    no GPU series (GPU metrics off) and an empty NVML list (a sidecar given no GPUs) do not show
    a CPU-only server. None when nothing tells."""
    scrapes = evidence.metrics.scrapes if evidence.metrics is not None else []
    whole = scrapes[-1] if scrapes and not scrapes[-1].unread_lines else None  # else some missing
    reported = {sample.labels["gpu_uuid"] for sample in (whole.samples if whole else [])
                if sample.name.startswith("nv_gpu_") and "gpu_uuid" in sample.labels}
    if reported:
        return len(reported)
    if evidence.gpu is None or (evidence.host is None and evidence.container is None):
        return None
    return len(evidence.gpu.devices) or None
