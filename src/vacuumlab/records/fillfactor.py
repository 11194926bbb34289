"""The fillfactor study's parameters: its config (stored with the run) and one point."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, get_args

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, Params, at_least_one

Size = Literal["fits", "2x", "10x"]
SIZES: tuple[Size, ...] = ("fits", "2x", "10x")

#: The range PostgreSQL accepts for a table's fillfactor (reloptions.c).
FILLFACTOR_MIN, FILLFACTOR_MAX = 10, 100
#: Smallest shared_buffers the study accepts: below it "memory" means nothing for TPC-B.
MIN_MEMORY_BYTES = 16 * 2**20
#: shared_buffers' units (guc.c, memory_unit_conversion_table); a bare number is 8 kB pages.
_UNITS = {"": 8192, "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([A-Za-z]*)\s*$")


def memory_bytes(text: str) -> int:
    """shared_buffers (``"128MB"``, ``"16384"`` in 8 kB pages) in bytes."""
    match = _MEMORY.match(text)
    if match is None:
        raise VacuumlabError(f"shared_buffers takes a number, not {text!r}")
    if match[2] not in _UNITS:
        units = ", ".join(u for u in _UNITS if u)
        raise VacuumlabError(f"shared_buffers: unit {match[2]!r} is not valid here; use {units}")
    value = int(float(match[1]) * _UNITS[match[2]])
    if value < MIN_MEMORY_BYTES:
        raise VacuumlabError(f"shared_buffers {text} is too small; use at least 16MB")
    return value


@dataclass(frozen=True, slots=True)
class FillfactorConfig(Config):
    """Everything a run depends on; stored with the run so ``--resume`` can rebuild it.

    ``shared_buffers`` is None on a named server: the study then uses the server's own value.
    """

    study: ClassVar[str] = "fillfactor"

    preset: str = "quick"
    sizes: tuple[Size, ...] = ("fits", "2x")
    fillfactors: tuple[int, ...] = (70, 80, 90, 100)
    seconds: int = 45
    warmup: int = 5
    repeat: int = 2
    clients: int = 2
    jobs: int = 1
    shared_buffers: str | None = "128MB"
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, FillfactorConfig]:
        # quick: 16 points of about 50 s (init, 5 s warm-up, 40 s measured), about 14 minutes
        # on 2 cores; paper: 60 points of about 5.5 minutes, about 6 hours. Two clients: the
        # post's two sessions.
        return {
            "quick": cls(),
            "paper": cls(preset="paper", sizes=SIZES, seconds=300, warmup=30, repeat=5,
                         shared_buffers="256MB"),
        }  # fmt: skip

    def checked(self, chosen: Mapping[str, Any]) -> FillfactorConfig:
        """On a named server shared_buffers stays the server's own unless the caller names
        a value, which the run then refuses (only the sandbox is restarted)."""
        config = self
        if self.target == "server" and "shared_buffers" not in chosen:
            config = replace(self, shared_buffers=None)
        config.check()
        return replace(config, jobs=min(config.jobs, config.clients))

    def check(self) -> None:
        """Refuse a config that cannot run, with a one-line reason."""
        unknown = sorted(set(self.sizes) - set(get_args(Size)))
        if unknown or not self.sizes:
            listed = ", ".join(unknown) or "none"
            raise VacuumlabError(f"sizes are {', '.join(SIZES)}, not {listed}")
        bad = [f for f in self.fillfactors if not FILLFACTOR_MIN <= f <= FILLFACTOR_MAX]
        if bad or not self.fillfactors:
            raise VacuumlabError(f"fillfactors are between {FILLFACTOR_MIN} and {FILLFACTOR_MAX}")
        if _repeats(self.sizes) or _repeats(self.fillfactors):
            raise VacuumlabError("sizes and fillfactors must not repeat")
        at_least_one(seconds=self.seconds, clients=self.clients, jobs=self.jobs, repeat=self.repeat)
        if not 0 <= self.warmup < self.seconds:
            raise VacuumlabError(f"the warm-up ({self.warmup} s) must be shorter than --seconds")
        if self.shared_buffers is not None:
            memory_bytes(self.shared_buffers)


def _repeats(values: tuple[object, ...]) -> bool:
    return len(set(values)) != len(values)


@dataclass(frozen=True, slots=True)
class FillfactorPoint(Params):
    """One size and fillfactor, as stored (``points.params``)."""

    size: Size
    fillfactor: int
    scale: int


@dataclass(frozen=True, slots=True)
class Counters:
    """pgbench_accounts' cumulative counters and sizes at one moment (``hot_counters.sql``)."""

    n_tup_upd: int
    n_tup_hot_upd: int
    n_tup_newpage_upd: int | None  # PostgreSQL 16+
    autovacuum_count: int
    heap_blks_hit: int
    heap_blks_read: int
    idx_blks_hit: int
    idx_blks_read: int
    heap_bytes: int
    index_bytes: int


@dataclass(frozen=True, slots=True)
class StatementTimes:
    """One pg_stat_statements entry's calls and timings (``statements.sql``)."""

    userid: int
    queryid: int
    toplevel: bool
    calls: int
    total_exec_time: float
    stddev_exec_time: float
