"""Refill a DataTable on every frame without losing the user's place in it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from weakref import WeakKeyDictionary

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey
from triton_doctor.printable import printable

Row = tuple[str, Sequence[object]]
#: Unique row keys carry a counter after this separator when two rows share a key.
_SEPARATOR = "\x1e"
_shown: WeakKeyDictionary[DataTable[object], list[tuple[str, tuple[str, ...]]]] = (
    WeakKeyDictionary())


class FrameTable(DataTable[object]):
    """Textual's DataTable widens its columns for new rows at its next idle, but keeps the
    rows it drew before that at the header's widths ("TD10", "firin"): once the new rows are
    measured, drop those drawings."""

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        super()._update_dimensions(new_rows)
        self._clear_caches()
        self.refresh()


def new_table(key: str, columns: Sequence[str]) -> DataTable[object]:
    """A row-cursor table with its columns (keyed by name), ready before its first frame."""
    made = FrameTable(id=key, cursor_type="row")
    for column in columns:
        made.add_column(column, key=column)
    return made


def set_columns(table: DataTable[object], columns: Sequence[tuple[str, Text]]) -> None:
    """Replace the columns (key, label) and their rows when they differ from those shown: the
    next ``fill`` draws its rows whatever was there before."""
    if [column.value for column in table.columns] == [key for key, _ in columns]:
        return
    table.clear(columns=True)
    _shown.pop(table, None)
    for key, label in columns:
        table.add_column(label, key=key)


def fill(table: DataTable[object], rows: Sequence[Row], height: int = 1) -> None:
    """Show ``rows`` (key, cells); unchanged rows cost nothing, the cursor stays on its key."""
    keys = _unique([key for key, _ in rows])
    shown = [(key, tuple(str(cell) for cell in cells))
             for key, (_, cells) in zip(keys, rows, strict=True)]
    if _shown.get(table) == shown:
        return
    _shown[table] = shown
    selected = selected_key(table, raw=True)
    table.clear()
    for key, (_, cells) in zip(keys, rows, strict=True):
        table.add_row(*(_literal(cell, height) for cell in cells), key=key, height=height)
    if selected in keys:
        table.move_cursor(row=keys.index(selected))


def _literal(cell: object, height: int) -> object:
    """A str cell as the text it is: DataTable reads a str as markup, and a model named
    "[/]" ended the app; what it holds from outside is escaped (``printable``). Drawn as
    DataTable draws a str: on one line in a one-line row."""
    return Text(printable(cell), no_wrap=height == 1, end="") if isinstance(cell, str) else cell


def selected_key(table: DataTable[object], raw: bool = False) -> str | None:
    """The key of the row under the cursor (without its uniqueness counter unless ``raw``)."""
    if not table.row_count:
        return None
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value or ""
    return key if raw else original_key(key)


def original_key(key: str) -> str:
    return key.split(_SEPARATOR, 1)[0]


def _unique(keys: list[str]) -> list[str]:
    counts: dict[str, int] = {}
    unique = []
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
        unique.append(key if counts[key] == 1 else f"{key}{_SEPARATOR}{counts[key]}")
    return unique
