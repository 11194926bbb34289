"""The versioned snapshot model: the only contract between collecting and presenting.

Every record is frozen and validated. A field that only some server versions provide is
``None`` on the others; its docstring names the first version that has it. The whole
snapshot round-trips through JSON (:meth:`Snapshot.dump_json`, :func:`load_snapshot`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
)
from pydantic_core import from_json

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.snapshot_file import SCHEMA_VERSION, dumps, expanded

KIND: Final = "vacuumlab.snapshot"


class Record(BaseModel):
    """Base of every record: immutable, and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


R = TypeVar("R", bound=Record)


class ServerInfo(Record):
    """What a session learns about its server once, when it connects."""

    version_num: int
    version: str
    database: str
    user: str
    is_superuser: bool
    in_recovery: bool
    block_size: int
    can_read_all_stats: bool = Field(
        description="superuser or member of pg_read_all_stats (pg_monitor includes it)"
    )
    can_stat_files: bool = Field(
        default=False,
        description="may call pg_stat_file() (superusers; others by GRANT EXECUTE): the "
        "snapshot then sizes relations from their files without opening them",
    )
    extensions: frozenset[str]
    #: ``view.column`` for the statistics views and catalogs vacuumlab reads.
    columns: frozenset[str]

    @field_serializer("extensions", "columns")
    def _sorted(self, values: frozenset[str]) -> list[str]:
        """Sets serialise sorted, so the same snapshot always gives the same JSON."""
        return sorted(values)

    @property
    def major(self) -> int:
        return self.version_num // 10000

    def has_column(self, view: str, column: str) -> bool:
        return f"{view}.{column}" in self.columns


class Setting(Record):
    """One row of ``pg_settings`` that vacuum depends on."""

    name: str
    setting: str
    unit: str | None
    vartype: str
    source: str
    context: str
    pending_restart: bool
    #: As SHOW gives it, unit included ("128MB"); None in snapshots saved before it was read.
    shown: str | None = None


class Relation(Record):
    """A heap or TOAST relation with its catalog entry and cumulative statistics."""

    oid: int
    schema_name: str
    name: str
    kind: Literal["r", "m", "t"]
    toast_of: int | None = Field(description="for a TOAST relation, the oid of its table")
    reltuples: float
    relpages: int
    relallvisible: int
    relallfrozen: int | None = Field(description="PostgreSQL 18+")
    n_live_tup: int | None
    n_dead_tup: int | None
    n_ins_since_vacuum: int | None
    n_mod_since_analyze: int | None
    n_tup_ins: int | None
    n_tup_upd: int | None
    n_tup_del: int | None
    n_tup_hot_upd: int | None
    n_tup_newpage_upd: int | None = Field(description="PostgreSQL 16+")
    last_vacuum: datetime | None
    last_autovacuum: datetime | None
    last_analyze: datetime | None
    last_autoanalyze: datetime | None
    vacuum_count: int | None
    autovacuum_count: int | None
    analyze_count: int | None
    autoanalyze_count: int | None
    total_vacuum_time_ms: float | None = Field(description="PostgreSQL 18+")
    total_autovacuum_time_ms: float | None = Field(description="PostgreSQL 18+")
    total_analyze_time_ms: float | None = Field(description="PostgreSQL 18+")
    total_autoanalyze_time_ms: float | None = Field(description="PostgreSQL 18+")
    heap_bytes: int | None = Field(description="main fork; None when the relation was locked")
    index_bytes: int | None
    toast_bytes: int | None = Field(description="TOAST table with its index; heaps only")
    n_indexes: int
    reloptions: dict[str, str]
    catalog_position: int | None = Field(
        default=None,
        description="its pg_class row's ctid as block × 65536 + line: the order in which an "
        "autovacuum worker's scan of pg_class lists it; None in snapshots saved before",
    )
    frozenxid_age: int | None
    minmxid_age: int | None

    @field_validator("reloptions", mode="before")
    @classmethod
    def _options(cls, value: object) -> object:
        """``pg_class.reloptions`` as the server stores it (``{name=value,…}`` or NULL) reads
        as a mapping: parsed here, not as JSON built per row on the server."""
        if value is None:
            return {}
        if isinstance(value, list):
            return dict(str(option).partition("=")[::2] for option in value)
        return value

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}"


