"""A refresh as Prometheus metric families, named as Prometheus asks: base units in the name
(``_seconds``), ``_total`` on counters, help on every family, and labels from bounded sets.

Per relation the labels are ``database``, ``schema``, ``table`` and ``kind`` (``heap`` or
``toast``: a TOAST relation is vacuumed on its own thresholds); only the relations the view
holds are exported, and the view holds those its :class:`~vacuumlab.watch.view.Pick` wants
(some schemas, the first ``--max-tables`` in queue order, across the server with
``--all-databases``), so the series stay bounded however many tables there are. What the cap
hides shows in totals over every relation, per database: the dead tuples, the relations past
each threshold and the oldest relation's xid and mxid ages (``wraparound_table_age``).

Every series about one database says which in its ``database`` label, with one database as
with all of them (``--all-databases``), so one dashboard and one set of alerts serve both;
``database_up`` says which databases were read (0: listed, but the role may not connect, say).
What the server shares (workers, the cluster's wraparound ages, the horizon holders, the
counts of relations) has no ``database`` label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from vacuumlab.records.live import LiveView, TableLive, Wraparound

TABLE_LABELS = ("database", "schema", "table", "kind")

#: Per relation: name, help, value (None: no sample).
TABLE_GAUGES: tuple[tuple[str, str, Callable[[TableLive], float | None]], ...] = (
    ("table_dead_tuples", "Dead tuples (n_dead_tup).", lambda t: t.dead),
    (
        "table_vacuum_threshold_tuples",
        "Dead tuples past which autovacuum vacuums the relation: min(vacuum_max_threshold, "
        "vacuum_threshold + vacuum_scale_factor * reltuples), reloptions applied.",
        lambda t: t.vacuum_threshold,
    ),
    (
        "table_vacuum_threshold_ratio",
        "Dead tuples over the vacuum threshold: autovacuum takes the relation past 1.",
        lambda t: t.vacuum_progress,
    ),
    (
        "table_inserted_tuples",
        "Tuples inserted since the last vacuum (n_ins_since_vacuum).",
        lambda t: t.inserted,
    ),
    (
        "table_insert_threshold_tuples",
        "Inserts past which autovacuum vacuums the relation: vacuum_insert_threshold + "
        "vacuum_insert_scale_factor * reltuples (times the unfrozen share from 18); absent "
        "when insert-triggered vacuum is off.",
        lambda t: t.insert_threshold,
    ),
    (
        "table_insert_threshold_ratio",
        "Inserts since the last vacuum over the insert threshold: autovacuum takes the "
        "relation past 1.",
        lambda t: t.insert_progress,
    ),
    (
        "table_next_vacuum_seconds",
        "Seconds to the relation's next vacuum as vacuumlab's simulation of the launcher and "
        "workers predicts it; 0 while one runs; absent before two scrapes (rates) or when "
        "none is predicted within the simulated window.",
        lambda t: t.predicted_start_s,
    ),
    (
        "table_last_vacuum_duration_seconds",
        "How long the relation's last vacuum took, when known (total_vacuum_time on 18+, or "
        "a vacuum seen running by an earlier scrape).",
        lambda t: t.last_vacuum_s,
    ),
)


@dataclass(frozen=True, slots=True)
class Scrape:
    """What a scrape reports about itself."""

    up: bool
    seconds: float
    statements: int
    errors: int


def families(view: LiveView | None, scrape: Scrape) -> Iterator[Metric]:
    """Every family of one scrape; without a view, only whether the scrape worked."""
    yield from _scrape(scrape)
    if view is None:
        return
    yield from _databases(view)
    yield from _tables(view.tables, view.database)
    yield from _relations(view)
    yield from _database(view)
    yield from _workers(view)
    yield from _horizon(view)
    yield from _wraparound(view)


def _gauge(
    name: str, documentation: str, value: float, labels: dict[str, str] | None = None
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"vacuumlab_{name}", documentation, labels=list(labels or {}))
    family.add_metric(list((labels or {}).values()), value)
    return family


def _scrape(scrape: Scrape) -> Iterator[Metric]:
    yield _gauge("up", "1 when the last scrape read the server, 0 when it could not.", scrape.up)
    yield _gauge(
        "scrape_duration_seconds",
        "Wall time of the scrape: the snapshot and the view built from it.",
        scrape.seconds,
    )
    yield _gauge(
        "scrape_statements",
        "Statements the scrape sent: constant, whatever the number of tables (with "
        "--all-databases, one to list the databases and as many for each database read).",
        scrape.statements,
    )
    errors = CounterMetricFamily(
        "vacuumlab_scrape_errors", "Scrapes that could not read the server, since the start."
    )
    errors.add_metric([], scrape.errors)
    yield errors


def _databases(view: LiveView) -> Iterator[Metric]:
    """Which databases were read, and the server's version."""
    info = GaugeMetricFamily(
        "vacuumlab_server_info",
        "1, labelled with each database read and the server's version number.",
        labels=["database", "server_version_num"],
    )
    up = GaugeMetricFamily(
        "vacuumlab_database_up",
        "1 for each database the scrape read; 0 for one listed (--all-databases) that it "
        "could not: the role may not connect to it (GRANT CONNECT), its connection limit, or "
        "a read that failed. The exporter's stderr says why, once.",
        labels=["database"],
    )
    for counts in view.by_database():
        info.add_metric([counts.database, str(view.version_num)], 1)
        up.add_metric([counts.database], 1)
    for name in view.unread:
        up.add_metric([name], 0)
    yield info
    yield up


