"""Past QUIET_FROM tables the live view counts its quiet relations instead of ranking them:
the rest of the view (counts, dead tuples, relations past each threshold, the oldest ages, the
queue's order) is what ranking every relation gives."""

from __future__ import annotations

import pytest

from helpers.advise import autovacuum, changed, relation, snapshot, toast_of
from vacuumlab.records.live import LiveView
from vacuumlab.records.snapshot import Snapshot, Table, XidState
from vacuumlab.records.watch_spec import view_metrics
from vacuumlab.tui.rows import Query, queue_title
from vacuumlab.watch import quiet, view
from vacuumlab.watch.view import Pick, live_view

SIZED = {"reltuples": 10_000.0, "relpages": 100, "n_live_tup": 10_000, "frozenxid_age": 1_000}


def _pair() -> tuple[Snapshot, Snapshot]:
    """A minute apart: 300 idle tables with TOAST relations, one of them the oldest of all
    (still far from its limit); beside them a table vacuumed now, one due, one gathering dead
    tuples, one whose options alone make it ranked, one idle now but written between the two
    snapshots, and one idle but for its TOAST relation."""
    idle = []
    for n in range(300):
        heap = relation(10_000 + 2 * n, f"idle_{n:03}", **SIZED)
        age = 30_000_000 if n == 150 else 1_000 + n
        idle.append(
            Table(heap=changed(heap, frozenxid_age=age), toast=toast_of(heap, 20_001 + 2 * n))
        )
    busy, due = relation(100, "busy", **SIZED), relation(110, "due", **SIZED)
    gathering = relation(120, "gathering", **SIZED)
    options = relation(130, "options", **SIZED, reloptions={"fillfactor": "90"})
    written = relation(140, "written", **SIZED)
    owner = relation(150, "owner", **SIZED)
    first = [Table(heap=r, toast=None) for r in (busy, due, gathering, options, written)]
    first += [Table(heap=owner, toast=toast_of(owner, 151)), *idle]
    now = [
        Table(heap=changed(busy, n_dead_tup=800), toast=None),
        Table(heap=changed(due, n_dead_tup=5_000), toast=None),
        Table(heap=changed(gathering, n_dead_tup=200), toast=None),
        Table(heap=options, toast=None),
        Table(heap=changed(written, n_tup_ins=10_500, n_live_tup=10_500), toast=None),
        Table(heap=owner, toast=toast_of(owner, 151, n_dead_tup=40)),
        *idle,
    ]
    return snapshot(*first), snapshot(*now, seconds=60, vacuums=(autovacuum(100),))


def _both(pick: Pick, monkeypatch: pytest.MonkeyPatch) -> tuple[LiveView, LiveView]:
    """The view with every relation ranked, and with the quiet ones counted."""
    whole = live_view(*_pair(), pick=pick)
    monkeypatch.setattr(view, "QUIET_FROM", 0)
    return whole, live_view(*_pair(), pick=pick)


@pytest.mark.parametrize("limit", [None, 5])
def test_quiet_relations_are_counted_and_the_rest_is_unchanged(
    monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    whole, counted = _both(Pick(limit=limit), monkeypatch)
    assert whole.quiet == 0
    assert counted.quiet == 600  # the 300 idle tables' heaps and TOAST relations
    for field in ("relations", "due", "dead_tuples", "past_threshold", "wraparound", "workers"):
        assert getattr(counted, field) == getattr(whole, field), field
    oldest = next(w for w in counted.wraparound if w.counter == "xid")
    assert oldest.table == "public.idle_150"  # a quiet relation can be the oldest
    ranked = {t.label for t in counted.tables}
    assert not any(label.startswith("public.idle_") for label in ranked)
    # The rows are the whole view's rows of the ranked relations, in the same order.
    expected = [t for t in whole.tables if t.label in ranked]
    assert counted.tables == expected[: len(counted.tables)]
    if limit is None:
        assert ranked == {
            "public.busy", "public.due", "public.gathering", "public.options",
            "public.written", "public.owner", "public.owner (TOAST)",
        }  # fmt: skip
    else:
        assert len(counted.tables) == limit


def test_a_relation_near_its_freeze_limit_within_the_horizon_is_ranked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ages that the horizon's transactions carry past the freeze limit are not quiet."""
    before, after = _pair()
    limit = 200_000_000
    rate = 30_000_000 / 60  # 30M transaction ids a minute: 1.8 billion within the horizon
    before = before.model_copy(update={"xids": XidState(next_xid=1_000)})
    faster = after.model_copy(update={"xids": XidState(next_xid=1_000 + 30_000_000)})
    monkeypatch.setattr(view, "QUIET_FROM", 0)
    counted = live_view(before, faster)
    assert rate * view.HORIZON_S > limit
    assert counted.quiet == 0  # every age reaches the limit within the horizon
    assert quiet.QUIET_FROM == 10_000


def test_the_terminal_says_how_many_relations_are_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    whole, counted = _both(Pick(), monkeypatch)
    title = queue_title(len(counted.tables), len(counted.tables), counted, Query())
    assert (
        title == "Queue: 7 relations; 600 quiet, not listed (nothing moves them toward autovacuum)"
    )
    assert "quiet" not in queue_title(len(whole.tables), len(whole.tables), whole, Query())


def test_a_recorded_refresh_counts_every_relation(monkeypatch: pytest.MonkeyPatch) -> None:
    """watch --record keeps the view's counts, not the rows': quiet relations have none."""
    whole, counted = _both(Pick(), monkeypatch)
    for v in (whole, counted):
        recorded = view_metrics(v, seconds=1.0, statements=15)
        assert (recorded["relations"], recorded["due"]) == (whole.relations, whole.due)
    assert counted.relations == 7 + 600
