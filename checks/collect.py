"""The one entry from the front-ends to the collectors: the Evidence an Invocation asks for.

A target that cannot be read raises TargetError or a ValueError (SnapshotError, UsageError):
exit 2. A live source the user asked for that cannot be reached is recorded in the Evidence
(``unreachable``) and the rest is read: the run reports it with all it has, and exits 3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from triton_doctor import snapshot
from triton_doctor.checks.repository import TargetError, collect_repository
from triton_doctor.checks.unavailable import SourceUnavailable
from triton_doctor.checks.urls import hide_credentials, metrics_endpoint, prometheus_base
from triton_doctor.evidence import Evidence, RepositoryEvidence

if TYPE_CHECKING:
    from collections.abc import Callable

    from triton_doctor.checks.live import LiveRequest
    from triton_doctor.invocation import Invocation, Sources
    from triton_doctor.live_evidence import FleetEvidence, LogEvidence

__all__ = ["FleetPoller", "LivePoller", "TargetError", "collect", "hide_credentials",
           "prometheus_base", "read_fleet", "reread_repository", "server_address"]


def server_address(url: str) -> str:
    """``host:port`` (and the base path of a server behind a proxy) of a server URL, without
    scheme or credentials: the ``instance`` label of the exporter's series for that server.
    Raises ValueError for what cannot be a server URL."""
    from triton_doctor.checks.server import normalize_url

    return normalize_url(hide_credentials(url))[0]


def collect(invocation: Invocation, *, live: bool = True,
            meanwhile: Callable[[], None] | None = None) -> Evidence:
    """A snapshot, or the repository and the server (read here unless not ``live``: ``watch``
    polls it with a LivePoller), each with the target it is judged for. ``meanwhile``: work of
    the caller's, done by this process while others read the repository's models."""
    sources = invocation.sources
    if sources.snapshot:
        evidence = snapshot.read(sources.snapshot)
        evidence.options = invocation.options_for_snapshot(evidence.options)
        return evidence
    evidence = Evidence(repository=_repository(invocation, meanwhile))
    if (evidence.repository is not None and not evidence.repository.has_models
            and not (sources.url or sources.log or sources.fleet)):
        # Nothing to check: a report of no findings would pass for a clean repository.
        raise TargetError(f"{evidence.repository.path}: no model directory in it, so nothing "
                          "to check (a model repository holds one directory per model)")
    if sources.fleet and live:
        evidence.fleet = read_fleet(sources, evidence)
    elif sources.url and live:
        # Imported here: a check without --url must not pay for the HTTP and TLS modules.
        from triton_doctor.checks.live import collect_live

        collect_live(evidence, _request(sources))
    elif sources.log and not sources.url:
        evidence.log = _log(sources)
    evidence.options = invocation.options_for(evidence)
    return evidence


def read_fleet(sources: Sources, evidence: Evidence) -> FleetEvidence | None:
    """The fleet as Prometheus holds it now; None, recorded in ``evidence`` as unreachable,
    when the engine cannot be reached. Raises TargetError for a selector it refuses or that
    matches nothing or too much (exit 2: there is nothing to judge)."""
    from triton_doctor.checks.fleet import FleetRequest, SelectorRefused, collect_fleet

    fleet = sources.fleet
    assert fleet is not None
    request = FleetRequest(fleet.url, fleet.selector, sources.window_s, sources.timeout_s,
                           fleet.headers, fleet.ask_replicas, fleet.replica_url)
    try:
        return collect_fleet(request)
    except SelectorRefused as error:
        raise TargetError(str(error)) from None
    except SourceUnavailable as error:
        evidence.unavailable["fleet"] = evidence.unreachable["fleet"] = str(error)
        return None


def reread_repository(invocation: Invocation, evidence: Evidence) -> Evidence:
    """``check --tui``'s r: the repository read from disk again, for the same target (the log
    beside it, read once, stays)."""
    return Evidence(repository=_repository(invocation), options=evidence.options,
                    log=evidence.log)


class LivePoller:
    """``watch``'s reads of a running server (see checks.poll), each with the repository read
    before the polls began (``base``, from ``collect(invocation, live=False)``) and the target
    the server reveals; ``log_from_end``: a --log file's lines from now on (the exporter's)."""

    def __init__(self, invocation: Invocation, base: Evidence, log_from_end: bool = False) -> None:
        from triton_doctor.checks.poll import Poller

        self._poller = Poller(_request(invocation.sources), log_from_end=log_from_end)
        self._invocation = invocation
        #: Judged with every poll; the exporter replaces it when it reads the repository again.
        self.repository = base.repository
        self._options = base.options
        #: The server's URL without credentials, to show.
        self.url = self._poller.url

    def poll(self) -> Evidence:
        evidence = self._poller.poll()
        evidence.repository = self.repository
        evidence.options = self._invocation.options_for(evidence, earlier=self._options)
        self._options = evidence.options
        return evidence


class FleetPoller:
    """``watch --prometheus``'s and the exporter's reads of a fleet from its engine
    (``invocation.sources.fleet``), each with the repository read before the polls began
    (``base``); an engine out of reach is recorded in the Evidence (TD603). ``poll`` raises
    TargetError for a selector the engine refuses or that matches nothing."""

    def __init__(self, invocation: Invocation, base: Evidence) -> None:
        self._invocation = invocation
        #: Judged with every poll; the exporter replaces it when it reads the repository again.
        self.repository = base.repository
        self._options = base.options

    def poll(self) -> Evidence:
        evidence = Evidence(repository=self.repository)
        evidence.fleet = read_fleet(self._invocation.sources, evidence)
        evidence.options = self._invocation.options_for(evidence, earlier=self._options)
        self._options = evidence.options
        return evidence


def _repository(invocation: Invocation,
                meanwhile: Callable[[], None] | None = None) -> RepositoryEvidence | None:
    sources = invocation.sources
    if not sources.repository:
        return None
    return collect_repository(sources.repository, sources.model_config_name,
                              cache_dir=sources.cache_dir, jobs=sources.jobs,
                              meanwhile=meanwhile)


def _log(sources: Sources) -> LogEvidence:
    """The log judged on its own: it is the target, so one that cannot be read is a
    TargetError (exit 2)."""
    from triton_doctor.checks.logs import read_log

    assert sources.log is not None
    try:
        return read_log(sources.log, seconds=sources.timeout_s)
    except SourceUnavailable as error:
        raise TargetError(str(error)) from None


def _request(sources: Sources) -> LiveRequest:
    from triton_doctor.checks.live import LiveRequest

    assert sources.url is not None
    metrics_url = metrics_endpoint(sources.metrics_url) if sources.metrics_url else None
    return LiveRequest(sources.url, metrics_url, sources.window_s, sources.timeout_s,
                       sources.log, sources.container)
