"""Reading a toast run: the storage points by table (report order), the parallel points by
arm, and the statistics of a group of repetitions the sections and charts share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vacuumlab.records.toast import ParallelPoint, StoragePoint, toast_point
from vacuumlab.records.toast_spec import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    PAGE_BYTES,
    STORAGES,
    rel_metric,
    vacuum_metric,
    variant_label,
)
from vacuumlab.report.page import Obs, median, stat, typed
from vacuumlab.stats.aggregate import Spread, spread
from vacuumlab.store import Point

#: A table of the storage experiment: its storage and toast_tuple_target.
Variant = tuple[str, int]
#: One repetition: of a table (keyed by its variant) or of an arm (keyed by its name).
Rep = Obs[Any]

#: The timed steps of the storage experiment, in order.
STEP_METRICS = ("update_s", "vacuum_s", "freeze_updated_s", "freeze_vacuumed_s")


@dataclass(frozen=True, slots=True)
class Data:
    """The run's storage points by table (report order) and parallel points by arm."""

    storage: dict[Variant, list[Rep]]
    parallel: dict[str, list[Rep]]
    skipped: int


def _variant_key(variant: Variant) -> tuple[int, str, int, int]:
    storage, target = variant
    known: tuple[str, ...] = STORAGES
    rank = known.index(storage) if storage in known else len(known)
    return rank, storage, target != DEFAULT_TOAST_TUPLE_TARGET, target


def read(points: Sequence[Point]) -> Data:
    storage: dict[Variant, list[Rep]] = {}
    parallel: dict[str, list[Rep]] = {}
    skipped = 0
    for point in sorted(points, key=lambda p: p.repetition):
        p = typed(toast_point, point.params)
        if isinstance(p, StoragePoint):
            variant = (p.storage, p.toast_tuple_target)
            storage.setdefault(variant, []).append(Obs(variant, point.repetition, point.metrics))
        elif isinstance(p, ParallelPoint) and p.arm in ARMS:
            parallel.setdefault(p.arm, []).append(Obs(p.arm, point.repetition, point.metrics))
        else:
            skipped += 1
    ordered = {v: storage[v] for v in sorted(storage, key=_variant_key)}
    arms = {str(a): parallel[a] for a in ARMS if a in parallel}
    return Data(ordered, arms, skipped)


def label(variant: Variant) -> str:
    return variant_label(*variant)


# -- statistics ------------------------------------------------------------------------------


def total(group: Sequence[Rep], *names: str) -> Spread | None:
    """The spread of the metrics' sum (missing where any of them is)."""

    def summed(o: Rep) -> float | None:
        found = [o.get(n) for n in names]
        return None if any(v is None for v in found) else sum(v or 0.0 for v in found)

    return spread([summed(o) for o in group])


def share(part: Spread | None, whole: Spread | None) -> float | None:
    if part is None or whole is None or whole.median <= 0:
        return None
    return part.median / whole.median * 100


def rows_per_page(group: Sequence[Rep]) -> float | None:
    """Rows per heap page after loading: pg_class.relpages is still 0 then (VACUUM and
    ANALYZE set it), so the pages are the heap's size over 8 kB."""
    rows = median(stat(group, "heap_n_live_tup_loaded"))
    heap = median(stat(group, "heap_bytes_loaded"))
    return None if rows is None or not heap else rows / (heap / PAGE_BYTES)


def pages(group: Sequence[Rep], step: str, field: str) -> Spread | None:
    """A VACUUM step's page count, heap and TOAST together."""
    return total(group, vacuum_metric(step, "heap", field), vacuum_metric(step, "toast", field))


def frozen_share(group: Sequence[Rep], part: str) -> float | None:
    return share(
        stat(group, rel_metric(part, "relallfrozen", "vacuumed")),
        stat(group, rel_metric(part, "relpages", "vacuumed")),
    )
