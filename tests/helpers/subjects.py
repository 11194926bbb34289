"""The simulator's inputs built by hand: a relation (Subject) and the launcher."""

from __future__ import annotations

from vacuumlab.model.simulator import Launcher, Subject


def subject(order: int, name: str = "t", **fields: object) -> Subject:
    """A 1,000-row table of 10 pages, ``public.<name><order>``: threshold 50 + 0.2 × 1,000 =
    250 dead tuples; no page all-visible, so its first vacuum reads them all."""
    values: dict[str, object] = {
        "label": f"public.{name}{order}",
        "is_toast": False,
        "order": order,
        "enabled": True,
        "vacuum_base": 50.0,
        "vacuum_scale": 0.2,
        "vacuum_cap": None,
        "insert_base": None,
        "insert_scale": 0.2,
        "unfrozen": 1.0,
        "reltuples": 1000.0,
        "live_per_second": 0.0,
        "dead": 0.0,
        "dead_per_second": 0.0,
        "inserted": 0.0,
        "inserts_per_second": 0.0,
        "xid_age": 1000.0,
        "xid_limit": 200_000_000.0,
        "aggressive_age": 150_000_000.0,
        "freeze_min_age": 50_000_000.0,
        "failsafe_age": 1_600_000_000.0,
        "pages": 10.0,
        "all_visible": 0.0,
        "index_pages": 0.0,
        "n_indexes": 0,
        "page_hit": 1.0,
        "page_dirty": 20.0,
    }
    values.update(fields)
    return Subject(**values)  # type: ignore[arg-type]


def launcher(**fields: object) -> Launcher:
    """A launcher of 3 workers, a naptime of 60 s, its first launch at 0."""
    values: dict[str, object] = {"naptime_s": 60.0, "workers": 3, "first_launch_s": 0.0}
    values.update(fields)
    return Launcher(**values)  # type: ignore[arg-type]
