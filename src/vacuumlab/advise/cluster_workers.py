"""Worker slots for the whole server (``advise --all-databases`` with two snapshots of each
database): every database's relations simulated together, as the one launcher runs them, to
find the relations of one database that wait for a worker while other databases' workers
hold every slot.

Each database's own advice simulates it alone, the other databases' workers taking no time
(``forecast.ASSUMPTIONS``). The slots are the server's, though (autovacuum_max_workers, from
18 within autovacuum_worker_slots), and a worker keeps its slot until its database's list is
done (do_autovacuum() in autovacuum.c); with every slot busy the launcher starts no worker
(launcher_determine_sleep()). So while other databases' long vacuums hold the slots, a
database's relations past their threshold wait, however quick their own vacuums.
simulate_cluster() says how long, and whose workers held the slots meanwhile
(``Waited.held_by``).

A relation counts when, together, its longest wait is more than a launcher round (naptime)
longer than with the same database alone, and other databases' workers held most of the slot
time it waited, more than a round of every slot. The recommendation is the workers question's
(:mod:`vacuumlab.advise.workers`: more workers, within autovacuum_worker_slots on 18); where
the slots leave no room for more, a cost limit of its own for the longest vacuums of the
databases that held the most (the timing question's
:func:`~vacuumlab.advise.timing.own_cost_budget`). Either is simulated over the whole server
before and after.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from psycopg import sql

from vacuumlab.advise import estimate, simulated, timing, workers
from vacuumlab.advise.context import Context
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import forecast
from vacuumlab.model.simulator import Cluster, Launcher, Tally, Waited, simulate_cluster
from vacuumlab.model.whatif import Change
from vacuumlab.records.advice import Advice, Finding, Recommendation, Value
from vacuumlab.records.snapshot import Database, Snapshot
from vacuumlab.units import duration

#: A database named as holding the slots held at least this share of the slot time that
#: other databases held while the relations waited.
HOLDER_SHARE = 0.1
#: The databases that held the most, and of each the longest vacuums, that get a cost limit
#: of their own when no more workers can be had.
MAX_HOLDERS = 2
MAX_TABLES = 3
#: The relations named in a finding's detail.
SHOWN = 5
#: What the per-database workers finding is known by (simulated._answered() reads it too).
_WORKERS_TITLE = "autovacuum workers busy"

Pair = tuple[Snapshot, Snapshot]


@dataclass(frozen=True)
class Server:
    """Every database read twice with its simulation inputs, the databases of the launcher's
    round (from the freshest snapshot's pg_database rows) and the server's launcher."""

    pairs: Mapping[str, Pair]
    inputs: Mapping[str, forecast.Inputs]
    listed: list[Database]
    source: str  # the database whose freshest snapshot gave the round and the launcher
    launcher: Launcher

    def run(
        self,
        inputs: Mapping[str, forecast.Inputs] | None = None,
        *,
        launcher: Launcher | None = None,
        alone: str | None = None,
    ) -> Cluster:
        """The whole server over the advisor's horizon; with ``alone``, that database's
        relations only, the others taking their turns with nothing to vacuum."""
        given = dict(inputs or self.inputs)
        if alone is not None:
            given = {alone: given[alone]}
        databases = forecast.cluster_databases(given, self.listed)
        return simulate_cluster(databases, launcher or self.launcher, simulated.HOURS * 3600.0)

    @property
    def unread(self) -> list[str]:
        """The databases of the round that were not read twice: nothing to vacuum there."""
        return [d.name for d in self.listed if d.allow_connections and d.name not in self.inputs]


@dataclass(frozen=True, slots=True)
class Crowded:
    """A database whose relations waited for slots other databases' workers held."""

    database: str
    waits: list[Waited]  # together, the longest total wait first
    alone: dict[str, Tally]  # the same relations with the database alone on the server
    held: dict[str, float]  # slot-seconds each other database held during those waits

    @property
    def holders(self) -> list[str]:
        """The databases that held a share of those slots worth naming, the most first."""
        total = sum(self.held.values())
        named = [name for name, held in self.held.items() if held >= HOLDER_SHARE * total]
        return sorted(named, key=lambda name: (-self.held[name], name))

    def share(self, holder: str) -> float:
        return self.held[holder] / sum(self.held.values())


def server(
    pairs: Mapping[str, Pair], known: Mapping[str, forecast.Inputs] | None = None
) -> Server | None:
    """The simulation's inputs for the databases of ``pairs`` (those ``known`` already, as
    each database's own advice built them, taken as they are); None with fewer than two that
    give rates, where no database competes with another."""
    inputs: dict[str, forecast.Inputs] = {}
    for name, (before, after) in pairs.items():
        given = (known or {}).get(name)
        if given is not None:
            inputs[name] = given
            continue
        try:
            inputs[name] = forecast.inputs(before, after)
        except VacuumlabError:
            continue
    if len(inputs) < 2:
        return None
    latest = max((pairs[name][1] for name in inputs), key=lambda snap: snap.taken_at)
    source = latest.server.database
    return Server(pairs, inputs, latest.databases, source, inputs[source].launcher)


def findings(
    pairs: Mapping[str, Pair],
    advised: Mapping[str, Advice],
    known: Mapping[str, forecast.Inputs] | None = None,
) -> list[Finding]:
    """One finding per database whose relations wait for slots other databases hold, the
    longest waits first; none when the databases do not compete. ``known``: the inputs each
    database's own advice built (:func:`server`)."""
    srv = server(pairs, known)
    if srv is None:
        return []
    together = srv.run()
    found = []
    seen: set[tuple[str, str]] = set()
    for crowd in crowded(srv, together):
        placed, note = _recommendations(srv, crowd, advised, seen)
        finding = _finding(srv, crowd, note)
        checked = _checked(srv, together, crowd, finding, placed)
        found.append(finding.model_copy(update={"recommendations": checked}))
    return found


def crowded(srv: Server, together: Cluster) -> list[Crowded]:
    """The databases whose relations waited on other databases' workers, each with those
    relations, most waiting first."""
    naptime, slots = srv.launcher.naptime_s, srv.launcher.workers
    candidates: dict[str, list[Waited]] = {}
    for w in together.waits():
        others = _others(w)
        if w.vacuums and others >= sum(w.held_by.values()) / 2 and others / slots > naptime:
            candidates.setdefault(w.database, []).append(w)
    found = []
    for name, waits in candidates.items():
        alone = _tallies(srv.run(alone=name), name)
        kept = [
            w for w in waits if w.label in alone and w.max_wait - alone[w.label].max_wait > naptime
        ]
        if kept:
            held: dict[str, float] = {}
            for w in kept:
                for holder, seconds in w.held_by.items():
                    if holder != name:
                        held[holder] = held.get(holder, 0.0) + seconds
            found.append(Crowded(name, kept, {w.label: alone[w.label] for w in kept}, held))
    return sorted(found, key=lambda c: (-sum(w.waited for w in c.waits), c.database))


def with_pointer(advice: Advice, finding: Finding) -> Advice:
    """The crowded database's own workers finding, simulated with that database alone, with a
    word on what the whole server's simulation found."""
    holders = str(finding.evidence["holders"]).split(", ")
    count = finding.evidence["relations"]
    note = (
        f" Simulated with the server's other databases too, {count} of its relations "
        f"wait{'s' if count == 1 else ''} for worker slots that the workers of "
        f"{_databases(holders)} hold: see the findings for the whole server."
    )
    kept = [
        f.model_copy(update={"detail": f.detail + note})
        if f.question == "workers" and _WORKERS_TITLE in f.title
        else f
        for f in advice.findings
    ]
    return advice.model_copy(update={"findings": kept})


def _others(w: Waited) -> float:
    """Slot-seconds other databases' workers held while ``w`` waited with every slot busy."""
    return sum(seconds for name, seconds in w.held_by.items() if name != w.database)


def _tallies(run: Cluster, database: str) -> dict[str, Tally]:
    subjects = run.outcome.subjects
    return {
        subjects[i].label: run.outcome.tally(i)
        for i in range(len(subjects))
        if run.database(i) == database
    }


# -- recommendations ----------------------------------------------------------------------------

#: Each recommendation with the database it is run in (None: the server's setting).
Placed = list[tuple[str | None, Recommendation]]


def _recommendations(
    srv: Server, crowd: Crowded, advised: Mapping[str, Advice], seen: set[tuple[str, str]]
) -> tuple[Placed, str]:
    """More workers, as the workers question gives them to relations that wait with every
    slot busy (once for the server: ``seen``); where autovacuum_worker_slots leave no more,
    a cost limit of its own for the long vacuums of the databases that held the most."""
    ctx = Context(*srv.pairs[crowd.database])
    rec, note = workers.more_workers(ctx, ctx.workers, len(crowd.waits))
    if rec is not None:
        if ("", rec.setting) in seen:
            return [], note
        seen.add(("", rec.setting))
        return [(None, rec)], note
    placed: Placed = []
    for holder in crowd.holders[:MAX_HOLDERS]:
        for r in _holder_budget(srv, holder, crowd, advised.get(holder)):
            if (holder, r.sql) not in seen:
                seen.add((holder, r.sql))
                placed.append((holder, r))
    return placed, note


def _holder_budget(
    srv: Server, holder: str, crowd: Crowded, advised: Advice | None
) -> list[Recommendation]:
    """A cost limit of its own for each of the holder's longest vacuums due within the
    horizon, high enough to end within a launcher round; none for a vacuum that ends within
    one already, or a table whose own advice already changes that setting."""
    ctx = Context(*srv.pairs[holder])
    naptime = srv.launcher.naptime_s
    horizon = simulated.HOURS * 3600.0
    long = sorted(
        (
            e
            for e in estimate.estimates(ctx)
            if e.to_vacuum is not None and e.to_vacuum < horizon
            and e.duration is not None and (e.vacuum_seconds or 0.0) > naptime
        ),
        key=lambda e: -(e.vacuum_seconds or 0.0),
    )  # fmt: skip
    taken = {
        (r.setting, r.target)
        for f in (advised.findings if advised else [])
        for r in f.recommendations
    }
    found: list[Recommendation] = []
    for e in long[:MAX_TABLES]:
        recs = _own_budget(ctx, e, holder, crowd.database, naptime)
        if recs and not any((r.setting, r.target) in taken for r in recs):
            found += [_in_database(holder, r) for r in recs]
    return found


def _own_budget(
    ctx: Context, e: estimate.Estimate, holder: str, waiting: str, naptime: float
) -> list[Recommendation]:
    """The timing question's cost budget of its own, at the limit that ends the vacuum
    within ``naptime``; none when the cost limit is not what makes it long."""
    d, seconds = e.duration, e.vacuum_seconds or 0.0
    assert d is not None
    limit = max(100, math.ceil(d.cost * d.settings.delay_ms / 1000 / naptime / 100) * 100)
    if limit <= d.settings.limit:
        return []
    return timing.own_cost_budget(
        ctx,
        e,
        limit,
        impact=0.4,
        reason=lambda setting, value: (
            f"in database {holder}, a vacuum of {e.name} sleeps about {duration(seconds)} "
            f"and keeps a worker slot all along while relations of {waiting} wait for one; "
            f"{setting} = {value} of its own ends it within the launcher's round of "
            f"{duration(naptime)}, at the price of more I/O while it runs. autovacuum_"
            "worker_slots leaves no room for more workers without a restart"
        ),
    )


def _in_database(name: str, rec: Recommendation) -> Recommendation:
    """A table's change, run in its database: psql's ``\\connect`` first, so that a table
    of the same name in the session's database is never the one changed."""
    where = sql.Identifier(name).as_string(None)
    return rec.model_copy(update={"sql": f"\\connect {where}\n{rec.sql}"})


def _checked(
    srv: Server, together: Cluster, crowd: Crowded, finding: Finding, placed: Placed
) -> list[Recommendation]:
    """The recommendations, the first with what the whole server's simulation predicts for
    the crowded database's longest-waiting relation once they are all made."""
    recs = [rec for _, rec in placed]
    by_database: dict[str | None, list[Change]] = {}
    for where, rec in placed:
        change = simulated.change_for(finding, rec)
        if change is not None:
            by_database.setdefault(where, []).append(change)
    if not by_database:
        return recs
    try:
        fresh, launcher = _changed(srv, by_database)
    except VacuumlabError:
        return recs
    after = srv.run(fresh, launcher=launcher)
    label = crowd.waits[0].label
    was, now = together.find(crowd.database, label), after.find(crowd.database, label)
    if was is None or now is None:
        return recs
    text = simulated.effect(
        f"{label} in {crowd.database}", together.outcome.tally(was), after.outcome.tally(now)
    )
    return [recs[0].model_copy(update={"simulated": text}), *recs[1:]] if text else recs


def _changed(
    srv: Server, changes: dict[str | None, list[Change]]
) -> tuple[dict[str, forecast.Inputs], Launcher]:
    """Every database's inputs and the launcher with ``changes`` made: the server's (under
    None) to every database, a table's to its own."""
    server = changes.get(None, [])
    if server:
        fresh = {
            name: forecast.inputs(*srv.pairs[name], [*server, *changes.get(name, [])])
            for name in srv.inputs
        }
        return fresh, fresh[srv.source].launcher
    fresh = dict(srv.inputs)
    for name, made in changes.items():
        if name is not None:
            given = srv.inputs[name].with_tables_changed(made)
            fresh[name] = given or forecast.inputs(*srv.pairs[name], made)
    return fresh, srv.launcher


# -- the finding --------------------------------------------------------------------------------


def _finding(srv: Server, crowd: Crowded, note: str) -> Finding:
    waits, name = crowd.waits, crowd.database
    longest = max(w.max_wait for w in waits)
    total = sum(w.waited for w in waits)
    many = len(waits) != 1
    return Finding(
        question="workers",
        severity="warning",
        relation=None,
        title=(
            f"{len(waits)} relation{'s' if many else ''} of database {name} wait"
            f"{'' if many else 's'} up to {duration(longest)} for a worker while every slot is "
            f"busy with the workers of {_databases(crowd.holders)}; {duration(total)} of waits "
            f"in {simulated.HOURS:g} h"
        ),
        detail=_detail(srv, crowd) + note,
        evidence=_evidence(srv, crowd, longest, total),
    )


def _detail(srv: Server, crowd: Crowded) -> str:
    launcher, name = srv.launcher, crowd.database
    shown = ", ".join(
        f"{w.label} up to {duration(w.max_wait)} ({duration(w.waited)} in all)"
        for w in crowd.waits[:SHOWN]
    )
    more = len(crowd.waits) - SHOWN
    alone = max(t.max_wait for t in crowd.alone.values())
    text = (
        f"Simulated over {simulated.HOURS:g} h with every database's relations together, as "
        f"the one launcher runs them: {launcher.workers} worker slots and one cost balance for "
        "the whole server, a worker in each database in turn, each once per "
        f"autovacuum_naptime ({duration(launcher.naptime_s)}) while a slot is free. A worker "
        "keeps its slot until its database's list is done (do_autovacuum() in autovacuum.c), "
        "and with every slot busy the launcher starts none: while the workers of "
        f"{_databases(crowd.holders)} go through long vacuums, relations of {name} past their "
        f"threshold wait. Longest waits: {shown}"
        + (f" and {more} more" if more > 0 else "")
        + f". Other databases' workers held {_shares(crowd)} of the slot time they waited. "
        f"Alone on the server, as {name}'s own advice simulates it (the other databases' "
        f"workers taking no time), the longest of these waits is {duration(alone)}."
    )
    if srv.unread:
        text += f" Not read, so taken to have nothing to vacuum: {', '.join(srv.unread)}."
    return text


def _evidence(srv: Server, crowd: Crowded, longest: float, total: float) -> dict[str, Value]:
    return {
        "database": crowd.database,
        "relations": len(crowd.waits),
        "max_wait_s": round(longest, 1),
        "waited_s": round(total, 1),
        "max_wait_alone_s": round(max(t.max_wait for t in crowd.alone.values()), 1),
        "waited_alone_s": round(sum(t.waited for t in crowd.alone.values()), 1),
        "holders": ", ".join(crowd.holders),
        "held_share": ", ".join(f"{h} {crowd.share(h):.0%}" for h in crowd.holders),
        "worker_slots": srv.launcher.workers,
        "naptime_s": srv.launcher.naptime_s,
        "simulated_hours": simulated.HOURS,
        "assumptions": "; ".join(forecast.CLUSTER_ASSUMPTIONS),
    }


def _shares(crowd: Crowded) -> str:
    """``a 60% and b 40%``."""
    return _names([f"{h} {crowd.share(h):.0%}" for h in crowd.holders])


def _databases(names: list[str]) -> str:
    """``database a``, ``databases a and b``."""
    return f"database{'s' if len(names) != 1 else ''} {_names(names)}"


def _names(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
