"""The one renderer of the terminal UI's screenshots.

``tests/tui/test_screenshots.py`` compares its SVGs with docs/screenshots/ (the README's
pictures); ``docs/screenshots.py`` (or ``python -m tests.tui.render DIR``) writes them.

Every screen is drawn on the recorded incident (fixtures/recorded/watch/) or on
fixtures/demo-repository at a fixed size, so an SVG depends on the UI's code and nothing else:

- the terminal is always SIZE;
- the UI shows times in UTC from the Evidence (the server's samples); a source without sample
  times (the repository) is given a fixed ``taken_at``, never the clock or a file's mtime;
- NO_COLOR is ignored while drawing;
- titles are fixed words, never an absolute path; the repository is read by its path relative
  to the project root (findings quote it), with the working directory set to the root.
"""

from __future__ import annotations

import asyncio
import calendar
import html
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot
from triton_doctor import snapshot
from triton_doctor.catalogue import all_rules
from triton_doctor.checks.repository import collect_repository
from triton_doctor.engine import run
from triton_doctor.evidence import Evidence
from triton_doctor.tui.app import WatchApp
from triton_doctor.tui.sources import Source

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "fixtures" / "recorded" / "watch" / "incident.snapshot.json"
#: Relative to ROOT: findings and the status line quote the path as given.
DEMO = "fixtures/demo-repository"
SIZE = (120, 36)
DOCS = ROOT / "docs" / "screenshots"
#: Rich writes a character cell 12.2 px wide (0.61 of its 20 px font).
CELL_PX = 12.2
_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
                   r'clip-path="url\(#terminal-\d+-line-(\d+)\)">([^<]*)</text>')


def screen_text(svg: str) -> list[str]:
    """The characters of an SVG screenshot, one string per terminal line."""
    lines: dict[int, list[str]] = {}
    for x, line, content in _TEXT.findall(svg):
        row = lines.setdefault(int(line), [])
        column = round(float(x) / CELL_PX)
        text = html.unescape(content).replace("\xa0", " ").rstrip("\n")
        row.extend(" " * (column + len(text) - len(row)))
        row[column:column + len(text)] = text
    return ["".join(lines.get(n, [])).rstrip() for n in range(max(lines, default=-1) + 1)]


def snapshot_created(path: Path) -> float:
    """A snapshot's "created" stamp, in seconds since the epoch (its taken_at, not its mtime)."""
    created = json.loads(path.read_text(encoding="utf-8"))["created"]
    return float(calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")))


def incident_source() -> Source:
    """The recorded incident, as ``watch --snapshot incident.snapshot.json`` shows it."""
    evidence = snapshot.read(os.fspath(INCIDENT))
    return Source(collect=lambda: evidence, judge=lambda e: run(e, all_rules()),
                  title=f"snapshot {INCIDENT.name}", live=False,
                  taken_at=snapshot_created(INCIDENT))


def repository_source() -> Source:
    """fixtures/demo-repository as ``check --tui fixtures/demo-repository`` shows it; read from
    disk on each read, relative to the working directory (see ``at_root``)."""
    return Source(collect=lambda: Evidence(repository=collect_repository(DEMO)),
                  judge=lambda e: run(e, all_rules()), title=f"repository {DEMO}", live=False,
                  taken_at=snapshot_created(INCIDENT))


@contextmanager
def at_root() -> Iterator[None]:
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


@contextmanager
def in_colour() -> Iterator[None]:
    """Without NO_COLOR, which Textual and Rich honour: a machine that sets it would draw
    every screenshot in monochrome."""
    saved = os.environ.pop("NO_COLOR", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["NO_COLOR"] = saved


async def settle(app: WatchApp, pilot: Pilot[None]) -> None:
    """Wait for the reads started so far, and for the screen to draw what they gave."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def still(app: WatchApp, pilot: Pilot[None], tries: int = 40) -> str:
    """The screen as SVG once it stops changing: the first of two equal captures taken a
    moment apart, after every read is done."""
    await settle(app, pilot)
    shot = app.export_screenshot()
    for _ in range(tries):
        await pilot.pause(0.05)
        again = app.export_screenshot()
        if again == shot:
            return shot
        shot = again
    raise AssertionError(f"the screen still changes after {tries} captures")


@dataclass(frozen=True)
class Scene:
    """A screen: the source it shows and the keys that lead to it from the first screen."""

    keys: tuple[str, ...] = ()
    browse_only: bool = False


SCENES: dict[str, Scene] = {
    "overview": Scene(),
    # The detail pane shows the finding under the cursor: the queue backlog (the sixth row),
    # with its numbers.
    "findings": Scene(keys=("f", "down", "down", "down", "down", "down")),
    # image_classifier is the second model row.
    "model": Scene(keys=("down", "enter")),
    # The GPU table comes before the models table, which has the focus.
    "gpu": Scene(keys=("shift+tab", "enter")),
    "log": Scene(keys=("l",)),
    "help": Scene(keys=("question_mark",)),
    "check-tui": Scene(browse_only=True),
}


async def render_async(name: str) -> str:
    scene = SCENES[name]
    source = repository_source() if scene.browse_only else incident_source()
    app = WatchApp(source, browse_only=scene.browse_only)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in scene.keys:
            await pilot.press(key)
            await settle(app, pilot)
        return await still(app, pilot)


def render(name: str) -> str:
    """Screen ``name`` of SCENES as SVG."""
    with at_root(), in_colour():
        return asyncio.run(render_async(name))


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCENES:
        path = directory / f"{name}.svg"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    for path in write_all(Path(argv[0]) if argv else DOCS):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
