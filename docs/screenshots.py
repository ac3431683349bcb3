"""Draw the README's pictures of the terminal UI into docs/screenshots/.

    .venv/bin/python docs/screenshots.py

The screens are drawn by tests/tui/render.py, the renderer the screenshot tests use, so the
pictures are the ones tests/tui/test_screenshots.py checks are current (the tests rewrite
them too, with TD_UPDATE_SNAPSHOTS=1).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.tui.render import DOCS, main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main([str(DOCS)]))
