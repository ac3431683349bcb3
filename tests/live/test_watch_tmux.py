"""``triton-doctor watch`` in a real terminal, against a real tritonserver.

The installed console script runs in a detached tmux pane of 160x48 (its own tmux server on a
private socket); the test reads the screen with ``capture-pane`` and types with ``send-keys``,
as a user would. The server runs a model that answers and one that raises in ``initialize``:
the overview must list both, with TD601 on the broken one, and q, f and p must do what the
footer says.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.python_models import kill, wait_ready, write_repository
from tests.server_harness import TritonServer
from tests.tmux_pane import TmuxPane, tmux_available

TRITON_DOCTOR = Path(sys.executable).parent / "triton-doctor"
TD601_ROW = re.compile(r"\bTD601\s+broken_init\b")
STATUS_READ = re.compile(r"read (\d\d:\d\d:\d\dZ)")

pytestmark = pytest.mark.skipif(not tmux_available(), reason="tmux is not installed")


@pytest.fixture(scope="module")
def server(triton_server: Callable[..., TritonServer],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    repository = write_repository(tmp_path_factory.mktemp("watch") / "models")
    started = triton_server(repository, "--exit-on-error=false", wait_for="/v2/health/live")
    wait_ready(started.http_url, "healthy_add")
    yield started
    kill(started)


@pytest.fixture
def watch(server: TritonServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TmuxPane]:
    """``watch --interval 1`` in a fresh pane, its overview already showing both models."""
    if not TRITON_DOCTOR.is_file():
        pytest.skip(f"no console script at {TRITON_DOCTOR}: pip install -e .")
    command = [str(TRITON_DOCTOR), "watch", "--url", server.http_url, "--metrics-url",
               server.metrics_url, "--interval", "1", "--save-dir",
               str(tmp_path_factory.mktemp("saved"))]
    with TmuxPane(command, tmp_path_factory.mktemp("tmux")) as pane:
        pane.wait_for(_overview_complete, what="both models and TD601 on broken_init")
        yield pane


def _overview_complete(screen: str) -> bool:
    lines = screen.splitlines()
    return (any("healthy_add" in line and "READY" in line for line in lines)
            and any("broken_init" in line and "UNAVAILABLE" in line for line in lines)
            and _td601_row(screen) is not None)


def _td601_row(screen: str) -> str | None:
    """The table row of TD601 on broken_init (other lines may name TD601 in their text)."""
    rows = [line for line in screen.splitlines() if TD601_ROW.search(line)]
    return rows[0] if len(rows) == 1 else None


def _status_bar(screen: str) -> str:
    return screen.splitlines()[0] if screen else ""


def _read_at(screen: str) -> str:
    found = STATUS_READ.search(_status_bar(screen))
    assert found, f"no 'read HH:MM:SSZ' in the status bar:\n{screen}"
    return found.group(1)


def test_overview_shows_models_and_td601_then_q_quits_with_status_0(watch: TmuxPane) -> None:
    screen = watch.screen()
    assert "Models" in screen and "Firing" in screen, screen
    firing = _td601_row(screen)
    assert firing is not None and "UNAVAILABLE" in firing, screen
    assert "cannot open the tokenizer" in firing or "RuntimeError" in firing, screen
    assert "triton 2.51" in _status_bar(screen), screen
    assert not [line for line in screen.splitlines() if "healthy_add" in line
                and ("TD6" in line or "error" in line)], screen
    watch.keys("q")
    assert watch.wait_exit(timeout=10) == 0, watch.screen()


def test_f_opens_the_findings_screen_and_escape_goes_back(watch: TmuxPane) -> None:
    watch.keys("f")
    screen = watch.wait_for(
        lambda s: "firing only" in s and "/ filter" in s and _td601_row(s) is not None,
        timeout=10, what="the findings screen with TD601 on broken_init")
    assert "Models  (" not in screen, screen
    watch.keys("Escape")
    watch.wait_for(lambda s: "Models  (" in s, timeout=10, what="the overview again")


def test_p_pauses_polling_and_p_again_resumes(watch: TmuxPane) -> None:
    watch.keys("p")
    watch.wait_for(lambda s: "PAUSED" in _status_bar(s), timeout=10,
                   what="PAUSED in the status bar")
    time.sleep(1.0)  # a read already under way when p was pressed may still land
    paused_at = _read_at(watch.screen())
    time.sleep(2.5)  # over two intervals: no new reading while paused
    screen = watch.screen()
    assert _read_at(screen) == paused_at and "PAUSED" in _status_bar(screen), screen
    watch.keys("p")
    watch.wait_for(lambda s: "PAUSED" not in _status_bar(s) and _read_at(s) != paused_at,
                   timeout=10, what="polling again: PAUSED gone and a newer reading")


def test_q_quits_at_once_while_a_hung_server_holds_the_read(
        silent_port: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A server that accepts and never answers keeps a read busy for its whole timeout; the
    UI must still answer keys, and q must not wait for that read."""
    if not TRITON_DOCTOR.is_file():
        pytest.skip(f"no console script at {TRITON_DOCTOR}: pip install -e .")
    url = f"http://127.0.0.1:{silent_port}"
    command = [str(TRITON_DOCTOR), "watch", "--url", url, "--metrics-url", f"{url}/metrics",
               "--timeout", "30"]
    with TmuxPane(command, tmp_path_factory.mktemp("tmux")) as pane:
        pane.wait_for(lambda screen: "reading…" in screen and "q quit" in screen,
                      what="the first read running and the footer")
        pane.keys("?")
        pane.wait_for(lambda screen: "this help" in screen, timeout=5, what="the help")
        pane.keys("Escape")  # on its own: an Escape followed at once by q reads as Alt+q
        pane.wait_for(lambda screen: "this help" not in screen, timeout=5, what="help closed")
        pressed = time.monotonic()
        pane.keys("q")
        assert pane.wait_exit(timeout=5) == 0
        assert time.monotonic() - pressed < 3, "q waited for the hung read"
