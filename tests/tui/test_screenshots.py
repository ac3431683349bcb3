"""Each screen of the terminal UI, drawn on the recorded incident (and check --tui on the demo
repository), compared with the SVG the README shows, stored in docs/screenshots/.

After a deliberate change to the UI, look at the new pictures and store them:

    TD_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tui/test_screenshots.py

On a mismatch the test writes what it drew next to the stored file as NAME.actual.svg
(ignored by git) and prints the lines of text that differ. tests/tui/render.py says what
keeps the pictures the same on every run and machine. They depend on the Textual version:
with another version than the one recorded in docs/screenshots/textual-version.txt the comparison
is skipped, not failed.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.tui import render

UPDATE = os.environ.get("TD_UPDATE_SNAPSHOTS") == "1"
HOW_TO_UPDATE = "TD_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tui/test_screenshots.py"
VERSION_FILE = render.DOCS / "textual-version.txt"


@functools.cache
def drawn(name: str) -> str:
    return render.render(name)


def _compare(name: str, stored: Path) -> None:
    actual = drawn(name)
    if UPDATE:
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(actual, encoding="utf-8")
        VERSION_FILE.write_text(version("textual") + "\n", encoding="utf-8")
        return
    recorded = VERSION_FILE.read_text().strip() if VERSION_FILE.exists() else None
    if recorded is not None and recorded != version("textual"):
        pytest.skip(f"the snapshots were drawn with Textual {recorded}, this is "
                    f"{version('textual')}; to redraw them: {HOW_TO_UPDATE}")
    if not stored.exists():
        pytest.fail(f"{stored} is missing; to write it: {HOW_TO_UPDATE}", pytrace=False)
    expected = stored.read_text(encoding="utf-8")
    if actual == expected:
        return
    written = stored.with_name(f"{stored.stem}.actual.svg")
    written.write_text(actual, encoding="utf-8")
    changed = "\n".join(difflib.unified_diff(
        render.screen_text(expected), render.screen_text(actual), "stored", "drawn now",
        lineterm="", n=1))
    pytest.fail(
        f"screen {name!r} is not drawn as {stored.relative_to(render.ROOT)} shows; what was "
        f"drawn is in {written.relative_to(render.ROOT)}.\n"
        f"If the change is intended, store it: {HOW_TO_UPDATE}\n"
        f"Text that differs (colours and styles are not listed):\n{changed or '(none)'}",
        pytrace=False)


@pytest.mark.parametrize("name", list(render.SCENES))
def test_screen_matches_its_picture(name: str) -> None:
    _compare(name, render.DOCS / f"{name}.svg")


def test_screen_text_reads_the_terminal_lines_back() -> None:
    lines = render.screen_text(drawn("overview"))
    assert len(lines) == render.SIZE[1]
    assert "snapshot incident.snapshot.json" in lines[0]
    assert "read 21:52:48Z" in lines[0]
    assert any(line.strip().startswith("detector") and "UNAVAILABLE" in line for line in lines)


@pytest.mark.parametrize("name", list(render.SCENES))
def test_screens_hold_nothing_of_this_machine(name: str) -> None:
    """No temporary or absolute path, no user name: the pictures are the same everywhere."""
    svg = drawn(name)
    assert str(render.ROOT) not in svg
    assert "/tmp/" not in svg
    terminal_ids = set(re.findall(r"terminal-(\d+)", svg))
    assert len(terminal_ids) == 1, "one id per picture, made from its content"


def test_readme_shows_every_screen() -> None:
    readme = (render.ROOT / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.svg)\)", readme)
    assert sorted(linked) == sorted(f"docs/screenshots/{name}.svg" for name in render.SCENES)
    assert sorted(p.name for p in render.DOCS.glob("*.svg")) == sorted(
        f"{name}.svg" for name in render.SCENES), "a picture the README does not show"
