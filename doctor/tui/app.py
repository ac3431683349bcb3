"""``triton-doctor watch`` and ``check --tui``: the Textual application.

Reading a source blocks (HTTP, NVML, /proc, disk), so it runs in a thread of its own and
the frame comes back to the UI when done. A read starts only when none is running: polls
never overlap, and a slow server slows the polling instead of piling requests on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.timer import Timer
from triton_doctor import snapshot
from triton_doctor.findings import Finding
from triton_doctor.printable import printable
from triton_doctor.tui.findings import FindingsScreen
from triton_doctor.tui.help import HelpScreen
from triton_doctor.tui.log import LogScreen
from triton_doctor.tui.model import ModelScreen
from triton_doctor.tui.overview import OverviewScreen
from triton_doctor.tui.screen import FrameScreen
from triton_doctor.tui.sources import Source
from triton_doctor.tui.state import Frame, History


class WatchApp(App[None]):
    """Overview, findings, model and log screens over frames read from ``source``."""

    TITLE = "triton-doctor"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("f", "findings", "findings"),
        Binding("l", "log", "log"),
        Binding("p", "pause", "pause"),
        Binding("r", "refresh", "refresh"),
        Binding("s", "save", "save snapshot"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, source: Source, interval_s: float = 1.0, save_dir: str = ".",
                 browse_only: bool = False) -> None:
        super().__init__()
        self.source = source
        self.interval_s = interval_s
        self.save_dir = save_dir
        #: ``check --tui``: the findings screen is all there is.
        self.browse_only = browse_only
        self.history = History()
        self.paused = False
        self.reading = False
        self.last_error = ""
        self._timer: Timer | None = None

    def get_default_screen(self) -> FrameScreen:
        return FindingsScreen() if self.browse_only else OverviewScreen()

    def on_mount(self) -> None:
        if self.source.live:
            self._timer = self.set_interval(self.interval_s, self._tick)
        self._tick()

    def _tick(self) -> None:
        if self.paused or self.reading:
            return
        self.reading = True
        self._read(asked=False)

    @work(group="read")
    async def _read(self, asked: bool) -> None:
        """Read the source in a daemon thread and wait for it here: quitting must not wait
        for a server that takes its whole timeout to answer (a pool thread would be joined
        at exit). A poll that ends after ``p`` is dropped, so a paused screen stays still;
        one the user ``asked`` for with ``r`` is shown."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Frame | str] = loop.create_future()

        def read() -> None:
            try:
                outcome: Frame | str = self.source.read()
            except Exception as error:  # a defect in a collector must not end the UI
                outcome = f"{type(error).__name__}: {error}"
            with contextlib.suppress(RuntimeError):  # the UI has quit meanwhile
                loop.call_soon_threadsafe(_settle, done, outcome)

        threading.Thread(target=read, name="triton-doctor-read", daemon=True).start()
        outcome = await done
        if self.paused and not asked:
            self.reading = False
        elif isinstance(outcome, Frame):
            self._show(outcome)
        else:
            self._failed(outcome)

    def _show(self, frame: Frame) -> None:
        self.reading = False
        self.last_error = ""
        self.remember(frame)
        if self.browse_only and self.screen_stack:
            self.refresh_bindings()  # l shows once the check has read a log
        self._redraw()

    def remember(self, frame: Frame) -> None:
        """Keep a new frame for the screens (the fleet app keeps one History per replica)."""
        self.history.add(frame)

    def heading(self) -> str:
        """What the status line names as the source of what is shown."""
        return self.source.title

    def saved_frame(self) -> Frame | None:
        """The reading ``s`` writes: the latest one."""
        return self.history.latest

    def open_finding(self, finding: Finding) -> None:
        """Enter on a finding in the findings screen: its model's screen, where it has one."""
        if finding.model:
            self.push_screen(ModelScreen(finding.model))

    def _failed(self, why: str) -> None:
        self.reading = False
        self.last_error = why
        self.notify(f"reading {printable(self.source.title)} failed: {printable(why)}",
                    severity="error", markup=False)
        self._redraw()

    def _redraw(self) -> None:
        """Draw the newest frame on the top screen. A read can land while the UI closes
        (its widgets are being removed) or before a just-pushed screen has been built; such
        a screen is skipped, and a new one draws itself when it is resumed."""
        if not self.is_running:
            return
        stack = self.screen_stack
        if stack and isinstance(stack[-1], FrameScreen) and stack[-1].is_mounted:
            stack[-1].show(self.history)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that mean nothing here are left out of the footer and do nothing: pause for
        a source that is not polled, the log for a check without one, back at the first
        screen."""
        if action == "pause":
            return self.source.live
        if action == "log":
            latest = self.history.latest
            return not self.browse_only or (latest is not None
                                            and latest.evidence.log is not None)
        if action == "go_back":
            return len(self.screen_stack) > 1
        return True

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_findings(self) -> None:
        if not isinstance(self.screen, FindingsScreen):
            self.push_screen(FindingsScreen())

    def action_filter(self) -> None:
        if isinstance(self.screen, FindingsScreen):
            self.screen.focus_filter()
        else:
            self.push_screen(FindingsScreen(filter_first=True))

    def action_log(self) -> None:
        if not isinstance(self.screen, LogScreen):
            self.push_screen(LogScreen())

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.notify("paused: press p to poll again" if self.paused else "polling again")
        self._redraw()

    def action_refresh(self) -> None:
        if self.reading:
            self.notify("a read is already running")
            return
        if self._timer is not None:
            self._timer.reset()
        self.reading = True
        self._read(asked=True)

    def action_save(self) -> None:
        frame = self.saved_frame()
        if frame is None:
            self.notify("nothing to save yet: the first read has not finished",
                        severity="warning")
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(frame.at))
        path = Path(self.save_dir) / f"triton-doctor-{stamp}.json"
        try:
            snapshot.write(frame.evidence, os.fspath(path))
        except OSError as error:
            self.notify(f"cannot write {printable(str(path))}: "
                        f"{printable(str(error.strerror or error))}",
                        severity="error", markup=False)
            return
        shown = printable(str(path))
        self.notify(f"saved {shown}; judge it again with: triton-doctor check --snapshot {shown}",
                    markup=False)

    def action_go_back(self) -> None:
        if len(self.screen_stack) > 1:
            self.pop_screen()


def _settle(future: asyncio.Future[Frame | str], outcome: Frame | str) -> None:
    if not future.done():
        future.set_result(outcome)
