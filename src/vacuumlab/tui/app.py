"""The full-screen view of ``vacuumlab watch``, on Textual, after pg_activity and htop: a
status line, a banner while the server cannot be read, a line for each database not read
(``--all-databases``), the workers, the running vacuums, the queue, and side by side what
holds vacuum back and how far wraparound is.

One background thread (tui/refresher.py) takes a refresh every ``every_s`` seconds and posts
it to the App; the screen draws only from the latest refresh's records (tui/rows.py), laid out
by watch.tcss. Keys change what is drawn (sort, filter, details), never what is asked of the
server; a pause stops the thread's refreshes altogether.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Input, Static

from vacuumlab.records.live import LiveView, Refresh, RunningVacuum, TableLive
from vacuumlab.tui import rows
from vacuumlab.tui.refresher import Fetch, Refreshed, Refresher
from vacuumlab.tui.screens import DetailScreen, HelpScreen
from vacuumlab.watch.detail import detail


class WatchApp(App[None]):
    """The live view. ``fetch`` None: no refresher (tests post refreshes themselves)."""

    TITLE = "vacuumlab watch"
    ENABLE_COMMAND_PALETTE = False
    #: Read next to this module, as Textual resolves it; packaged as package data.
    CSS_PATH = "watch.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,ctrl+c", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("s", "sort", "Sort"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("p,space", "pause", "Pause"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(
        self,
        fetch: Fetch | None,
        *,
        every_s: float = 2.0,
        on_exit: Callable[[], object] | None = None,
    ) -> None:
        super().__init__()
        self.every_s = every_s
        self.query_state = rows.Query()
        self.paused = False
        self.latest: Refresh | None = None  # the last refresh with a view
        self.error: str | None = None
        self.refresher = (
            Refresher(fetch, every_s, self._post, on_exit) if fetch is not None else None
        )

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="banner")
        yield Static(id="unread")
        yield Static(Text("waiting for the first refresh…"), id="summary")
        yield self._table("vacuums", rows.VACUUM_COLUMNS, "Running vacuums")
        yield self._table("queue", rows.QUEUE_COLUMNS, "Queue")
        with Horizontal(id="bottom"):
            yield self._table("holders", rows.HOLDER_COLUMNS, "What holds vacuum back")
            yield self._table("wraparound", rows.WRAP_COLUMNS, "Wraparound")
        yield Input(placeholder="filter by schema or table name", id="filter")
        yield Footer()

    @staticmethod
    def _table(name: str, columns: Sequence[str], title: str) -> DataTable[str | Text]:
        table: DataTable[str | Text] = DataTable(id=name, cursor_type="row", zebra_stripes=True)
        table.add_columns(*columns)
        table.border_title = title
        return table

    def on_mount(self) -> None:
        self._status()
        self.query_one("#queue", DataTable).focus()
        if self.refresher is not None:
            self.refresher.start()

    def on_unmount(self) -> None:
        if self.refresher is not None:
            self.refresher.stop()

    # -- refreshes ------------------------------------------------------------------------

    def _post(self, refresh: Refresh) -> None:
        # RuntimeError: the App's loop has closed; it is exiting.
        with contextlib.suppress(RuntimeError):
            self.post_message(Refreshed(refresh))

    def on_refreshed(self, message: Refreshed) -> None:
        self.show(message.refresh)

    def show(self, refresh: Refresh) -> None:
        """Draw a refresh: its view, or the banner saying why there is none."""
        if self.paused:
            return  # under way when the pause began: the screen stays as it was
        self.error = refresh.error
        if refresh.view is not None:
            self.latest = refresh
        self.redraw()

    def redraw(self, *, keyed: bool = False) -> None:
        """Draw the latest view; ``keyed``: only what the sort and the filter change."""
        self._status()
        self._banner()
        view = self.view
        if view is None:
            return
        self._fill("vacuums", [(str(v.pid), rows.vacuum_cells(v)) for v in self._vacuums(view)])
        shown, matched = rows.queue(view, self.query_state)
        self._fill("queue", [(rows.row_key(t), rows.queue_cells(t, view)) for t in shown])
        self.query_one("#queue").border_title = rows.queue_title(
            len(shown), matched, view, self.query_state
        )
        self.query_one("#vacuums").border_title = rows.vacuums_title(view, self.query_state)
        if keyed:
            return
        self.query_one("#summary", Static).update(rows.workers_line(view.workers))
        self._unread(view)
        self._fill("holders", [(str(i), rows.holder_cells(h)) for i, h in enumerate(view.holders)])
        self._fill("wraparound", [(w.counter, rows.wrap_cells(w)) for w in view.wraparound])
        if isinstance(self.screen, DetailScreen):
            lines = self._detail_lines(self.screen.key)
            if lines is not None:
                self.screen.show(lines)

    @property
    def view(self) -> LiveView | None:
        return None if self.latest is None else self.latest.view

    def _vacuums(self, view: LiveView) -> list[RunningVacuum]:
        return rows.vacuums(view, self.query_state)

    def _fill(self, name: str, found: Sequence[tuple[str, rows.Cells]]) -> None:
        """Replace a table's rows, keeping the cursor on the same row when it is still there."""
        table = self.query_one(f"#{name}", DataTable)
        selected = self._selected_key(table)
        table.clear()
        for key, cells in found:
            table.add_row(*cells, key=key)
        keys = [key for key, _ in found]
        if selected in keys:
            table.move_cursor(row=keys.index(selected), animate=False)

    @staticmethod
    def _selected_key(table: DataTable[str | Text]) -> str | None:
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None else str(key)

    def _status(self) -> None:
        refresh = self.latest
        self.query_one("#status", Static).update(
            rows.status_line(
                self.view,
                seconds=None if refresh is None else refresh.seconds,
                statements=None if refresh is None else refresh.statements,
                every_s=self.every_s,
                paused=self.paused,
                query=self.query_state,
            )
        )

    def _unread(self, view: LiveView) -> None:
        """One line per database the view could not read, with the fix."""
        unread = self.query_one("#unread", Static)
        unread.display = bool(view.unread)
        if view.unread:
            unread.update(rows.unread_lines(view))

    def _banner(self) -> None:
        banner = self.query_one("#banner", Static)
        if self.error is None:
            banner.display = False
            return
        last = None if self.view is None else self.view.taken_at
        banner.update(rows.banner(self.error, self.every_s, last))
        banner.display = True

    # -- keys -----------------------------------------------------------------------------

    def action_sort(self) -> None:
        self.query_state = self.query_state.next_sort()
        self.redraw(keyed=True)

    def action_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.value = self.query_state.text
        field.display = True
        field.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.query_state = self.query_state.filtered(event.value)
        self.redraw(keyed=True)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self._close_filter()

    def action_clear_filter(self) -> None:
        self.query_state = self.query_state.filtered("")
        self._close_filter()
        self.redraw(keyed=True)

    def _close_filter(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#queue", DataTable).focus()

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.refresher is not None:
            self.refresher.pause(self.paused)
        self._status()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    @on(DataTable.RowSelected, "#queue")
    def _queue_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.open_detail(str(event.row_key.value))

    @on(DataTable.RowSelected, "#vacuums")
    def _vacuum_selected(self, event: DataTable.RowSelected) -> None:
        view = self.view
        if view is None:
            return
        pid = event.row_key.value
        vacuum = next((v for v in view.vacuums if str(v.pid) == pid), None)
        row = next((t for t in view.tables if t.label == vacuum.relation), None) if vacuum else None
        if row is not None:
            self.open_detail(rows.row_key(row))

    def open_detail(self, key: str) -> None:
        """The details of the queue's row ``key`` (rows.row_key())."""
        lines = self._detail_lines(key)
        if lines is not None:
            self.push_screen(DetailScreen(key, lines))

    def _detail_lines(self, key: str) -> list[Text] | None:
        refresh, view = self.latest, self.view
        if refresh is None or view is None:
            return None
        oid, database = rows.parse_row_key(key)
        snapshot = refresh.snapshot_of(database)
        found = None if snapshot is None else detail(snapshot, oid)
        if found is None:
            return None
        if database is not None:
            found = found.model_copy(update={"label": f"{database}:{found.label}"})
        return rows.detail_lines(found, table_row(view, key), view)


def table_row(view: LiveView, key: str) -> TableLive | None:
    """The relation of row ``key`` in the view's queue."""
    return next((t for t in view.tables if rows.row_key(t) == key), None)


def watch(fetch: Fetch, *, every_s: float, on_exit: Callable[[], object] | None = None) -> None:
    """Run the live view full screen until the user quits: ``fetch`` every ``every_s`` seconds
    in the refresher's thread, and ``on_exit`` in that thread once it stops."""
    WatchApp(fetch, every_s=every_s, on_exit=on_exit).run()
