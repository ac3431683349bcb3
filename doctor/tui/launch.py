"""Start the terminal UI for ``watch`` and ``check --tui`` from parsed command-line options."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from triton_doctor.engine import Result
from triton_doctor.evidence import Evidence
from triton_doctor.tui.sources import Source

if TYPE_CHECKING:
    from triton_doctor.tui.app import WatchApp

Judge = Callable[[Evidence], Result]


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


def watch(args: argparse.Namespace, judge: Judge, saved: Evidence | None = None) -> int:
    """Poll ``args.url`` (or replay ``saved``, a snapshot) until the user quits."""
    from triton_doctor.checks.live import LiveRequest
    from triton_doctor.checks.poll import Poller
    from triton_doctor.tui.app import WatchApp

    _require_terminal("watch")
    if saved is not None:
        source = Source(collect=lambda: saved, judge=judge, title=f"snapshot {args.snapshot}",
                        live=False, taken_at=os.path.getmtime(args.snapshot))
    else:
        poller = Poller(LiveRequest(args.url, args.metrics_url, args.window, args.timeout,
                                    args.log, args.container))
        source = Source(collect=poller.poll, judge=judge, title=poller.url, live=True)
    app = WatchApp(source, interval_s=args.interval, save_dir=args.save_dir)
    app.run()
    _ran(app)
    return 0


def browse(evidence: Evidence, judge: Judge, args: argparse.Namespace,
           config_name: str | None) -> Result:
    """``check --tui``: the findings screen over ``evidence``, which is judged there first;
    r reads a repository again from disk, so a fix shows at once. Returns the last
    judgement, for the exit code."""
    from triton_doctor.tui.app import WatchApp

    _require_terminal("check --tui")
    title = f"repository {args.repository}" if args.repository else "check"
    rereadable = evidence.repository is not None and evidence.server is None \
        and not args.snapshot
    unread = [evidence]

    def collect() -> Evidence:
        if unread:
            return unread.pop()
        return _reread(evidence, args.repository, config_name) if rereadable else evidence

    app = WatchApp(Source(collect=collect, judge=judge, title=title, live=False),
                   browse_only=True)
    app.run()
    _ran(app)
    latest = app.history.latest
    return latest.result if latest is not None else judge(evidence)


def _reread(evidence: Evidence, repository: str, config_name: str | None) -> Evidence:
    from triton_doctor.checks.repository import collect_repository

    return Evidence(repository=collect_repository(repository, config_name),
                    options=evidence.options)