def _tables(chosen: list[TableLive], database: str) -> Iterator[Metric]:
    """Per-table series; a row that names no database is of the view's one (``database``)."""
    labelled = [(t, _labels(t, database)) for t in chosen]  # once, not once per family
    for name, documentation, value in TABLE_GAUGES:
        family = GaugeMetricFamily(f"vacuumlab_{name}", documentation, labels=TABLE_LABELS)
        for t, labels in labelled:
            found = value(t)
            if found is not None:
                family.add_metric(labels, found)
        yield family


def _labels(t: TableLive, database: str) -> list[str]:
    return [t.database or database, t.schema_name, t.table, "toast" if t.is_toast else "heap"]


def _relations(view: LiveView) -> Iterator[Metric]:
    yield _gauge(
        "relations",
        "Heap and TOAST relations in the database (in every database read, with --all-databases).",
        view.relations,
    )
    yield _gauge(
        "relations_exported",
        "Relations exported with per-table series (--max-tables and --schema bound them, "
        "across the server with --all-databases).",
        len(view.tables),
    )
    yield _gauge(
        "relations_due",
        "Relations autovacuum would vacuum now and no worker is vacuuming: the queue (of "
        "every database read, with --all-databases).",
        view.due,
    )


def _database(view: LiveView) -> Iterator[Metric]:
    """Totals over every relation of each database, those without series of their own too."""
    every = view.by_database()
    dead = GaugeMetricFamily(
        "vacuumlab_database_dead_tuples",
        "Dead tuples (n_dead_tup) summed over every heap and TOAST relation of the database, "
        "with per-table series or not.",
        labels=["database"],
    )
    for counts in every:
        dead.add_metric([counts.database], counts.dead_tuples)
    yield dead
    past = GaugeMetricFamily(
        "vacuumlab_database_relations_past_threshold",
        "Relations of the database past autovacuum's vacuum, insert or analyze threshold, "
        "with per-table series or not, whether autovacuum acts on them or not (a worker on "
        "them, autovacuum_enabled off); one past two thresholds counts under both.",
        labels=["database", "threshold"],
    )
    for counts in every:
        found = counts.past_threshold
        for threshold, count in (
            ("vacuum", found.vacuum),
            ("insert", found.insert),
            ("analyze", found.analyze),
        ):
            past.add_metric([counts.database, threshold], count)
    yield past


def _workers(view: LiveView) -> Iterator[Metric]:
    w = view.workers
    yield _gauge(
        "autovacuum_workers_busy", "Autovacuum workers vacuuming, in every database.", w.busy
    )
    yield _gauge(
        "autovacuum_workers_available",
        "Autovacuum workers that can run at once: min(autovacuum_max_workers, "
        "autovacuum_worker_slots).",
        w.available,
    )
    if w.cost_limit_each is not None:
        yield _gauge(
            "autovacuum_cost_limit_per_worker",
            "The cost limit each balanced worker gets: autovacuum's limit split between the "
            "workers that share it.",
            w.cost_limit_each,
        )


def _horizon(view: LiveView) -> Iterator[Metric]:
    """The oldest holder of the databases' horizon, per kind of holder (a bounded set)."""
    ages = GaugeMetricFamily(
        "vacuumlab_horizon_xid_age",
        "Age in transactions of the oldest horizon holder of each kind that holds the tables "
        "of the database read (any database read, with --all-databases) back: dead tuples "
        "newer than it cannot be removed.",
        labels=["kind"],
    )
    seconds = GaugeMetricFamily(
        "vacuumlab_horizon_age_seconds",
        "Seconds since the oldest holder of each kind began its transaction.",
        labels=["kind"],
    )
    for kind in sorted({h.kind for h in view.holders if h.holds_here}):
        mine = [h for h in view.holders if h.holds_here and h.kind == kind]
        ages.add_metric([kind], max(h.xid_age or 0 for h in mine))
        known = [h.age_s for h in mine if h.age_s is not None]
        if known:
            seconds.add_metric([kind], max(known))
    yield ages
    yield seconds


#: Per counter (xid, mxid): name, help, value (None: no sample).
WRAPAROUND: tuple[tuple[str, str, Callable[[Wraparound], float | None]], ...] = (
    (
        "age",
        "The cluster's oldest datfrozenxid (xid) or datminmxid (mxid) age.",
        lambda w: w.age,
    ),
    (
        "forcing_age",
        "The age past which autovacuum forces anti-wraparound vacuums: "
        "autovacuum_freeze_max_age or autovacuum_multixact_freeze_max_age.",
        lambda w: w.forcing_age,
    ),
    (
        "failsafe_age",
        "The age past which vacuum's failsafe stops throttling and index vacuuming: "
        "max(vacuum_(multixact_)failsafe_age, 1.05 * the forcing age); 14+.",
        lambda w: w.failsafe_age,
    ),
)


def _wraparound(view: LiveView) -> Iterator[Metric]:
    oldest = GaugeMetricFamily(
        "vacuumlab_wraparound_table_age",
        "The oldest relfrozenxid (xid) or relminmxid (mxid) age among the database's heap "
        "and TOAST relations, with per-table series or not.",
        labels=["database", "counter"],
    )
    for counts in view.by_database():
        for w in counts.wraparound:
            if w.table_age is not None:
                oldest.add_metric([counts.database, w.counter], w.table_age)
    yield oldest
    for suffix, documentation, value in WRAPAROUND:
        family = GaugeMetricFamily(
            f"vacuumlab_wraparound_{suffix}", documentation, labels=["counter"]
        )
        for w in view.wraparound:
            found = value(w)
            if found is not None:
                family.add_metric([w.counter], found)
        yield family
