"""The advice for every database of a server, from one snapshot per database (or two, for
rates): each database advised on its own, and what holds for the server said once.

Pure, like :func:`vacuumlab.advise.advise`: ``advise --input`` advises from a saved
all-databases snapshot with no server.

Each database's snapshot carries the freeze ages of every database of the server
(``Snapshot.databases``, from ``pg_database``), so each database's advice would repeat the same
wraparound finding about them. The launcher judges wraparound over the server's databases
together (the oldest ``datfrozenxid`` sets the limit, SetTransactionIdLimit() in varsup.c), so
that finding is kept once, for the server, from the freshest snapshot; each table's own
wraparound findings stay with its database. So is any other finding about no relation that
every database's advice gives word for word, when there are two databases or more (a hint to
advise with an interval, say): the server's, said once.

With two snapshots of each database, every database's relations are also simulated together
(:mod:`vacuumlab.advise.cluster_workers`): the worker slots are the server's, and the relations
of a database that wait for slots other databases' workers hold are a finding for the server;
that database's own workers finding, which simulates it alone, points to it.
"""

from __future__ import annotations

from vacuumlab import __version__
from vacuumlab.advise import advise, advise_simulated, cluster_workers
from vacuumlab.advise.wraparound import is_cluster
from vacuumlab.model import forecast
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.all_databases import AllDatabasesAdvice, AllDatabasesSnapshot
from vacuumlab.records.snapshot import Snapshot


def advise_all(
    snapshots: AllDatabasesSnapshot, later: AllDatabasesSnapshot | None = None
) -> AllDatabasesAdvice:
    """Advise each database from its snapshot, or from its two when ``later`` has it too
    (rates); a database in only one of the two is advised from that one."""
    first = snapshots.by_database()
    second = later.by_database() if later is not None else {}
    advised: list[tuple[Snapshot, Advice]] = []
    pairs: dict[str, tuple[Snapshot, Snapshot]] = {}
    known: dict[str, forecast.Inputs] = {}
    for name in sorted(first.keys() | second.keys()):
        earlier, now = first.get(name), second.get(name)
        if earlier is not None and now is not None:
            pairs[name] = (earlier, now)
            advice, inputs = advise_simulated(earlier, now)
            advised.append((now, advice))
            if inputs is not None:
                known[name] = inputs
        else:
            only = now or earlier
            assert only is not None
            advised.append((only, advise(only)))
    notes = list(snapshots.notes)
    if later is not None:
        notes += [n for n in later.notes if n not in notes]
    server_wide = _server_wide(advised)
    lifted = _everywhere([advice for _, advice in advised])
    databases = [_without(advice, lifted) for _, advice in advised]
    slots = cluster_workers.findings(pairs, {a.server.database: a for a in databases}, known)
    pointed = {str(f.evidence["database"]): f for f in slots}
    return AllDatabasesAdvice(
        vacuumlab_version=__version__,
        taken_at=snapshots.taken_at,
        findings=server_wide + slots + lifted,
        databases=[
            cluster_workers.with_pointer(a, pointed[a.server.database])
            if a.server.database in pointed
            else a
            for a in databases
        ],
        notes=notes,
    )


def _server_wide(advised: list[tuple[Snapshot, Advice]]) -> list[Finding]:
    """The wraparound finding about the server's databases, from the freshest snapshot that
    read their ages (ages only grow, until a vacuum freezes)."""
    read = [(snap, advice) for snap, advice in advised if snap.databases]
    if not read:
        return []
    _, freshest = max(read, key=lambda pair: pair[0].taken_at)
    return [f for f in freshest.findings if is_cluster(f)]


def _everywhere(advices: list[Advice]) -> list[Finding]:
    """The other findings about no relation that every database's advice gives, identical,
    in the first database's order; none with fewer than two databases, where a finding about
    no relation may still be that database's own."""
    if len(advices) < 2:
        return []
    rest = advices[1:]
    return [
        f
        for f in advices[0].findings
        if f.relation is None and not is_cluster(f) and all(f in a.findings for a in rest)
    ]


def _without(advice: Advice, lifted: list[Finding]) -> Advice:
    """A database's advice without what the server-wide findings say."""
    kept = [f for f in advice.findings if not is_cluster(f) and f not in lifted]
    if len(kept) == len(advice.findings):
        return advice
    return advice.model_copy(update={"findings": kept})
