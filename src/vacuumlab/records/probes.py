"""Rows of the small monitoring questions the lab and its studies ask (``pg/queries``), one
frozen record per question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RelationSize:
    """A relation's oid and its main fork's size (``relation_size.sql``)."""

    oid: int
    bytes: int


@dataclass(frozen=True, slots=True)
class DeadTuples:
    """What the statistics system holds of a table's dead tuples (``dead_tuples.sql``)."""

    n_dead_tup: int | None


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
class ShownSetting:
    """A setting as the server shows it (``shown_settings.sql``): "128MB", not "16384"."""

    name: str
    value: str


@dataclass(frozen=True, slots=True)
class SharedBuffers:
    """shared_buffers in bytes (``shared_buffers.sql``)."""

    bytes: int


@dataclass(frozen=True, slots=True)
class WalPosition:
    """The WAL insert position and the bytes written since an earlier one (``wal_lsn.sql``)."""

    lsn: str
    bytes_since: int


@dataclass(frozen=True, slots=True)
class LockHeld:
    """A granted lock of one backend on one relation (``relation_locked.sql``)."""

    granted: bool


@dataclass(frozen=True, slots=True)
class StorageFacts:
    """How the server stores pages and values (``storage_facts.sql``, 14+)."""

    block_size: int
    data_checksums: str
    default_toast_compression: str


@dataclass(frozen=True, slots=True)
class VisibilityMap:
    """A relation's all-visible and all-frozen pages (pg_visibility_map_summary)."""

    all_visible: int
    all_frozen: int
