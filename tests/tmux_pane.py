"""A command in a detached tmux pane of fixed size: a real terminal, read back as text.

Each TmuxPane runs its own tmux server on a private socket (``-S`` in a directory of ours,
``-f /dev/null``): the user's tmux server, its sessions and its configuration are never
touched. ``remain-on-exit`` keeps the pane after the command ends, so its exit status and its
last screen can still be read.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

TMUX = shutil.which("tmux") or "/usr/bin/tmux"


def tmux_available() -> bool:
    return os.access(TMUX, os.X_OK)


class TmuxPane:
    """``command`` in a ``width`` x ``height`` pane. Use as a context manager: the tmux
    server (and with it the command, if still running) is killed on the way out."""

    def __init__(self, command: Sequence[str], socket_dir: Path, width: int = 160,
                 height: int = 48, env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.socket = socket_dir / f"tmux-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.width, self.height = width, height
        self.env = dict(os.environ if env is None else env)
        # Started from inside someone's tmux, it must still be a server of its own.
        self.env.pop("TMUX", None)
        self.env.pop("TMUX_PANE", None)
        self.started_at = 0.0

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([TMUX, "-S", str(self.socket), "-f", os.devnull, *args],
                              capture_output=True, text=True, timeout=10, check=check,
                              env=self.env)

    def start(self) -> TmuxPane:
        self.started_at = time.monotonic()
        # remain-on-exit before the pane starts, so a command that fails at once stays readable;
        # exec: the pane's process is the command itself, not a shell waiting for it.
        self.tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
                  "new-session", "-d", "-s", "main", "-x", str(self.width), "-y",
                  str(self.height), "-e", "TERM=xterm-256color",
                  "exec " + shlex.join(self.command))
        return self

    def stop(self) -> None:
        self.tmux("kill-server", check=False)
        self.socket.unlink(missing_ok=True)

    def __enter__(self) -> TmuxPane:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def screen(self) -> str:
        """The visible screen as text, one line per row (trailing spaces dropped)."""
        return self.tmux("capture-pane", "-p", "-t", "main").stdout

    def info(self, fmt: str) -> str:
        return self.tmux("display-message", "-p", "-t", "main", fmt).stdout.strip()

    @property
    def pid(self) -> int:
        return int(self.info("#{pane_pid}"))

    @property
    def server_pid(self) -> int:
        """The tmux server's process: what drawing on this terminal costs it."""
        return int(self.info("#{pid}"))

    def dead(self) -> bool:
        """The pane's command has ended (its output is closed)."""
        return self.info("#{pane_dead}") == "1"

    def exit_status(self) -> int | None:
        """None while the command runs; then its exit status, or minus the signal that
        ended it (as subprocess does).

        tmux 3.3a sometimes misses the SIGCHLD of a pane's process: the pane is dead (its
        output closed) but the process stays a zombie with no status, until another child of
        the tmux server ends and its SIGCHLD reaps both. ``run-shell -b true`` starts that
        child (in the background: a SIGCHLD missed for it too would hang a waiting run-shell).
        """
        if not self.dead():
            return None
        deadline = time.monotonic() + 5.0
        while True:
            status = self.info("#{pane_dead_status}")
            if status:
                return int(status)
            killed = self.info("#{pane_dead_signal}")
            if killed:  # a number in tmux 3.3, a name in some later releases
                if killed.isdigit():
                    return -int(killed)
                name = killed if killed.startswith("SIG") else f"SIG{killed}"
                return -int(signal.Signals[name]) if name in signal.Signals.__members__ else -1
            if time.monotonic() > deadline:
                raise AssertionError("the pane is dead but tmux never reaped its process")
            self.tmux("run-shell", "-b", "true")
            time.sleep(0.05)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def wait_for(self, shown: Callable[[str], bool], timeout: float = 20.0,
                 every: float = 0.1, what: str = "") -> str:
        """Poll the screen until ``shown(screen)``; AssertionError with the last screen if it
        does not come within ``timeout`` seconds (or the command ends first)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if shown(screen):
                return screen
            dead = self.dead()
            if dead or time.monotonic() > deadline:
                why = ("the command ended (status "
                       f"{self.info('#{pane_dead_status}')})" if dead
                       else f"not within {timeout:g} s")
                raise AssertionError(f"screen never showed {what or shown!r}: {why}; "
                                     f"last screen:\n{screen}")
            time.sleep(every)

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        """Wait for the command to end; its exit status (see :meth:`exit_status`)."""
        deadline = time.monotonic() + timeout
        while not self.dead():
            if time.monotonic() > deadline:
                raise AssertionError(f"still running {timeout:g} s later; screen:\n"
                                     f"{self.screen()}")
            time.sleep(0.05)
        return self.exit_status()