class Table(Record):
    """A table: its heap and, when it has one, its TOAST relation, each with its own stats."""

    heap: Relation
    toast: Relation | None


class Partitioned(Record):
    """A partitioned table (relkind ``p``): it holds no rows, its partitions do. autovacuum
    analyzes each partition and never the partitioned table, whose own statistics (over
    every partition, for queries over the whole tree) come from a manual ANALYZE alone."""

    oid: int
    schema_name: str
    name: str
    reltuples: float = Field(description="rows at its last ANALYZE; -1 never analyzed")
    last_analyze: datetime | None
    analyze_count: int | None
    parent: int | None = Field(description="the partitioned table above it, if any")
    leaves: list[int] = Field(description="the oids of its tree's leaf partitions, all levels")

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}"


class IoRow(Record):
    """One row of ``pg_stat_io`` (PostgreSQL 16+); bytes are computed on 16 and 17."""

    backend_type: str
    object: str
    context: str
    reads: int | None
    read_bytes: int | None
    read_time_ms: float | None
    writes: int | None
    write_bytes: int | None
    write_time_ms: float | None
    writebacks: int | None
    extends: int | None
    extend_bytes: int | None
    hits: int | None
    evictions: int | None
    reuses: int | None
    fsyncs: int | None


class Checkpointer(Record):
    """Checkpoint counters: ``pg_stat_checkpointer`` (17+) or ``pg_stat_bgwriter`` before."""

    num_timed: int
    num_requested: int
    write_time_ms: float
    sync_time_ms: float
    buffers_written: int


class Bgwriter(Record):
    """Background writer counters; ``buffers_backend`` only exists before PostgreSQL 17."""

    buffers_clean: int
    maxwritten_clean: int
    buffers_alloc: int
    buffers_backend: int | None


class Wal(Record):
    """WAL position and, from PostgreSQL 14, the ``pg_stat_wal`` counters."""

    lsn: str | None = Field(description="insert position; None on a standby")
    wal_records: int | None
    wal_fpi: int | None
    wal_bytes: int | None
    wal_buffers_full: int | None


class XidState(Record):
    """Transaction id counters, read without assigning an xid."""

    next_xid: int = Field(description="full 64-bit id the next transaction will get")


class Database(Record):
    """Per-database freeze ages, for wraparound."""

    name: str
    frozenxid_age: int
    minmxid_age: int
    allow_connections: bool


class Backend(Record):
    """A backend that holds an xid or a snapshot, and so holds back the xmin horizon."""

    pid: int
    backend_type: str | None
    database: str | None
    user_name: str | None
    application_name: str | None
    state: str | None
    backend_xid: int | None
    backend_xmin: int | None
    xmin_age: int | None
    xact_start: datetime | None
    query_start: datetime | None
    state_change: datetime | None
    wait_event: str | None
    query: str | None
    in_lazy_vacuum: bool | None = Field(
        default=None,
        description="running a lazy VACUUM (in pg_stat_progress_vacuum), which holds no "
        "horizon; None in snapshots saved before it was collected",
    )
    rewriting: str | None = Field(
        default=None, description="'VACUUM FULL' or 'CLUSTER' when running one (12+)"
    )


class ReplicationSlot(Record):
    """A replication slot with the horizons it pins."""

    slot_name: str
    slot_type: str
    database: str | None
    active: bool
    xmin: int | None
    xmin_age: int | None
    catalog_xmin: int | None
    catalog_xmin_age: int | None


class PreparedXact(Record):
    """A prepared (two-phase) transaction: it holds the horizon until committed."""

    gid: str
    xid: int
    xid_age: int
    prepared: datetime
    owner: str
    database: str


