"""Start the terminal UI for ``watch`` and ``check --tui`` for an Invocation."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from triton_doctor.evidence import Evidence
from triton_doctor.invocation import Invocation
from triton_doctor.result import Result
from triton_doctor.tui.sources import Source

if TYPE_CHECKING:
    from triton_doctor.tui.app import WatchApp


class NeedsTerminal(ValueError):
    """The UI was asked for where there is no terminal to draw it on."""


class UiFailed(ValueError):
    """The UI ended on an error of its own: exit 2, not the 0 or 1 of a judgement."""


def _ran(app: WatchApp) -> None:
    """Raises UiFailed when the app ended on an exception (Textual has printed it)."""
    if app.return_code:
        raise UiFailed("the terminal UI stopped on an internal error (its traceback is above; "
                       "please report it); `triton-doctor check ... --format json` reads the "
                       "same findings")


def _require_terminal(command: str) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise NeedsTerminal(
            f"{command} draws a terminal UI and needs a terminal; in scripts and CI use "
            "`triton-doctor check ... --format json` instead")


def watch(invocation: Invocation, base: Evidence) -> int:
    """Poll the server (or the fleet's Prometheus) over ``base`` (from ``collect(invocation,
    live=False)``), or replay it when it is a snapshot, until the user quits."""
    from triton_doctor.checks.collect import LivePoller
    from triton_doctor.tui.app import WatchApp

    _require_terminal("watch")
    sources = invocation.sources
    app: WatchApp
    if sources.fleet or base.fleet is not None or "fleet" in base.unavailable:
        from triton_doctor.tui.fleet import fleet_app

        app = fleet_app(invocation, base)
    else:
        if sources.snapshot:
            source = Source(collect=lambda: base, judge=invocation.judge,
                            title=f"snapshot {sources.snapshot}", live=False,
                            taken_at=os.path.getmtime(sources.snapshot))
        else:
            poller = LivePoller(invocation, base)
            source = Source(collect=poller.poll, judge=invocation.judge, title=poller.url,
                            live=True)
        app = WatchApp(source, interval_s=invocation.output.interval_s,
                       save_dir=invocation.output.save_dir)
    app.run()
    _ran(app)
    return 0


def browse(invocation: Invocation, evidence: Evidence) -> Result:
    """``check --tui``: the findings screen over ``evidence``, which is judged there first;
    r reads a repository again from disk, so a fix shows at once. Returns the last
    judgement, for the exit code."""
    from triton_doctor.checks.collect import reread_repository
    from triton_doctor.tui.app import WatchApp

    _require_terminal("check --tui")
    repository, log = invocation.sources.repository, invocation.sources.log
    title = (f"repository {repository}" if repository else
             f"log {'standard input' if log == '-' else log}" if log else "check")
    rereadable = evidence.repository is not None and evidence.server is None \
        and not invocation.sources.snapshot
    unread = [evidence]

    def collect() -> Evidence:
        if unread:
            return unread.pop()
        return reread_repository(invocation, evidence) if rereadable else evidence

    app = WatchApp(Source(collect=collect, judge=invocation.judge, title=title, live=False),
                   browse_only=True)
    app.run()
    _ran(app)
    latest = app.history.latest
    return latest.result if latest is not None else invocation.judge(evidence)
