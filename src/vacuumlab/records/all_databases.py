"""Every database of one server (``--all-databases``): one snapshot, or one advice, per
database that could be read, and a note for each that could not.

A server's databases share its autovacuum launcher and worker slots, so advice for one of them
alone misses what competes with it. Each database is still read on its own session (a
session sees one database's tables), so the per-database records are the ordinary
:class:`~vacuumlab.records.snapshot.Snapshot` and :class:`~vacuumlab.records.advice.Advice`;
these records hold them together, each file one document with its own ``kind``, so that
``advise --input`` and ``snapshot --input`` tell a saved all-databases snapshot from a
single one by reading its kind.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from vacuumlab.records import snapshot as single
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.snapshot import ProbeNote, Record, Snapshot

SCHEMA_VERSION = 1
SNAPSHOT_KIND: Final = "vacuumlab.all_databases_snapshot"
ADVICE_KIND: Final = "vacuumlab.all_databases_advice"


class DatabaseName(Record):
    """A database that accepts connections (pg/queries/connectable_databases.sql)."""

    name: str


class AllDatabasesSnapshot(Record):
    """One snapshot per database of a server, each taken on a session of its own, in turn."""

    kind: Literal["vacuumlab.all_databases_snapshot"] = SNAPSHOT_KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    taken_at: datetime = Field(description="when the first database was visited")
    snapshots: list[Snapshot] = Field(
        min_length=1, description="one per database read, in name order"
    )
    notes: list[ProbeNote] = Field(
        default=[], description="each database that could not be read, why, and the fix"
    )

    def dump_json(self) -> str:
        """Each database's snapshot written as a saved snapshot is (``Snapshot.dump_json``), so
        it reads back as one (:func:`parse_all_databases`), whatever that file's form."""
        head = self.model_dump_json(indent=2, exclude={"snapshots"}).removesuffix("\n}")
        body = ",\n".join(snap.dump_json() for snap in self.snapshots)
        return f'{head},\n  "snapshots": [\n{body}\n  ]\n}}'

    def by_database(self) -> dict[str, Snapshot]:
        return {snap.server.database: snap for snap in self.snapshots}


class AllDatabasesAdvice(Record):
    """The advice for every database of a server: what holds for the whole server once
    (``findings``: the wraparound of its databases, which the launcher judges over all of
    them), then each database's own advice, and the databases that could not be read."""

    kind: Literal["vacuumlab.all_databases_advice"] = ADVICE_KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    taken_at: datetime = Field(description="when the first database was visited")
    findings: list[Finding] = Field(
        default_factory=list, description="server-wide: shown once, not under each database"
    )
    databases: list[Advice] = Field(default_factory=list, description="one per database read")
    notes: list[ProbeNote] = Field(default_factory=list)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2)

    def all_findings(self) -> list[Finding]:
        """The server-wide findings and every database's."""
        return [*self.findings, *(f for advice in self.databases for f in advice.findings)]


def load_snapshots(path: Path) -> Snapshot | AllDatabasesSnapshot:
    """A saved snapshot of either kind, told apart by its ``kind``, with one-line errors."""
    raw = single.read_json(path, "a vacuumlab snapshot")
    if not isinstance(raw, dict) or raw.get("kind") != SNAPSHOT_KIND:
        return single.parse_snapshot(raw, str(path))
    return parse_all_databases(raw, str(path))


def parse_all_databases(raw: dict[str, object], origin: str) -> AllDatabasesSnapshot:
    """``raw`` as an all-databases snapshot: its own kind and schema checked first, then each
    database's snapshot read as a saved snapshot is (its schema checked too)."""
    kind = (SNAPSHOT_KIND, SCHEMA_VERSION)
    what = "all-databases snapshot"
    version, snapshots = raw.get("schema_version"), raw.get("snapshots")
    if isinstance(version, int) and version <= SCHEMA_VERSION and isinstance(snapshots, list):
        read = [
            single.parse_snapshot(snap, f"{origin} (snapshots[{at}])")
            for at, snap in enumerate(snapshots)
        ]
        raw = {**raw, "snapshots": read}
    return single.parse_versioned(raw, origin, AllDatabasesSnapshot, kind, what)


def load_all_databases_advice(path: Path) -> AllDatabasesAdvice:
    return single.load_record(path, AllDatabasesAdvice, ADVICE_KIND, "a vacuumlab advice file")