class VacuumProgress(Record):
    """A vacuum running now (``pg_stat_progress_vacuum``)."""

    pid: int
    database: str
    relid: int
    relation: str | None
    is_autovacuum: bool
    phase: str
    started: datetime | None
    heap_blks_total: int
    heap_blks_scanned: int
    heap_blks_vacuumed: int
    index_vacuum_count: int
    dead_tuples: int | None = Field(description="num_dead_tuples before 17, num_dead_item_ids")
    indexes_total: int | None = Field(description="PostgreSQL 17+")
    indexes_processed: int | None = Field(description="PostgreSQL 17+")
    delay_time_ms: float | None = Field(description="PostgreSQL 18+, with track_cost_delay_timing")
    max_dead_tuples: int | None = Field(
        default=None, description="before 17: the dead-tuple array's capacity, in tuples"
    )
    dead_tuple_bytes: int | None = Field(
        default=None, description="PostgreSQL 17+: memory the dead items' TidStore uses"
    )
    max_dead_tuple_bytes: int | None = Field(
        default=None, description="PostgreSQL 17+: the TidStore's limit (autovacuum_work_mem)"
    )

    @property
    def dead_items_share(self) -> float | None:
        """How full the dead-items memory is (1.0: an index pass is due): bytes (17+), tuples."""
        if self.max_dead_tuple_bytes:
            return (self.dead_tuple_bytes or 0) / self.max_dead_tuple_bytes
        if self.max_dead_tuples:
            return (self.dead_tuples or 0) / self.max_dead_tuples
        return None


class AutovacuumWorker(Record):
    """An autovacuum worker alive now (``pg_stat_activity``), in any database: vacuuming,
    analyzing or between two relations, it holds a worker slot."""

    pid: int
    database: str | None
    backend_start: datetime = Field(description="its launch")
    relid: int | None = Field(description="the relation it vacuums or analyzes now")
    doing: Literal["vacuum", "analyze"] | None = Field(description="None between relations")


class ExactBloat(Record):
    """``pgstattuple_approx`` for one relation, measured by ``--exact`` (pgstattuple 1.3+).

    It reads every page that is not all-visible and estimates the rest from the free space
    map; percentages run 0..100 of ``table_len``.
    """

    oid: int
    table_len: int
    scanned_percent: float
    approx_tuple_count: int
    approx_tuple_len: int
    approx_tuple_percent: float
    dead_tuple_count: int
    dead_tuple_len: int
    dead_tuple_percent: float
    approx_free_space: int
    approx_free_percent: float


class PagesScanned(Record):
    """The heap pages the next vacuum of one relation reads, counted from its visibility map
    (``pg_visibility_map()``, pg_visibility 1.1+) with vacuum's skipping rules applied: runs of
    at least 32 skippable pages are skipped and the last page is read
    (heap_vac_scan_next_block() in vacuumlazy.c)."""

    oid: int
    pages: int = Field(description="heap pages when the map was read")
    all_visible: int
    all_frozen: int
    normal: int = Field(description="pages a normal vacuum reads (18's eager scan left out)")
    aggressive: int = Field(description="pages an aggressive vacuum reads")


class PagesCached(Record):
    """How many of one relation's main-fork pages sit in shared buffers, counted from
    ``pg_buffercache`` when the snapshot was taken: the pages its vacuum finds there (a hit)
    rather than reads in (a miss)."""

    oid: int
    heap: int = Field(description="the relation's pages in shared buffers")
    indexes: int = Field(description="its indexes' pages in shared buffers")


class ProbeNote(Record):
    """Why a probe gave nothing: a missing privilege, a timeout, an old server."""

    probe: str
    reason: str
    fix: str | None = None


