"""A captured workload profile as the simulator's input: two synthetic snapshots, the
profile's window apart, that ``model.forecast`` reads back as each captured table's shape,
rates and settings.

``vacuumlab capture`` keeps no snapshot: a table's shape (rows, pages, bytes, reloptions), its
counters' rates over the window and the server's settings. :func:`snapshots` writes them as
two snapshots whose difference ``model.rates`` turns back into those rates, so that the
simulator, the what-ifs (``model.whatif``) and the tuner run on a profile exactly as on a
server. Build them once per profile: each what-if is then :func:`inputs` (``forecast.inputs()``
with the launcher's phase the start state implies), a fraction of a millisecond for a few
tables; the simulation of a day costs about 10 µs per vacuum it holds.

**The state at the start of the window** is the one a vacuum leaves, as if one had just
ended: no dead tuple counted, no insert since the vacuum, every page all-visible, relfrozenxid
and relminmxid young (age 0). A profile does not say where in its vacuum cycle a table stood;
this is the one state whose counters, visibility map and freeze ages agree with each other
(a vacuum sets all of them), it favours no candidate of the tuner over another, and it
invents no wraparound vacuum. The launcher that sent that vacuum comes back one launch
interval later (:func:`inputs`). Only the first cycle of a forecast depends on it: a peak over
a day is that of the cycles that follow. pg_class.relallfrozen (18+) is taken as 0: the
insert threshold's scale term is then not cut (a frozen share would lower it).

**The TOAST relation** of a table with TOAST bytes is simulated too, with its size and its
own reloptions (``toast.*``): it needs a worker when it is forced for wraparound, and
``--set schema.table.toast.setting=value`` then works as on a server. Its rates are taken as
0: capture reads the heap's counters only (a TOAST relation's dead chunks are not in them),
so it never passes a dead-tuple or insert threshold in the forecast.

**A partitioned table** is simulated as one table of its partitions' summed rows, bytes and
rates; autovacuum vacuums each partition against its own thresholds, which a profile does not
split.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal

from vacuumlab.errors import VacuumlabError
from vacuumlab.model import forecast as fc
from vacuumlab.model import knobs, whatif
from vacuumlab.records import profile as pr
from vacuumlab.records.simulation import Simulation
from vacuumlab.records.snapshot import (
    Database,
    Relation,
    ServerInfo,
    Setting,
    Snapshot,
    Table,
    XidState,
)

#: The first oid a user's object gets (FirstNormalObjectId in transam.h): the synthetic
#: relations are numbered from here, a heap and its TOAST relation side by side.
FIRST_OID = 16384
#: The synthetic next xid at the start of the window; only differences are read.
FIRST_XID = 10_000_000
#: TOAST chunks per page (EXTERN_TUPLES_PER_PAGE in heaptoast.h, 8 kB pages): a TOAST
#: relation's reltuples, which a profile does not hold, from its pages.
CHUNKS_PER_PAGE = 4
#: What a forecast from a profile takes as given, besides forecast.ASSUMPTIONS.
ASSUMPTIONS = (
    "from a captured profile: each table starts as a vacuum leaves it (no dead tuples, every "
    "page all-visible, relfrozenxid young), the launcher's next worker one interval away",
    "dead tuples accrue at the non-HOT updates and deletes the capture counted (pruning takes "
    "HOT versions back, not these), or at the net growth of n_dead_tup when that was more and "
    "no autoanalyze overwrote it",
    "TOAST relations are sized but get no dead tuples or inserts: capture counts the heap only",
)
#: Statement kinds that take a transaction id: a plain SELECT runs without one (an xid is
#: assigned at the first write or row lock, GetCurrentTransactionId() from heap_insert(),
#: heap_update(), heap_delete(), heap_lock_tuple()); ``other`` is MERGE and the like.
_WRITES = frozenset({"insert", "update", "delete", "select_for_update", "other"})


def snapshots(profile: pr.Profile) -> tuple[Snapshot, Snapshot]:
    """Two snapshots ``profile.seconds`` apart from which ``forecast.inputs()`` simulates each
    captured table with its shape, its rates and its settings (the profile's server settings,
    the stock values of its server version for the rest, and the table's reloptions)."""
    seconds = profile.seconds
    if seconds <= 0:
        raise VacuumlabError("the profile's window is empty: capture it again with --for")
    start = profile.captured_at
    end = start + timedelta(seconds=seconds)
    server = _server(profile)
    settings = settings_of(profile)
    befores: list[Table] = []
    afters: list[Table] = []
    for position, captured in enumerate(profile.tables):
        before, after = _table(captured, position, seconds, end, profile)
        befores.append(before)
        afters.append(after)
    databases = [
        Database(name=server.database, frozenxid_age=0, minmxid_age=0, allow_connections=True)
    ]
    xids = round(xid_rate(profile) * seconds)
    first, second = (
        Snapshot(
            vacuumlab_version=profile.vacuumlab_version,
            taken_at=at,
            server=server,
            settings=settings,
            tables=tables,
            xids=XidState(next_xid=FIRST_XID + used),
            databases=databases,
            workers=[],
        )
        for at, tables, used in ((start, befores, 0), (end, afters, xids))
    )
    return first, second


def inputs(
    before: Snapshot, after: Snapshot, changes: list[whatif.Change] | None = None
) -> fc.Inputs:
    """``forecast.inputs()`` of :func:`snapshots`, with the launcher's first worker a whole
    launch interval into the window rather than half of one.

    forecast.inputs() knows nothing of the launcher's phase and takes the middle of an
    interval. Here the window starts as a vacuum ends, sent by the launcher's last visit to
    the database: its next visit is one interval later (launch_worker() in autovacuum.c
    sets the database's adl_next_worker naptime after the launch). Half an
    interval would be a phase no steady cycle has: a table that passes its threshold
    between half and one interval in would wait one and a half for its first worker, and
    its first peak would be half again the steady one, for some candidates and not others
    (at naptime 10 s, a queue of 50,000 rows at 1,200 dead tuples a second peaks at 18,000
    with scale factor 0.2 and at 12,000 with 0.01; from the phase here at 12,000 with
    both, as a server measured). The same cost as forecast.inputs(): build the snapshots
    once and call this once per candidate."""
    given = fc.inputs(before, after, changes)
    launcher = replace(given.launcher, first_launch_s=given.launcher.launch_every_s)
    return replace(given, launcher=launcher)


def forecast_profile(
    profile: pr.Profile,
    *,
    hours: float,
    changes: list[whatif.Change] | None = None,
    built: tuple[Snapshot, Snapshot] | None = None,
) -> Simulation:
    """The autovacuums of the profile's tables over ``hours``, with ``changes`` made; the
    record says it came from a profile. ``built`` reuses :func:`snapshots` of it."""
    if hours <= 0:
        raise VacuumlabError("--hours must be positive")
    changes = changes or []
    captured = {t.shape.qualified for t in profile.tables}
    for change in changes:
        if change.table is not None and change.table not in captured:
            raise VacuumlabError(f"--set: the profile holds no table {change.table}")
    before, after = built if built is not None else snapshots(profile)
    given = inputs(before, after, changes)
    sim = fc.to_record(fc.run(given, hours), given, after, hours=hours, changes=changes)
    return sim.model_copy(update={"assumptions": [*ASSUMPTIONS, *sim.assumptions]})


def dead_rate(rates: pr.Rates) -> float:
    """Dead tuples a second that only a vacuum removes: what the simulator's n_dead_tup grows
    by between vacuums.

    ``rates.dead_tuples`` is the *net* change of n_dead_tup over the window, which a vacuum
    (pgstat_report_vacuum() sets it to what the vacuum left) or an ANALYZE
    (pgstat_report_analyze() sets it to its sample's estimate) in the window lowers or moves
    at will (pgstat_relation.c). model.rates reads two real snapshots the same way: the net
    growth when nothing overwrote n_dead_tup, else the non-HOT updates and deletes of the
    interval. Those are a floor whatever happened: a committed update or delete adds one dead
    tuple (AtEOXact_PgStat_Relations()), and pruning, which lowers n_dead_tup between
    vacuums, takes back only ``ndeleted - nnewlpdead`` (pgstat_update_heap_dead_tuples()
    from heap_page_prune_and_freeze()): a non-HOT update's or a delete's old version stays
    counted as an LP_DEAD item until a vacuum; a HOT version pruning removes outright. So:

    - no autoanalyze in the window: the larger of the net growth and that floor. Without an
      autovacuum the net growth is what the table did, HOT versions not yet pruned included;
      with one, what the vacuums lowered it to, still at least as much as was produced after
      them. A net growth below the floor means something the profile does not count (a manual
      VACUUM or ANALYZE) overwrote it;
    - an autoanalyze in the window: the floor alone, as model.rates across an ANALYZE.

    ``updates + deletes`` would be the ceiling: on a HOT-heavy table it overstates what a
    vacuum finds, since pruning removes HOT versions first.
    """
    floor = max(rates.updates - rates.hot_updates, 0.0) + rates.deletes
    if rates.autoanalyzes:
        return floor
    return max(rates.dead_tuples, floor)


def xid_rate(profile: pr.Profile) -> float:
    """Transaction ids a second: the calls of the captured statements that take one (each a
    transaction of its own: too many where several share one), or when none was seen, every
    row the captured tables' counters saw inserted, updated or deleted (too many as well
    where a transaction changes several). Other tables' transactions are not seen: too few
    for a server that runs more than the captured workload."""
    calls = sum(s.calls_per_s for s in profile.statements if s.kind in _WRITES)
    if calls > 0:
        return calls
    return sum(t.rates.inserts + t.rates.updates + t.rates.deletes for t in profile.tables)


def settings_of(profile: pr.Profile) -> list[Setting]:
    """The profile's server settings, and for every setting it does not carry the stock value
    of its server version (knobs.stock_settings()), as pg_settings rows: the type, unit and
    context from model.knobs where it knows the setting."""
    version = profile.server_version_num
    found = {
        name: _setting(name, value, None, "default", version)
        for name, value in knobs.stock_settings(version).items()
    }
    for s in profile.settings:
        found[s.name] = _setting(s.name, s.setting, s.unit, s.source, version)
    return list(found.values())


def _setting(name: str, value: str, unit: str | None, source: str, version: int) -> Setting:
    known = knobs.KNOBS.get(name)
    return Setting(
        name=name,
        setting=value,
        unit=unit if unit is not None or known is None else known.unit,
        vartype="string" if known is None else known.vartype,
        source=source,
        context="postmaster" if known is not None and known.needs_restart(version) else "sighup",
        pending_restart=False,
    )


def _server(profile: pr.Profile) -> ServerInfo:
    number = profile.server_version_num
    return ServerInfo(
        version_num=number,
        version=f"PostgreSQL {number // 10000}.{number % 100} (a captured profile)",
        database="captured profile",
        user="",
        is_superuser=False,
        in_recovery=False,
        block_size=profile.block_size,
        can_read_all_stats=True,
        extensions=frozenset(),
        columns=frozenset(),
    )


def _table(
    captured: pr.CapturedTable, position: int, seconds: float, end: datetime, profile: pr.Profile
) -> tuple[Table, Table]:
    """One table before and after the window.

    The counters are written so that model.rates.between() reads the rates back: a vacuum
    ends as the window does (vacuum_count goes up, last_vacuum is the later snapshot's
    time, n_dead_tup is 0), and across a vacuum that ended less than SHORT_SINCE_S before
    with nothing counted since, it takes the dead tuples from the non-HOT updates and deletes
    of the interval, the inserts from n_tup_ins and the live tuples from inserts less deletes.
    The updates are written as :func:`dead_rate` less the deletes, so that it reads that rate
    whichever case gave it."""
    shape, rates = captured.shape, captured.rates
    oid = FIRST_OID + 2 * position
    deleted = round(rates.deletes * seconds)
    hot = round(rates.hot_updates * seconds)
    dead = max(round(dead_rate(rates) * seconds), deleted)
    inserted = round(rates.inserts * seconds)
    rows = max(shape.rows, 0.0)
    version = profile.server_version_num
    heap = _relation(
        oid=oid,
        schema_name=shape.schema_name,
        name=shape.name,
        kind="r",
        toast_of=None,
        rows=rows,
        pages=shape.pages,
        heap_bytes=shape.heap_bytes,
        index_bytes=shape.index_bytes,
        toast_bytes=shape.toast_bytes,
        n_indexes=len(shape.indexes),
        reloptions=_options(shape.reloptions),
        position=position,
        version=version,
    )
    before_heap = heap.model_copy(
        update={"n_live_tup": max(round(rows) - inserted + deleted, 0), "vacuum_count": 0}
    )
    after_heap = heap.model_copy(
        update={
            "n_tup_ins": inserted,
            "n_tup_upd": hot + dead - deleted,
            "n_tup_hot_upd": hot,
            "n_tup_del": deleted,
            "vacuum_count": 1,
            "last_vacuum": end,
        }
    )
    toast = _toast(shape, oid + 1, position, profile.block_size, version)
    return Table(heap=before_heap, toast=toast), Table(heap=after_heap, toast=toast)


def _toast(
    shape: pr.Shape, oid: int, position: int, block_size: int, version: int
) -> Relation | None:
    """The TOAST relation of a table with TOAST bytes: its size, its own reloptions, no
    rates (both snapshots alike: model.rates.still())."""
    if shape.toast_bytes <= 0:
        return None
    pages = shape.toast_bytes // block_size  # its index included: capture sums the two
    return _relation(
        oid=oid,
        schema_name="pg_toast",
        name=f"pg_toast_{oid - 1}",
        kind="t",
        toast_of=oid - 1,
        rows=float(pages * CHUNKS_PER_PAGE),
        pages=pages,
        heap_bytes=shape.toast_bytes,
        index_bytes=0,
        toast_bytes=None,
        n_indexes=1,
        reloptions=_options(shape.toast_reloptions),
        position=position,
        version=version,
    )


def _relation(
    *,
    oid: int,
    schema_name: str,
    name: str,
    kind: Literal["r", "t"],
    toast_of: int | None,
    rows: float,
    pages: int,
    heap_bytes: int,
    index_bytes: int,
    toast_bytes: int | None,
    n_indexes: int,
    reloptions: dict[str, str],
    position: int,
    version: int,
) -> Relation:
    """A relation as a vacuum just left it; the counters of the window are set by the
    caller."""
    return Relation(
        oid=oid,
        schema_name=schema_name,
        name=name,
        kind=kind,
        toast_of=toast_of,
        reltuples=rows,
        relpages=pages,
        relallvisible=pages,
        relallfrozen=0 if version >= 180000 else None,
        n_live_tup=round(rows),
        n_dead_tup=0,
        n_ins_since_vacuum=0,
        n_mod_since_analyze=0,
        n_tup_ins=0,
        n_tup_upd=0,
        n_tup_del=0,
        n_tup_hot_upd=0,
        n_tup_newpage_upd=0 if version >= 160000 else None,
        last_vacuum=None,
        last_autovacuum=None,
        last_analyze=None,
        last_autoanalyze=None,
        vacuum_count=0,
        autovacuum_count=0,
        analyze_count=0,
        autoanalyze_count=0,
        total_vacuum_time_ms=None,
        total_autovacuum_time_ms=None,
        total_analyze_time_ms=None,
        total_autoanalyze_time_ms=None,
        heap_bytes=heap_bytes,
        index_bytes=index_bytes,
        toast_bytes=toast_bytes,
        n_indexes=n_indexes,
        reloptions=reloptions,
        # Block 0, line position + 1: workers list the heaps in the profile's order.
        catalog_position=position + 1,
        frozenxid_age=0,
        minmxid_age=0,
    )


def _options(options: Iterable[str]) -> dict[str, str]:
    """``name=value`` reloptions (as pg_class keeps them) as a mapping."""
    return dict(option.partition("=")[::2] for option in options)
