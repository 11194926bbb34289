"""The rates of a relation nothing touched between two snapshots: a shortcut (most relations of
a refresh are such) that must give what the general computation gives."""

from __future__ import annotations

from datetime import timedelta

import pytest

from helpers.advise import T0, changed, relation
from vacuumlab.model import rates

LATER = T0 + timedelta(seconds=10)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"n_dead_tup": 40, "n_tup_ins": 7, "n_tup_upd": 3, "vacuum_count": 2},
        {"n_dead_tup": 40, "last_autovacuum": T0 - timedelta(seconds=1), "autovacuum_count": 1},
    ],
)
def test_untouched_relations_get_the_general_answer(fields: dict[str, object]) -> None:
    before = changed(relation(1, "t"), **fields)
    after = changed(before, n_mod_since_analyze=5)  # not a counter the rates read
    still = rates.between(before, after, 10.0, LATER)
    # What the general computation gives: no growth of n_dead_tup nor n_tup_ins, no vacuum.
    assert still == rates.Rates(
        dead_per_second=0.0, inserts_per_second=0.0, dead_source="n_dead_tup", live_per_second=0.0
    )
    assert rates._dead_rate(before, after, 10.0, LATER) == (0.0, "n_dead_tup")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"n_dead_tup": 50}, (5.0, 0.0)),
        ({"n_tup_ins": 30}, (0.0, 3.0)),
        ({"n_dead_tup": None}, (None, 0.0)),
        ({"n_tup_ins": None}, (0.0, None)),
    ],
)
def test_a_change_to_what_the_shortcut_reads_takes_the_general_way(
    fields: dict[str, object], expected: tuple[float | None, float | None]
) -> None:
    before = relation(1, "t")
    found = rates.between(before, changed(before, **fields), 10.0, LATER)
    assert found is not None
    assert (found.dead_per_second, found.inserts_per_second) == expected


def test_a_vacuum_in_between_is_no_still_relation() -> None:
    before = changed(relation(1, "t"), n_dead_tup=100, n_tup_del=100)
    after = changed(before, vacuum_count=1, last_vacuum=LATER - timedelta(seconds=8))
    found = rates.between(before, after, 10.0, LATER)
    assert found is not None
    # n_dead_tup unchanged, but a vacuum ended 8 s ago: its 100 dead tuples came since.
    assert found.dead_source == "n_dead_tup since the vacuum in between"
    assert found.dead_per_second == pytest.approx(100 / 8)