class Snapshot(Record):
    """Everything vacuum depends on, collected from one server at one moment."""

    kind: Literal["vacuumlab.snapshot"] = KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    taken_at: datetime
    server: ServerInfo
    settings: list[Setting] = []
    tables: list[Table] = []
    partitioned: list[Partitioned] = Field(
        default=[],
        description="partitioned tables (PostgreSQL 14+); empty in snapshots saved before",
    )
    io: list[IoRow] = []
    checkpointer: Checkpointer | None = None
    bgwriter: Bgwriter | None = None
    wal: Wal | None = None
    xids: XidState | None = None
    databases: list[Database] = []
    backends: list[Backend] = []
    slots: list[ReplicationSlot] = []
    prepared: list[PreparedXact] = []
    vacuums: list[VacuumProgress] = []
    workers: list[AutovacuumWorker] | None = Field(
        default=None,
        description="every autovacuum worker alive, ANALYZE included; None in snapshots "
        "saved before it was collected, or when pg_stat_activity could not be read",
    )
    exact: list[ExactBloat] = Field(
        default=[], description="only when collected with --exact: the probe reads tables"
    )
    scanned: list[PagesScanned] = Field(
        default=[],
        description="where pg_visibility is installed and may be called: the changed "
        "relations' visibility maps, as the next vacuum reads them",
    )
    cached: list[PagesCached] = Field(
        default=[],
        description="where pg_buffercache is installed and may be read: the changed "
        "relations' pages (and their indexes') in shared buffers",
    )
    sizes: Literal["measured", "estimated"] = Field(
        default="measured",
        description="estimated: the relations' bytes are pg_class.relpages × block size "
        "(as of their last vacuum or analyze), not their files' sizes; the live view's",
    )
    quiet: int = Field(default=0, description="relations a live view left out as quiet")
    notes: list[ProbeNote] = []

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    def dump_json(self) -> str:
        return dumps(self, self.tables)


def read_json(path: Path, what: str) -> object:
    """A saved file's JSON, read by pydantic's parser, or one line saying it is not ``what``."""
    try:
        return from_json(path.read_bytes())
    except OSError as exc:
        raise VacuumlabError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError:  # not JSON, or not UTF-8
        raise VacuumlabError(f"{path} is not {what} (not JSON)") from None


def load_record(path: Path, cls: type[R], kind: str, what: str) -> R:
    """A saved record of ``kind`` (advice, simulation, verification), with one-line errors:
    not JSON, another kind, or damaged (the first field that does not validate)."""
    raw = read_json(path, what)
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        raise VacuumlabError(f"{path} is not {what} (no kind {kind!r})")
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise VacuumlabError(f"{path} is damaged: {'.'.join(map(str, first['loc']))}") from None


def load_snapshot(path: Path) -> Snapshot:
    """Read a saved snapshot, with a one-line error for anything that is not one."""
    return parse_snapshot(read_json(path, "a vacuumlab snapshot"), str(path))


def parse_snapshot(raw: object, origin: str) -> Snapshot:
    raw = expanded(raw, origin, Snapshot)  # schema 2's columns as records, 1 as it is
    return parse_versioned(raw, origin, Snapshot, (KIND, SCHEMA_VERSION), "snapshot")


def parse_versioned(raw: object, origin: str, cls: type[R], kind: tuple[str, int], what: str) -> R:
    """``raw`` as a record of ``cls``, whose kind and newest schema are ``kind``; one-line
    errors for another kind, a newer schema, or a damaged record. ``what`` names it."""
    name, newest = kind
    if not isinstance(raw, dict) or raw.get("kind") != name:
        raise VacuumlabError(f"{origin} is not a vacuumlab {what} (no kind {name!r})")
    version = raw.get("schema_version")
    if not isinstance(version, int) or version > newest:
        raise VacuumlabError(
            f"{origin} has {what} schema {version!r}; this vacuumlab reads up to "
            f"{newest}: upgrade vacuumlab"
        )
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise VacuumlabError(f"{origin} is a damaged {what}: {where}: {first['msg']}") from None
