"""The churn study's parameters: its config (stored with the run) and one step (a point)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Literal, Self

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, Params, at_least_one


@dataclass(frozen=True, slots=True)
class Step:
    """A named set of settings, applied server-wide or to the queue table only."""

    name: str
    settings: dict[str, str]
    scope: Literal["server", "table"] = "server"


_DEFAULTS = {
    "autovacuum_vacuum_scale_factor": "0.2",
    "autovacuum_vacuum_cost_delay": "20ms",
    "autovacuum_vacuum_cost_limit": "-1",
    "vacuum_cost_limit": "200",
    "autovacuum_naptime": "1min",
}
_COST = _DEFAULTS | {
    "autovacuum_vacuum_cost_delay": "10ms",
    "autovacuum_vacuum_cost_limit": "10000",
}
_SCALE = _COST | {"autovacuum_vacuum_scale_factor": "0.1"}
_NAP30 = _SCALE | {"autovacuum_naptime": "30s"}
_NODELAY = _NAP30 | {"autovacuum_vacuum_cost_delay": "0"}
_NAP10 = _NODELAY | {"autovacuum_naptime": "10s"}

#: The post's six steps, in its order; each carries every setting it runs with.
POST_STEPS: tuple[Step, ...] = (
    Step("defaults", _DEFAULTS),
    Step("cost_delay 10ms, cost_limit 10000", _COST),
    Step("+ scale_factor 0.1", _SCALE),
    Step("+ naptime 30s", _NAP30),
    Step("+ cost_delay 0", _NODELAY),
    Step("+ naptime 10s", _NAP10),
)
#: The demo's two steps: where the post started and where it ended. Six short steps on a
#: small machine drown the difference in noise; two long ones show it.
DEMO_STEPS: tuple[Step, ...] = (POST_STEPS[0], Step("the post's final settings", _NAP10))


def machine_clients() -> tuple[int, int]:
    """Clients and pgbench threads for this machine: four clients per core, a thread per core.

    Measured on 2 cores (backlog 100,000, 8 s each): 2 clients 3,489 tps, 4 clients 4,238,
    8 clients 5,455, 16 clients 5,199 — past four per core, clients only queue.
    """
    cores = os.cpu_count() or 2
    return 4 * cores, cores


@dataclass(frozen=True, slots=True)
class ChurnConfig(Config):
    """Everything a churn run depends on; stored with the run, so ``--resume`` can rebuild it."""

    study: ClassVar[str] = "churn"

    steps: tuple[Step, ...] = POST_STEPS
    preset: str = "quick"
    seconds: int = 90
    warmup: int = 10
    backlog: int = 100_000
    clients: int = 4
    jobs: int = 2
    repeat: int = 1
    continuous: bool = False
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, ChurnConfig]:
        """quick, demo and paper; clients and threads suit the machine unless the preset
        names them (the paper's 15 clients)."""
        clients, jobs = machine_clients()
        return {
            "quick": cls(preset="quick", seconds=90, warmup=10, clients=clients, jobs=jobs),
            "demo": cls(preset="demo", steps=DEMO_STEPS, seconds=100, warmup=10, backlog=50_000,
                        clients=clients, jobs=jobs),
            "paper": cls(preset="paper", seconds=300, warmup=10, clients=15, jobs=min(jobs, 15)),
        }  # fmt: skip

    def checked(self, chosen: Mapping[str, Any]) -> ChurnConfig:
        if self.warmup >= self.seconds:
            raise VacuumlabError(f"--warmup ({self.warmup} s) must be shorter than --seconds")
        at_least_one(seconds=self.seconds, clients=self.clients, jobs=self.jobs, repeat=self.repeat)
        if self.backlog < 0:
            raise VacuumlabError("--backlog must not be negative")
        return replace(self, jobs=min(self.jobs, self.clients))

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = steps_params(self.steps)
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        steps = tuple(Step(s["name"], dict(s["settings"]), s["scope"]) for s in params["steps"])
        known = {k: v for k, v in params.items() if k in cls.__dataclass_fields__}
        return cls(**(known | {"steps": steps}))


@dataclass(frozen=True, slots=True)
class ChurnPoint(Params):
    """One step of the run, by its 1-based number."""

    number: int
    step: Step

    def params(self) -> dict[str, Any]:
        step = self.step
        return {"step": self.number, "name": step.name, "scope": step.scope,
                "settings": step.settings}  # fmt: skip

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        step = Step(params["name"], dict(params["settings"]), params["scope"])
        return cls(int(params["step"]), step)


def steps_params(steps: tuple[Step, ...]) -> list[dict[str, Any]]:
    """Settings steps as a run stores them (``runs.params``), numbered from 1."""
    return [
        {"number": n, "name": s.name, "scope": s.scope, "settings": dict(s.settings)}
        for n, s in enumerate(steps, start=1)
    ]
