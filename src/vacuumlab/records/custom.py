"""The custom study's parameters: a user's own workload, as a captured profile or as a schema
file and pgbench scripts, under settings steps. The profile and the files' text are stored
with the run, so ``--resume`` replays the same workload even when the files have changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Self

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.churn import Step, machine_clients, steps_params
from vacuumlab.records.params import Config, at_least_one

#: The step a run has without ``--steps``: the server's settings as they are.
AS_IS = Step("the server's settings", {})


@dataclass(frozen=True, slots=True)
class Script:
    """One pgbench script of a ``--script`` run (``-f file@weight``): its text, as stored."""

    name: str
    text: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class CustomConfig(Config):
    """Everything a custom run depends on; stored with the run, so ``--resume`` can rebuild it.

    Exactly one of ``profile`` (a profile's JSON, as :class:`~vacuumlab.records.profile.Profile`
    dumps it) and ``schema`` (with ``scripts``) is set.
    """

    study: ClassVar[str] = "custom"

    steps: tuple[Step, ...] = (AS_IS,)
    preset: str = "quick"
    #: Seconds of load per step after the warm-up.
    seconds: int = 120
    warmup: int = 10
    #: The captured rows and rates times this.
    scale: float = 1.0
    #: Total transactions per second of a ``--script`` run; None: unthrottled.
    rate: float | None = None
    clients: int = 4
    jobs: int = 2
    repeat: int = 1
    profile: dict[str, Any] | None = None
    profile_file: str | None = None
    schema: str | None = None
    schema_file: str | None = None
    scripts: tuple[Script, ...] = ()
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, CustomConfig]:
        """One preset: clients and threads suit the machine."""
        clients, jobs = machine_clients()
        return {"quick": cls(clients=clients, jobs=jobs)}

    @property
    def replays_profile(self) -> bool:
        return self.profile is not None

    def checked(self, chosen: Mapping[str, Any]) -> CustomConfig:
        at_least_one(seconds=self.seconds, clients=self.clients, jobs=self.jobs, repeat=self.repeat)
        if self.warmup < 0:
            raise VacuumlabError("--warmup must not be negative")
        if (self.profile is None) == (self.schema is None):
            raise VacuumlabError("give either --profile FILE, or --schema FILE with --script FILE")
        if self.profile is None and not self.scripts:
            raise VacuumlabError("--schema needs at least one --script FILE[@WEIGHT]")
        if self.profile is not None and (self.scripts or self.rate is not None):
            raise VacuumlabError("--script and --rate go with --schema, not with --profile")
        if not 0 < self.scale <= 1000:
            raise VacuumlabError(f"--scale must be above 0 and at most 1000, not {self.scale:g}")
        if self.rate is not None and self.rate <= 0:
            raise VacuumlabError(f"--rate must be above 0, not {self.rate:g}")
        if self.scripts and sum(s.weight for s in self.scripts) <= 0:
            raise VacuumlabError("the scripts' weights add up to 0")
        return replace(self, jobs=min(self.jobs, self.clients))

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = steps_params(self.steps)
        data["scripts"] = [asdict(s) for s in self.scripts]
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        steps = tuple(Step(s["name"], dict(s["settings"]), s["scope"]) for s in params["steps"])
        scripts = tuple(Script(s["name"], s["text"], int(s["weight"])) for s in params["scripts"])
        known = {k: v for k, v in params.items() if k in cls.__dataclass_fields__}
        return cls(**(known | {"steps": steps, "scripts": scripts}))
