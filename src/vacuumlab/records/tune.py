"""The tuner's parameters: its config (stored with the run, so ``--resume`` rebuilds it), the
space it searches (one :class:`Dimension` per setting of a table or of the server) and one
measured trial (a point): the settings it ran with, server-wide and per replayed table.

Values are strings in the setting's base unit, as ``pg_settings.setting`` and ``reloptions``
hold them (``autovacuum_naptime`` in seconds, ``autovacuum_vacuum_cost_delay`` in ms).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Literal, Self

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.churn import machine_clients
from vacuumlab.records.params import Config, Params, at_least_one

#: The least a trial needs beyond its load: building, loading and vacuuming its tables.
MIN_SETUP_S = 5.0

Objective = Literal["dead", "latency", "both"]
OBJECTIVES: tuple[Objective, ...] = ("dead", "latency", "both")
#: Why a trial was measured: the captured settings, what ``advise`` recommends for them, the
#: simulator's best, or a proposal of the search.
Origin = Literal["current", "advice", "simulator", "search"]


@dataclass(frozen=True, slots=True)
class Dimension:
    """One setting the search varies: on a replayed table (``table``) or server-wide (None).

    A range ``low``..``high`` (searched on a log scale when ``log``), or a list of ``levels``
    to choose from (a grid's)."""

    setting: str
    table: str | None
    low: float
    high: float
    log: bool = False
    integer: bool = False
    levels: tuple[float, ...] = ()

    @property
    def key(self) -> str:
        """``table.setting``, or ``server.setting``: the name Optuna knows it by."""
        return f"{self.table or 'server'}.{self.setting}"

    def value(self, number: float) -> str:
        """The number as the setting takes it."""
        if self.integer or abs(number) >= 100:
            return str(round(number))
        return f"{number:.3g}"  # three significant digits: finer than any trial can tell apart

    def describe(self) -> str:
        if self.levels:
            return "one of " + ", ".join(self.value(v) for v in self.levels)
        scale = ", log scale" if self.log else ""
        return f"{self.value(self.low)} to {self.value(self.high)}{scale}"

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["levels"] = list(self.levels)
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Dimension:
        return cls(**(dict(params) | {"levels": tuple(params.get("levels", ()))}))


@dataclass(frozen=True, slots=True)
class TrialSettings:
    """The settings one trial runs with, beyond the captured ones: server-wide, and per
    replayed table (by its name in schema vacuumlab)."""

    server: dict[str, str] = field(default_factory=dict)
    tables: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Mapping[str, str]) -> TrialSettings:
        """From ``{dimension key: value}``."""
        server: dict[str, str] = {}
        tables: dict[str, dict[str, str]] = {}
        for key, value in values.items():
            where, _, setting = key.partition(".")
            if where == "server":
                server[setting] = value
            else:
                tables.setdefault(where, {})[setting] = value
        return cls(server, tables)

    def flat(self) -> dict[str, str]:
        """``{dimension key: value}``, sorted: the inverse of :meth:`of`."""
        found = {f"server.{k}": v for k, v in self.server.items()}
        found |= {f"{t}.{k}": v for t, options in self.tables.items() for k, v in options.items()}
        return dict(sorted(found.items()))

    def describe(self) -> str:
        flat = self.flat()
        return ", ".join(f"{k}={v}" for k, v in flat.items()) if flat else "as captured"


@dataclass(frozen=True, slots=True)
class TrialPoint(Params):
    """One measured trial, by its 1-based number."""

    number: int
    origin: Origin
    settings: TrialSettings

    def params(self) -> dict[str, Any]:
        return {
            "trial": self.number,
            "origin": self.origin,
            "server": dict(self.settings.server),
            "tables": {t: dict(o) for t, o in self.settings.tables.items()},
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        settings = TrialSettings(
            {str(k): str(v) for k, v in params["server"].items()},
            {str(t): {str(k): str(v) for k, v in o.items()} for t, o in params["tables"].items()},
        )
        return cls(int(params["trial"]), params["origin"], settings)


@dataclass(frozen=True, slots=True)
class TuneConfig(Config):
    """Everything a tune depends on; stored with the run, so ``--resume`` can rebuild it."""

    study: ClassVar[str] = "tune"

    profile: dict[str, Any] | None = None
    profile_file: str | None = None
    preset: str = "quick"
    objective: Objective = "dead"
    #: Wall-clock seconds the whole tune may take; None: no bound.
    budget_s: float | None = None
    #: Measured trials of the search (the three reference trials included).
    trials: int = 9
    #: Extra measurements of the best trial and of the current settings, for the verdict.
    confirm: int = 2
    #: Candidates the simulator scores in the first stage.
    candidates: int = 2000
    #: The space searched, resolved when the run started (so a resumed tune keeps it), and
    #: the settings the user fixed in --space (applied in every trial).
    space: tuple[Dimension, ...] = ()
    fixed: dict[str, str] = field(default_factory=dict)
    #: What the default space left out, and why (shown with the space).
    left_out: tuple[str, ...] = ()
    space_file: str | None = None
    scale: float = 1.0
    seconds: int = 60
    warmup: int = 10
    clients: int = 4
    jobs: int = 2
    seed: int = 0
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, TuneConfig]:
        """One preset: clients and threads suit the machine."""
        clients, jobs = machine_clients()
        return {"quick": cls(clients=clients, jobs=jobs)}

    @property
    def trial_seconds(self) -> int:
        """The load of one trial: warm-up and measured seconds."""
        return self.warmup + self.seconds

    def checked(self, chosen: Mapping[str, Any]) -> TuneConfig:
        at_least_one(
            seconds=self.seconds, clients=self.clients, jobs=self.jobs, trials=self.trials,
            candidates=self.candidates,
        )  # fmt: skip
        if self.profile is None:
            raise VacuumlabError("tune needs --profile FILE (from `vacuumlab capture`)")
        if self.objective not in OBJECTIVES:
            raise VacuumlabError(
                f"--objective takes {', '.join(OBJECTIVES)}, not {self.objective!r}"
            )
        if self.warmup < 0 or self.confirm < 0:
            raise VacuumlabError("--warmup and --confirm must not be negative")
        if self.trials < 3:
            raise VacuumlabError("--trials must be at least 3: the three reference trials")
        if not 0 < self.scale <= 1000:
            raise VacuumlabError(f"--scale must be above 0 and at most 1000, not {self.scale:g}")
        if self.budget_s is not None and (self.budget_s <= 0 or not math.isfinite(self.budget_s)):
            raise VacuumlabError("--budget must be a positive duration")
        shortest = self.trial_seconds + MIN_SETUP_S
        if self.budget_s is not None and self.budget_s < shortest:
            raise VacuumlabError(
                f"--budget {self.budget_s:g} s is shorter than one trial: {self.trial_seconds} s "
                f"of load plus at least {MIN_SETUP_S:g} s to build its tables"
            )
        return replace(self, jobs=min(self.jobs, self.clients))

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["space"] = [d.params() for d in self.space]
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        space = tuple(Dimension.from_params(d) for d in params.get("space", ()))
        known = {k: v for k, v in params.items() if k in cls.__dataclass_fields__}
        return cls(
            **(
                known
                | {
                    "space": space,
                    "fixed": dict(params.get("fixed", {})),
                    "left_out": tuple(params.get("left_out", ())),
                }
            )
        )
