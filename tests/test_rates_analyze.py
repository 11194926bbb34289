"""Rates across an ANALYZE: pgstat_report_analyze() (pgstat_relation.c) overwrites n_dead_tup
and n_live_tup with its own estimates, as a vacuum does with its counts, so their growth over
an interval with an ANALYZE in it is no rate."""

from __future__ import annotations

from datetime import timedelta

import pytest

from helpers.advise import T0, changed, relation
from vacuumlab.model import rates
from vacuumlab.watch.view import _gathering

LATER = T0 + timedelta(seconds=20)
#: 20 s of 300 non-HOT updates a second before an ANALYZE counted 4,000 dead tuples of the
#: 7,000 there were (it read for 10 s while the updates went on behind it) and 20 s more went by.
BEFORE = relation(
    1, "t", n_dead_tup=1_000, n_live_tup=10_000, n_tup_upd=0, n_tup_hot_upd=0, n_tup_ins=0,
    n_tup_del=0, analyze_count=3, autoanalyze_count=0,
)  # fmt: skip


@pytest.mark.parametrize("counter", ["analyze_count", "autoanalyze_count"])
def test_an_analyze_in_between_is_treated_as_an_overwrite(counter: str) -> None:
    after = changed(
        BEFORE,
        n_dead_tup=4_000 + 300 * 8,
        n_tup_upd=6_000,
        **{counter: getattr(BEFORE, counter) + 1},
        **{"last_analyze" if counter == "analyze_count" else "last_autoanalyze": LATER
           - timedelta(seconds=8)},
    )  # fmt: skip
    found = rates.between(BEFORE, after, 20.0, LATER)
    assert found is not None
    # Not (6,400 - 1,000) / 20 = 270/s, nor the count since the ANALYZE ended (6,400 / 8 s):
    # it started from the ANALYZE's estimate of every dead tuple, not from 0.
    assert found.dead_per_second == 300.0
    assert found.dead_source == (
        "non-HOT updates and deletes over the interval (an ANALYZE in between)"
    )


def test_an_analyze_after_a_vacuum_still_counts_from_the_vacuum() -> None:
    """A vacuum ended 10 s before the later snapshot, an ANALYZE 4 s before: the ANALYZE's
    estimate counts the dead tuples since the vacuum, so the count is taken from there."""
    after = changed(
        BEFORE,
        n_dead_tup=5_000,
        n_tup_upd=6_000,
        autovacuum_count=1,
        last_autovacuum=LATER - timedelta(seconds=10),
        autoanalyze_count=1,
        last_autoanalyze=LATER - timedelta(seconds=4),
    )
    found = rates.between(BEFORE, after, 20.0, LATER)
    assert found is not None
    assert (found.dead_per_second, found.dead_source) == (
        500.0,
        "n_dead_tup since the vacuum in between",
    )


def test_live_tuples_across_an_overwrite_are_inserts_less_deletes() -> None:
    """The ANALYZE estimated 9,000 live rows where 10,000 were: n_live_tup fell, though 600
    rows came in and 200 went."""
    after = changed(
        BEFORE, n_live_tup=9_100, n_tup_ins=600, n_tup_del=200, analyze_count=4, n_dead_tup=900
    )
    found = rates.between(BEFORE, after, 20.0, LATER)
    assert found is not None
    assert found.live_per_second == (600 - 200) / 20.0
    steady = changed(BEFORE, n_live_tup=10_400, n_tup_ins=600, n_tup_del=200)
    found = rates.between(BEFORE, steady, 20.0, LATER)
    assert found is not None
    assert found.live_per_second == 400 / 20.0


def test_an_analyze_alone_is_no_still_relation() -> None:
    """n_dead_tup and n_tup_ins as they were, but an ANALYZE in between: the shortcut for
    untouched relations (rates.between(), the live view's _gathering()) must not take it."""
    after = changed(BEFORE, n_tup_upd=6_000, autoanalyze_count=1)
    assert not rates.still(BEFORE, after)
    found = rates.between(BEFORE, after, 20.0, LATER)
    assert found is not None
    assert found.dead_per_second == 300.0
    assert _gathering(BEFORE, after, 20.0, LATER)
