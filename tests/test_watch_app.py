"""The terminal view's keys on records built here, through Textual's own harness (a headless
App driven by a pilot): sort, filter, pause, details, help, and the banner of a lost
connection. The real terminal and server are in test_watch_cli.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from helpers.advise import T0, changed, relation, snapshot, toast_of
from vacuumlab.records.live import Refresh
from vacuumlab.records.snapshot import Snapshot, Table, VacuumProgress
from vacuumlab.tui import WatchApp, rows
from vacuumlab.tui.screens import DetailScreen, HelpScreen
from vacuumlab.watch.view import live_view

SIZED = {"reltuples": 1000.0, "relpages": 10, "n_live_tup": 1000}
SIZE = (200, 50)


def table(oid: int, name: str, schema: str = "public", **fields: Any) -> Table:
    return Table(heap=relation(oid, name, schema_name=schema, **(SIZED | fields)), toast=None)


def running(relid: int) -> VacuumProgress:
    return VacuumProgress(
        pid=4242,
        database="app",
        relid=relid,
        relation=None,
        is_autovacuum=True,
        phase="vacuuming indexes",
        started=T0,
        heap_blks_total=1000,
        heap_blks_scanned=600,
        heap_blks_vacuumed=300,
        index_vacuum_count=1,
        dead_tuples=5000,
        indexes_total=2,
        indexes_processed=1,
        delay_time_ms=20_000.0,
    )


def pair() -> tuple[Snapshot, Snapshot]:
    """A minute apart: app.jobs being vacuumed; public.orders due; public.events and
    app.sessions gathering dead tuples at different rates; public.quiet idle."""
    before = [
        table(10, "jobs", "app", n_dead_tup=100),
        table(20, "orders", n_dead_tup=400),
        table(30, "events", n_dead_tup=10),
        table(40, "sessions", "app", n_dead_tup=0),
        table(50, "quiet", n_dead_tup=100),
    ]
    after = [
        table(10, "jobs", "app", n_dead_tup=700),
        table(20, "orders", n_dead_tup=900),
        table(30, "events", n_dead_tup=130),  # 2 a second
        table(40, "sessions", "app", n_dead_tup=60),  # 1 a second
        table(50, "quiet", n_dead_tup=100),
    ]
    return snapshot(*before), snapshot(*after, seconds=60, vacuums=(running(10),))


def refresh_of(first: Snapshot, second: Snapshot, error: str | None = None) -> Refresh:
    return Refresh(live_view(first, second), error, 0.05, 12, second)


def run(test: Callable[[WatchApp, Pilot[None]], Awaitable[None]], app: WatchApp) -> None:
    async def go() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await test(app, pilot)

    asyncio.run(go())


def labels(app: WatchApp, name: str = "queue") -> list[str]:
    table = app.query_one(f"#{name}", DataTable)
    return [str(table.get_row_at(i)[0 if name == "queue" else 1]) for i in range(table.row_count)]


def text_of(app: WatchApp, widget: str) -> str:
    content = app.query_one(widget, Static).render()
    return content.plain if isinstance(content, Text) else str(content)


def shown(app: WatchApp, pilot: Pilot[None]) -> Awaitable[None]:
    app.show(refresh_of(*pair()))
    return pilot.pause()


def test_the_queue_is_in_autovacuums_order_and_s_cycles_the_sort_column() -> None:
    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        await shown(app, pilot)
        assert labels(app) == [
            "app.jobs",  # being vacuumed
            "public.orders",  # due
            "public.events",  # then by predicted start
            "app.sessions",
            "public.quiet",
        ]
        await pilot.press("s")
        assert "sort: progress to threshold" in text_of(app, "#status")
        assert labels(app)[:2] == ["public.orders", "app.jobs"]  # 900 and 700 of 250
        await pilot.press("s")
        assert "sort: dead tuples" in text_of(app, "#status")
        assert labels(app) == [
            "public.orders",
            "app.jobs",
            "public.events",
            "public.quiet",
            "app.sessions",
        ]
        await pilot.press("s", "s")  # dead tuples/s, predicted start
        await pilot.press("s")
        assert "sort: name" in text_of(app, "#status")
        assert labels(app) == sorted(labels(app))
        await pilot.press("s")
        assert "sort: autovacuum's order" in text_of(app, "#status")
        assert labels(app)[0] == "app.jobs"

    run(test, WatchApp(None))


def test_slash_filters_by_schema_or_table_name_and_escape_clears_it() -> None:
    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        await shown(app, pilot)
        await pilot.press("slash", "a", "p", "p", ".")
        assert labels(app) == ["app.jobs", "app.sessions"]
        assert labels(app, "vacuums") == ["app.jobs"]
        await pilot.press("enter")  # keeps the filter, back to the queue
        assert "filter: app." in text_of(app, "#status")
        assert app.query_one("#queue", DataTable).has_focus
        await pilot.press("slash", "backspace", "backspace", "backspace", "backspace")
        await pilot.press("O", "R", "D")  # case-insensitive
        assert labels(app) == ["public.orders"]
        assert labels(app, "vacuums") == []
        assert "1 relation match 'ORD' (of 5)" in str(app.query_one("#queue").border_title)
        await pilot.press("escape")  # leaves the field
        await pilot.press("escape")  # clears the filter
        assert len(labels(app)) == 5
        assert "filter" not in text_of(app, "#status")

    run(test, WatchApp(None))


def test_enter_shows_the_selected_tables_thresholds_settings_and_last_vacuums() -> None:
    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        await shown(app, pilot)
        await pilot.press("down", "enter")  # public.orders
        assert isinstance(app.screen, DetailScreen)
        body = text_of(app.screen, "#detail-body")  # type: ignore[arg-type]
        assert body.startswith("public.orders")
        assert "900 dead of 250 = min(100.0M, 50 + 0.2 × 1,000)" in body
        assert "state due" in body
        assert "autovacuum_vacuum_scale_factor" in body
        assert "Last vacuums" in body
        await pilot.press("escape")
        assert not isinstance(app.screen, DetailScreen)

    run(test, WatchApp(None))


def test_question_mark_opens_the_help_and_q_quits() -> None:
    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        await shown(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running

    run(test, WatchApp(None))


def test_a_lost_connection_shows_a_banner_over_the_last_view_until_a_refresh_works() -> None:
    first, second = pair()
    good = refresh_of(first, second)
    lost = Refresh(None, "cannot connect to postgresql://db: connection refused", 5.0, 0)

    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        app.show(good)
        app.show(lost)
        await pilot.pause()
        banner = app.query_one("#banner", Static)
        assert banner.display
        assert text_of(app, "#banner").startswith(
            "connection lost: cannot connect to postgresql://db: connection refused"
            " · retrying every 2 s"
        )
        assert len(labels(app)) == 5  # the last view stays
        app.show(good)
        await pilot.pause()
        assert not banner.display

    run(test, WatchApp(None))


class Counting:
    """A fetch that hands out the same refresh and counts the calls."""

    def __init__(self, refresh: Refresh) -> None:
        self.refresh = refresh
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> Refresh:
        with self.lock:
            self.calls += 1
        return self.refresh


def test_p_and_space_pause_the_refreshes_and_resume_them() -> None:
    fetch = Counting(refresh_of(*pair()))

    async def calls_after(pilot: Pilot[None], seconds: float) -> int:
        before = fetch.calls
        await pilot.pause(seconds)
        return fetch.calls - before

    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        assert await calls_after(pilot, 0.5) >= 3  # every 0.05 s
        await pilot.press("p")
        await pilot.pause(0.1)  # one under way may still end
        assert await calls_after(pilot, 0.5) == 0
        assert "PAUSED" in text_of(app, "#status")
        await pilot.press("space")
        assert await calls_after(pilot, 0.5) >= 3
        assert "PAUSED" not in text_of(app, "#status")
        await pilot.press("space")
        await pilot.pause(0.1)
        assert await calls_after(pilot, 0.3) == 0

    started = time.monotonic()
    run(test, WatchApp(fetch, every_s=0.05))
    assert time.monotonic() - started < 20


def test_the_refresher_closes_what_it_used_in_its_own_thread() -> None:
    closed: list[str] = []
    fetch = Counting(refresh_of(*pair()))

    async def test(app: WatchApp, pilot: Pilot[None]) -> None:
        await pilot.pause(0.2)
        await pilot.press("q")

    app = WatchApp(
        fetch, every_s=0.05, on_exit=lambda: closed.append(threading.current_thread().name)
    )
    run(test, app)
    assert closed == ["vacuumlab-watch"]


# -- rows, on records ---------------------------------------------------------------------------


def test_each_sort_column_comes_once_then_autovacuums_order_again() -> None:
    query, seen = rows.Query(), []
    for _ in range(len(rows.Sort)):
        seen.append(query.sort)
        query = query.next_sort()
    assert seen == list(rows.Sort)
    assert query.sort is rows.Sort.queue


def test_the_queue_panel_lists_at_most_its_limit_and_counts_the_matches() -> None:
    view = live_view(*pair())
    shown_rows, matched = rows.queue(view, rows.Query(text="PUBLIC."), limit=2)
    assert [t.label for t in shown_rows] == ["public.orders", "public.events"]
    assert matched == 3


def test_bars_fill_to_an_eighth_and_turn_red_past_the_threshold() -> None:
    assert rows.bar(0.0, width=4).plain == "····"
    assert rows.bar(0.5, width=4).plain == "██··"
    assert rows.bar(1 / 32, width=4).plain == "▏···"
    full = rows.bar(2.5, width=4)
    assert full.plain == "████"
    assert "red" in str(full.style)


def test_a_running_vacuum_reads_as_its_progress_delay_and_passes() -> None:
    view = live_view(*pair())
    cells = [c.plain if isinstance(c, Text) else c for c in rows.vacuum_cells(view.vacuums[0])]
    assert cells[:4] == ["4242", "app.jobs", "autovacuum", "vacuuming indexes"]
    assert cells[4] == "████▒▒▒····· " + " 60%"
    assert cells[5:9] == ["30%", "600 / 1,000", "1 (1/2 indexes)", "5,000"]
    assert cells[10] == "20 s (33%)"  # 20 s asleep in 60 s


def test_a_table_without_rates_says_so_and_one_past_the_window_says_how_far() -> None:
    first, second = pair()
    alone = live_view(None, second)
    quiet = next(t for t in alone.tables if t.label == "public.quiet")
    assert rows.starts_in(quiet, alone) == rows.DASH
    view = live_view(first, second)
    quiet = next(t for t in view.tables if t.label == "public.quiet")
    assert rows.starts_in(quiet, view) == "> 60.0 min"


def test_toast_relation_details_use_its_own_options_or_else_its_tables() -> None:
    from vacuumlab.watch.detail import detail

    heap = relation(60, "docs", reloptions={"autovacuum_vacuum_scale_factor": "0.01"}, **SIZED)
    plain = toast_of(heap, 61, **SIZED)
    own = changed(plain, reloptions={"autovacuum_vacuum_threshold": "500"})
    for toast, threshold, factor in ((plain, "50", "0.01"), (own, "500", "0.2")):
        found = detail(snapshot(Table(heap=heap, toast=toast)), 61)
        assert found is not None
        assert found.label == "public.docs (TOAST)"
        applied = {s.name: (s.value, s.source) for s in found.settings}
        assert applied["autovacuum_vacuum_threshold"][0] == threshold
        assert applied["autovacuum_vacuum_scale_factor"][0] == factor
        assert "autovacuum_analyze_threshold" not in applied  # never analysed
    found = detail(snapshot(Table(heap=heap, toast=own)), 61)
    assert found is not None
    sources = {s.name: s.source for s in found.settings}
    assert sources["autovacuum_vacuum_threshold"] == "table"
    assert sources["autovacuum_vacuum_scale_factor"] == "server"
    assert found.vacuum_threshold == 500 + 0.2 * 1000


def test_details_of_a_relation_the_snapshot_lacks_are_none() -> None:
    from vacuumlab.watch.detail import detail

    assert detail(snapshot(table(1, "a")), 2) is None
