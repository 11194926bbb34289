"""The TOAST study's parameters: its config (stored with the run) and its two kinds of point,
a storage table and an arm of the parallel experiment.

Limits assume 8 kB pages (the study checks ``block_size``) and are PostgreSQL's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Literal, get_args

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, Params, at_least_one

Storage = Literal["extended", "main", "external", "plain"]
STORAGES: tuple[Storage, ...] = ("extended", "main", "external", "plain")

#: The three ways of vacuuming the parallel experiment's table (see studies/toast_parallel.py).
Arm = Literal["sequential", "overlapping", "separate"]
ARMS: tuple[Arm, ...] = ("sequential", "overlapping", "separate")

#: TOAST_TUPLE_TARGET for 8 kB pages (access/heaptoast.h): the default toast_tuple_target.
DEFAULT_TOAST_TUPLE_TARGET = 2032
#: The reloption's range (access/common/reloptions.c): 128 to TOAST_TUPLE_TARGET_MAIN.
MIN_TOAST_TUPLE_TARGET = 128
MAX_TOAST_TUPLE_TARGET = 8160
#: The widest value ``plain`` storage can hold: MaxHeapTupleSize (8160 for 8 kB pages) less
#: the 24-byte tuple header and the row's other 12 bytes (id, age, the value's 4-byte length).
PLAIN_MAX_WIDTH = 8160 - 24 - 12
#: Widest value the study generates (1 MB): wider rows only make every step slower.
MAX_WIDTH = 1_000_000
MIN_WIDTH = 64
MIN_ROWS = 1_000


@dataclass(frozen=True, slots=True)
class ToastConfig(Config):
    """Everything a run depends on; stored with the run so ``--resume`` can rebuild it."""

    study: ClassVar[str] = "toast"

    preset: str = "quick"
    rows: int = 50_000
    width: int = 4096
    storages: tuple[Storage, ...] = STORAGES
    toast_tuple_targets: tuple[int, ...] = (DEFAULT_TOAST_TUPLE_TARGET, 128)
    repeat: int = 1
    parallel: bool = True
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, ToastConfig]:
        # quick: 4 kB values, one main/plain row per heap page, the worst case for inline
        # storage. paper: the post's sizes (1302 MB for 500,000 rows, both heap-inline and out
        # of line) mean three rows per page either way: values of 2,002 to 2,642 bytes; 2,600
        # bytes reproduces them.
        return {"quick": cls(), "paper": cls(preset="paper", rows=500_000, width=2600)}

    def checked(self, chosen: Mapping[str, Any]) -> ToastConfig:
        """Plain storage is left out of a preset's storages when the width cannot be stored
        in a page."""
        config = self
        if "storages" not in chosen and self.width > PLAIN_MAX_WIDTH:
            config = replace(self, storages=tuple(s for s in self.storages if s != "plain"))
        config.check()
        return config

    def check(self) -> None:
        """Refuse what cannot be measured, with a one-line reason."""
        unknown = sorted(set(self.storages) - set(get_args(Storage)))
        if unknown or len(set(self.storages)) != len(self.storages):
            raise VacuumlabError(f"storages are {', '.join(STORAGES)}, each once; not {unknown}")
        if not self.storages and not self.parallel:
            raise VacuumlabError("nothing to measure: choose a storage or the parallel experiment")
        if "plain" in self.storages and self.width > PLAIN_MAX_WIDTH:
            raise VacuumlabError(
                f"plain storage keeps the value in the heap tuple, which must fit one 8 kB page: "
                f"--width is at most {PLAIN_MAX_WIDTH:,} bytes with plain, not {self.width:,}"
            )
        self._check_numbers()

    def _check_numbers(self) -> None:
        targets = self.toast_tuple_targets
        if not targets or any(
            not MIN_TOAST_TUPLE_TARGET <= t <= MAX_TOAST_TUPLE_TARGET for t in targets
        ):
            raise VacuumlabError(
                f"toast_tuple_target is between {MIN_TOAST_TUPLE_TARGET} and "
                f"{MAX_TOAST_TUPLE_TARGET} bytes (PostgreSQL's range)"
            )
        if len(set(targets)) != len(targets):
            raise VacuumlabError("each toast_tuple_target once")
        if not MIN_WIDTH <= self.width <= MAX_WIDTH:
            raise VacuumlabError(f"--width is between {MIN_WIDTH} and {MAX_WIDTH:,} bytes")
        if self.rows < MIN_ROWS:
            raise VacuumlabError(f"--rows must be at least {MIN_ROWS:,}")
        at_least_one(repeat=self.repeat)

    def variants(self) -> list[tuple[Storage, int]]:
        """(storage, toast_tuple_target) of every table: the targets apply to extended, the
        storage that both compresses and moves out of line, as in the post's example."""
        return [
            (storage, target)
            for storage in self.storages
            for target in (
                self.toast_tuple_targets if storage == "extended" else (DEFAULT_TOAST_TUPLE_TARGET,)
            )
        ]


@dataclass(frozen=True, slots=True)
class StoragePoint(Params):
    """A table of one storage (and toast_tuple_target): UPDATE, VACUUM, FREEZE."""

    storage: Storage
    toast_tuple_target: int
    rows: int
    width: int
    experiment: ClassVar[str] = "storage"

    def params(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "storage": self.storage,
                "toast_tuple_target": self.toast_tuple_target, "rows": self.rows,
                "width": self.width}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ParallelPoint(Params):
    """One arm of the parallel experiment: how heap and TOAST are vacuumed."""

    arm: Arm
    rows: int
    width: int
    experiment: ClassVar[str] = "parallel"

    def params(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "arm": self.arm, "rows": self.rows,
                "width": self.width}  # fmt: skip


ToastPoint = StoragePoint | ParallelPoint


def toast_point(params: Mapping[str, Any]) -> ToastPoint:
    """A stored point's record, by its experiment."""
    if params["experiment"] == ParallelPoint.experiment:
        return ParallelPoint.from_params(params)
    return StoragePoint.from_params(params)


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of one session of the parallel experiment in one state, from consecutive
    samples: what the study writes into a point's ``timeline_json`` and the report draws."""

    session: str
    start: float
    end: float
    category: str  # working, truncating, lock (a heavyweight lock wait), truncate-wait
    phase: str | None
    wait_event: str | None  # "type:event" for lock and truncate waits
    lock_mode: str | None
    relation: str | None  # "heap", "toast" or an oid
    granted: bool | None  # False while queued for lock_mode
    blocked_by: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """As stored in ``timeline_json``: times rounded to 0.1 ms, blockers as a list."""
        data = asdict(self)
        data["start"], data["end"] = round(self.start, 4), round(self.end, 4)
        data["blocked_by"] = list(self.blocked_by)
        return data

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Span:
        """A stored span; fields a span did not store read as None."""
        return cls(
            session=str(raw["session"]), start=float(raw["start"]), end=float(raw["end"]),
            category=str(raw["category"]), phase=raw.get("phase"),
            wait_event=raw.get("wait_event"), lock_mode=raw.get("lock_mode"),
            relation=raw.get("relation"), granted=raw.get("granted"),
            blocked_by=tuple(str(b) for b in raw.get("blocked_by") or ()),
        )  # fmt: skip
