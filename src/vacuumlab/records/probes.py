"""Rows of the small monitoring questions the lab and its studies ask (``pg/queries``), one
frozen record per question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RelationSize:
    """A relation's oid and its main fork's size (``relation_size.sql``)."""

    oid: int
    bytes: int

    @property
    def pages(self) -> int:
        """Its size in 8 kB pages (every study's server has them; toast checks)."""
        return self.bytes // 8192


@dataclass(frozen=True, slots=True)
class DeadTuples:
    """What the statistics system holds of a table's dead tuples (``dead_tuples.sql``)."""

    n_dead_tup: int | None  # None until the table's first statistics reach shared memory


@dataclass(frozen=True, slots=True)
class TableIo:
    """Heap and index blocks read and hit for one table (``table_io.sql``)."""

    heap_blks_read: int
    heap_blks_hit: int
    idx_blks_read: int
    idx_blks_hit: int

    def minus(self, before: TableIo) -> dict[str, int]:
        """The blocks since ``before``, by counter."""
        return {
            "heap_blks_read": self.heap_blks_read - before.heap_blks_read,
            "heap_blks_hit": self.heap_blks_hit - before.heap_blks_hit,
            "idx_blks_read": self.idx_blks_read - before.idx_blks_read,
            "idx_blks_hit": self.idx_blks_hit - before.idx_blks_hit,
        }


@dataclass(frozen=True, slots=True)
class WalPosition:
    """The WAL insert position and the bytes written since an earlier one (``wal_lsn.sql``)."""

    lsn: str  # pg_lsn as text, "16/B374D848"
    bytes_since: int  # 0 when no earlier position was given


@dataclass(frozen=True, slots=True)
class LockHeld:
    """A granted lock of one backend on one relation (``relation_locked.sql``)."""

    granted: bool


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """How the server stores pages and values, and how much it caches (``server_facts.sql``)."""

    block_size: int  # bytes per page: 8192 unless the server was built otherwise
    data_checksums: str  # "on" or "off"
    default_toast_compression: str | None  # PostgreSQL 14+
    shared_buffers_bytes: int


@dataclass(frozen=True, slots=True)
class VisibilityMap:
    """A relation's all-visible and all-frozen pages (pg_visibility_map_summary)."""

    all_visible: int
    all_frozen: int

    def settled(self, pages: int) -> bool:
        """Whether every one of the relation's ``pages`` is all-visible and all-frozen."""
        return self.all_visible == self.all_frozen == pages
