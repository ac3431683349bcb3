"""What the terminal UI's tests share: the recorded incident, sources that count their reads,
and an app that keeps the notifications it shows."""

from __future__ import annotations

import asyncio
import copy
import os
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static
from triton_doctor import snapshot
from triton_doctor.catalogue import all_rules
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence
from triton_doctor.result import Result
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.sources import Source
from triton_doctor.tui.state import Frame
from triton_doctor.tui.tables import selected_key

from tests.tui.render import INCIDENT
from tests.tui.render import SIZE as SIZE
from tests.tui.render import settle as settle

_INCIDENT: Evidence | None = None


def incident() -> Evidence:
    """A fresh copy of the recorded incident's Evidence (tests may change it)."""
    global _INCIDENT
    if _INCIDENT is None:
        _INCIDENT = snapshot.read(os.fspath(INCIDENT))
    return copy.deepcopy(_INCIDENT)


def judge(evidence: Evidence) -> Result:
    return run(evidence, all_rules())


def detector_recovered() -> Evidence:
    """The incident with the detector loaded: TD601 and TD602 stop firing."""
    evidence = incident()
    assert evidence.server is not None
    for model in evidence.server.models:
        if model.name == "detector":
            model.state, model.reason = "READY", ""
    evidence.server.ready = True
    return evidence


def server_unreachable() -> Evidence:
    """What a poll gives while the server does not answer."""
    evidence = incident()
    evidence.server, evidence.metrics, evidence.log = None, None, None
    evidence.unavailable["server"] = "cannot connect to http://127.0.0.1:36419: refused"
    return evidence


class Reads:
    """A collect that hands out ``evidence`` in turn (the last one again once used up), counts
    its calls, and can be held: while ``hold`` is clear, each read waits for it."""

    def __init__(self, *evidence: Evidence | Callable[[], Evidence]) -> None:
        self.evidence: Sequence[Evidence | Callable[[], Evidence]] = evidence or (incident(),)
        self.calls = 0
        self.running = 0
        self.most_running = 0
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()
        self._lock = threading.Lock()

    def __call__(self) -> Evidence:
        with self._lock:
            index = min(self.calls, len(self.evidence) - 1)
            self.calls += 1
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.entered.set()
        try:
            if not self.hold.wait(timeout=30):
                raise TimeoutError("the test never let the read finish")
            chosen = self.evidence[index]
            return chosen() if callable(chosen) else chosen
        finally:
            with self._lock:
                self.running -= 1


def source(collect: Callable[[], Evidence], live: bool = False, title: str = "test") -> Source:
    return Source(collect=collect, judge=judge, title=title, live=live, taken_at=1.0e9)


class NotedApp(WatchApp):
    """A WatchApp that keeps (severity, message) of every notification it shows, and counts
    the readings it shows (a reading dropped while paused is not shown)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[tuple[str, str]] = []
        self.shown = 0

    def _show(self, frame: Frame) -> None:
        self.shown += 1
        super()._show(frame)

    def notify(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.notes.append((str(kwargs.get("severity", "information")), message))
        super().notify(message, *args, **kwargs)


def play(scenario: Coroutine[Any, Any, None]) -> None:
    """Run an async test body (pytest here has no asyncio plugin)."""
    asyncio.run(scenario)


def text_of(app: WatchApp, selector: str) -> str:
    """The plain text a Static on the current screen shows."""
    content = app.screen.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


def table(app: WatchApp, selector: str) -> DataTable[object]:
    return app.screen.query_one(selector, DataTable)


def column(app: WatchApp, selector: str, name: str) -> list[str]:
    """One column of a table on the current screen, as plain text, top to bottom."""
    found = table(app, selector)
    return [str(cell.plain if isinstance(cell, Text) else cell)
            for cell in found.get_column(name)]


def cursor_key(app: WatchApp, selector: str) -> str | None:
    return selected_key(table(app, selector))
