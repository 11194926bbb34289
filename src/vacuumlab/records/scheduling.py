"""The scheduling study's parameters: its config (stored with the run) and one arm (a point).

An arm is the launcher's and the workers' settings for one stretch of load: how many workers,
how often the launcher visits the database, and the cost budget they share.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, ClassVar, Self

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, Params, at_least_one

#: The throttled cost budget that makes one worker fall behind forty churning tables: 250 cost
#: units a second (at 10 per 10 ms, 1,000, one worker was busy 43 % of the time).
SLOW_LIMIT = 5
SLOW_DELAY_MS = 20.0


@dataclass(frozen=True, slots=True)
class Arm:
    """The settings one arm runs with (server-wide)."""

    name: str
    workers: int
    naptime_s: int
    cost_limit: int = 200
    cost_delay_ms: float = 2.0

    def settings(self) -> dict[str, str]:
        """The arm as server settings; the cost settings are autovacuum's own."""
        return {
            "autovacuum_max_workers": str(self.workers),
            "autovacuum_naptime": f"{self.naptime_s}s",
            "autovacuum_vacuum_cost_limit": str(self.cost_limit),
            "autovacuum_vacuum_cost_delay": f"{self.cost_delay_ms:g}ms",
        }


#: spread: ``tables`` tables, ``quiet`` of them idle, the others churned by non-HOT updates at
#: rates spread ``spread`` to 1. mixed: ten tables, five whose updates are all HOT, four
#: non-HOT churners and one busy table of ``busy_rows`` rows that takes most of the workers'
#: time (studies/scheduling_compare.py, MIXED).
WORKLOADS = ("spread", "mixed")
#: The options that shape the spread workload; the mixed one has its own shape.
SPREAD_ONLY = frozenset({"tables", "quiet", "spread"})

SATURATED = Arm("1 worker, naptime 5 s, slow cost budget", 1, 5, SLOW_LIMIT, SLOW_DELAY_MS)
SPARE = Arm("3 workers, naptime 10 s, default cost budget", 3, 10)
QUICK_ARMS: tuple[Arm, ...] = (SATURATED, SPARE)
PAPER_ARMS: tuple[Arm, ...] = (
    SATURATED,
    Arm("2 workers, naptime 15 s, slow cost budget", 2, 15, SLOW_LIMIT, SLOW_DELAY_MS),
    Arm("3 workers, naptime 5 s, slow cost budget", 3, 5, SLOW_LIMIT, SLOW_DELAY_MS),
    SPARE,
)


@dataclass(frozen=True, slots=True)
class SchedulingConfig(Config):
    """Everything a scheduling run depends on; stored with the run, so ``--resume`` can
    rebuild it."""

    study: ClassVar[str] = "scheduling"
    added: ClassVar[Mapping[str, Any]] = {"workload": "spread", "busy_rows": 100_000}

    arms: tuple[Arm, ...] = QUICK_ARMS
    preset: str = "quick"
    workload: str = "spread"  # one of WORKLOADS
    tables: int = 40
    quiet: int = 8  # of those, tables the load never touches
    rows: int = 5_000
    spread: float = 50.0  # the busiest table's churn over the slowest busy table's
    busy_rows: int = 100_000  # the mixed workload's busy table
    seconds: int = 170
    warmup: int = 15
    interval: int = 60
    clients: int = 4
    jobs: int = 2
    repeat: int = 1
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, SchedulingConfig]:
        """quick (two arms of 170 s) and paper (four arms of 600 s)."""
        cores = os.cpu_count() or 2
        clients, jobs = 2 * cores, cores
        return {
            "quick": cls(preset="quick", clients=clients, jobs=jobs),
            "paper": cls(preset="paper", arms=PAPER_ARMS, seconds=600, warmup=30, interval=120,
                         clients=clients, jobs=jobs),
        }  # fmt: skip

    def checked(self, chosen: Mapping[str, Any]) -> SchedulingConfig:
        at_least_one(seconds=self.seconds, tables=self.tables, rows=self.rows,
                     clients=self.clients, jobs=self.jobs, repeat=self.repeat)  # fmt: skip
        if self.busy_rows < 1:
            raise VacuumlabError("--busy-rows must be at least 1")
        if self.workload not in WORKLOADS:
            raise VacuumlabError(f"--workload must be one of {', '.join(WORKLOADS)}")
        shaping = sorted(SPREAD_ONLY & set(chosen))
        if self.workload == "mixed" and shaping:
            named = ", ".join(f"--{name}" for name in shaping)
            raise VacuumlabError(f"{named} shape the spread workload only, not mixed")
        if not 0 <= self.quiet < self.tables:
            raise VacuumlabError("--quiet must be at least 0 and fewer than --tables")
        if self.tables > 100:
            raise VacuumlabError("--tables must be at most 100 (pgbench takes 128 scripts)")
        if self.spread < 1:
            raise VacuumlabError("--spread must be at least 1")
        if self.warmup < 0 or self.interval < 1:
            raise VacuumlabError("--warmup must not be negative and --interval at least 1")
        if self.warmup + self.interval + 10 > self.seconds:
            raise VacuumlabError(
                f"--seconds ({self.seconds}) must leave at least 10 s after the warm-up "
                f"({self.warmup} s) and the rate interval ({self.interval} s)"
            )
        if not self.arms:
            raise VacuumlabError("the run needs at least one arm")
        return replace(self, jobs=min(self.jobs, self.clients))

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["arms"] = [asdict(arm) for arm in self.arms]
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        arms = tuple(Arm(**arm) for arm in params["arms"])
        known = {k: v for k, v in params.items() if k in cls.__dataclass_fields__}
        return cls(**(known | {"arms": arms}))


@dataclass(frozen=True, slots=True)
class SchedulingPoint(Params):
    """One arm of the run, by its 1-based number."""

    number: int
    arm: Arm

    def params(self) -> dict[str, Any]:
        return {"arm": self.number, **asdict(self.arm)}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        fields = {k: v for k, v in params.items() if k in Arm.__dataclass_fields__}
        return cls(int(params["arm"]), Arm(**fields))


@dataclass(frozen=True, slots=True)
class TableSample:
    """One table's row of one 1 Hz sample (``schedule_sample.sql``)."""

    at: datetime
    table_name: str
    n_dead_tup: int | None
    autovacuum_count: int | None
    last_autovacuum: datetime | None
    total_autovacuum_time_ms: float | None  # PostgreSQL 18+
