"""``?``: the keys, and what each screen is for."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]triton-doctor watch[/b] — what is broken right now, and what to do

[b]Keys[/b]
  ?        this help (Esc or ? closes it)
  /        filter the findings: words, severity:warning, model:NAME, rule:TD6
  Enter    drill down: a GPU, a model, a finding's full story
  Esc      back to the previous screen
  f        all findings seen since the watch began (a: firing only / all)
  l        the server log's error lines, each with the rule that explains it
  p        pause or resume polling
  r        read again now
  s        save what is on screen as a snapshot (check --snapshot FILE judges it)
  q        quit

[b]Mouse[/b]: click a row to select it, click it again to open it; click a column
header in the findings table to sort by it; click a key in the footer.

[b]Screens[/b]
  Overview  server health, GPU memory, models with their traffic, firing findings
  Findings  sortable, filterable; the detail pane has the numbers, the server's
            own words, the fix and the rule's documentation
  GPU       memory over time, the processes holding it, ECC and MIG, its findings
  Model     a model's numbers over time, its findings and its configuration
  Log       recent error lines matched to rules
"""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS: ClassVar[str] = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close"),
        Binding("question_mark", "close", "close", key_display="?"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)

    def action_close(self) -> None:
        self.dismiss()
