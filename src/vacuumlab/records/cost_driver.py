"""The cost-driver study's parameters: its config (stored with the run) and one point."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, Params, at_least_one

Distribution = Literal["compact", "spread"]
Mode = Literal["autovacuum", "manual"]


@dataclass(frozen=True, slots=True)
class CostDriverConfig(Config):
    """Everything a run depends on; stored with the run so ``--resume`` can rebuild it."""

    study: ClassVar[str] = "cost-driver"
    added: ClassVar[Mapping[str, Any]] = {"work_mem": None}

    preset: str = "quick"
    rows: int = 1_000_000
    distributions: tuple[Distribution, ...] = ("compact", "spread")
    dead_pcts: tuple[int, ...] = (10, 25, 50)
    indexes: tuple[int, ...] = (0, 1, 3, 5)
    repeat: int = 3
    manual: bool = False
    #: Memory for each vacuum's dead tuple ids (autovacuum_work_mem and maintenance_work_mem),
    #: e.g. "1MB"; None leaves the server's. Small enough, it forces several index passes.
    work_mem: str | None = None
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, CostDriverConfig]:
        return {
            "quick": cls(),
            "paper": cls(preset="paper", rows=10_000_000, indexes=(0, 1, 2, 3, 4, 5), repeat=10),
        }

    def checked(self, chosen: Mapping[str, Any]) -> CostDriverConfig:
        unknown = set(self.distributions) - set(get_args(Distribution))
        if unknown or not self.distributions:
            raise VacuumlabError(f"distributions are compact and spread, not {sorted(unknown)}")
        if not self.dead_pcts or any(not 0 < p < 100 for p in self.dead_pcts):
            raise VacuumlabError("dead shares are percentages between 1 and 99")
        if not self.indexes or any(not 0 <= k <= 20 for k in self.indexes):
            raise VacuumlabError("index counts are between 0 and 20")
        if self.rows < 1000:
            raise VacuumlabError("--rows must be at least 1,000")
        at_least_one(repeat=self.repeat)
        return self

    def modes(self) -> tuple[Mode, ...]:
        return ("autovacuum", "manual") if self.manual else ("autovacuum",)


@dataclass(frozen=True, slots=True)
class CostDriverPoint(Params):
    """One table and one vacuum of it, as stored (``points.params``)."""

    distribution: Distribution
    dead_pct: int
    indexes: int
    rows: int
    mode: Mode
