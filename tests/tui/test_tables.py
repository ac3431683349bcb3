"""tables.fill: a table refilled on every frame keeps the user's place and its keys unique."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import DataTable
from triton_doctor.tui.tables import fill, new_table, original_key, selected_key

from tests.tui.render import screen_text
from tests.tui.support import play

ROWS = [("a", ("alpha", 1)), ("b", ("beta", 2)), ("c", ("gamma", 3))]


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield new_table("t", ("name", "n"))


def with_table(body: Callable[[DataTable[object], Pilot[None]], Awaitable[None]]) -> None:
    async def scenario() -> None:
        app = TableApp()
        async with app.run_test(size=(60, 12)) as pilot:
            await pilot.pause()
            await body(app.query_one(DataTable), pilot)

    play(scenario())


def cells(table: DataTable[object]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def test_new_table_has_its_columns_keyed_by_name() -> None:
    async def body(table: DataTable[object], _: Pilot[None]) -> None:
        assert [key.value for key in table.columns] == ["name", "n"]
        assert table.cursor_type == "row"
        assert selected_key(table) is None

    with_table(body)


def test_fill_shows_the_rows_in_order() -> None:
    async def body(table: DataTable[object], _: Pilot[None]) -> None:
        fill(table, ROWS)
        assert cells(table) == [["alpha", "1"], ["beta", "2"], ["gamma", "3"]]
        assert selected_key(table) == "a"

    with_table(body)


def test_the_cursor_stays_on_its_key_when_rows_move() -> None:
    async def body(table: DataTable[object], pilot: Pilot[None]) -> None:
        fill(table, ROWS)
        table.move_cursor(row=1)
        await pilot.pause()
        assert selected_key(table) == "b"
        fill(table, [ROWS[2], ("new", ("delta", 4)), ROWS[0], ROWS[1]])
        assert selected_key(table) == "b"
        assert table.cursor_row == 3
        # New numbers in the row under the cursor: still the same row.
        fill(table, [ROWS[0], ("b", ("beta", 22))])
        assert selected_key(table) == "b"
        assert cells(table)[1] == ["beta", "22"]

    with_table(body)


def test_the_cursor_goes_to_the_top_when_its_row_is_gone() -> None:
    async def body(table: DataTable[object], pilot: Pilot[None]) -> None:
        fill(table, ROWS)
        table.move_cursor(row=2)
        await pilot.pause()
        fill(table, ROWS[:2])
        assert selected_key(table) == "a"
        fill(table, [])
        assert table.row_count == 0
        assert selected_key(table) is None

    with_table(body)


def test_rows_with_one_key_get_unique_keys_that_read_back_as_it() -> None:
    async def body(table: DataTable[object], pilot: Pilot[None]) -> None:
        fill(table, [("same", ("one", 1)), ("same", ("two", 2)), ("other", ("x", 0)),
                     ("same", ("three", 3))])
        assert table.row_count == 4
        raw = [row.key.value or "" for row in table.ordered_rows]
        assert len(set(raw)) == 4
        assert raw[0] == "same"
        assert [original_key(key) for key in raw] == ["same", "same", "other", "same"]
        table.move_cursor(row=3)
        await pilot.pause()
        assert selected_key(table) == "same"
        assert selected_key(table, raw=True) == raw[3]
        # The third "same" keeps the cursor when the rows are drawn again, changed.
        fill(table, [("same", ("one", 1)), ("same", ("two", 2)), ("same", ("three", 33))])
        assert table.cursor_row == 2 and cells(table)[2] == ["three", "33"]

    with_table(body)


def test_unchanged_rows_are_not_drawn_again() -> None:
    async def body(table: DataTable[object], pilot: Pilot[None]) -> None:
        fill(table, ROWS)
        cleared: list[bool] = []
        original = table.clear

        def counting_clear(*args: Any, **kwargs: Any) -> DataTable[object]:
            cleared.append(True)
            return original(*args, **kwargs)

        table.clear = counting_clear  # type: ignore[method-assign]
        fill(table, [(key, tuple(values)) for key, values in ROWS])
        assert cleared == []
        fill(table, ROWS[:1])
        assert cleared == [True]

    with_table(body)


def test_rows_drawn_before_they_were_measured_are_drawn_again_at_full_width() -> None:
    async def body(table: DataTable[object], pilot: Pilot[None]) -> None:
        fill(table, [("a", ("image_classifier", 12345))])
        table.render_line(1)  # the screen draws the table before the table's next idle
        await pilot.pause()
        await pilot.pause(0.05)
        assert "image_classifier" in "\n".join(screen_text(table.app.export_screenshot()))

    with_table(body)
