"""Points of a study fanned out over a Ray cluster (``run --executor ray[:ADDRESS]``).

Each point is one Ray task asking for one ``vacuumlab_pg`` slot, so a node runs no more
servers than it declares. The task starts an embedded sandbox of its own in a fresh directory
on its node, sets the study up there (``validate``, ``prepare``), measures the point, stops the
sandbox and returns what it measured; the driver alone writes the store, one transaction per
point, in the order they finish. A task whose worker or node dies is retried by Ray
(``max_retries``); a point that fails is not stored, and ``--resume`` measures it later, with
this executor or the local loop.

Ray is an optional extra, imported only here and only when an executor is built, so the CLI
and every other command never load it. It never calls home: ``RAY_USAGE_STATS_ENABLED=0``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.registry import study as study_type
from vacuumlab.pg.sandbox import Sandbox, default_home
from vacuumlab.pg.target import Target
from vacuumlab.store import Store, point_key
from vacuumlab.studies.base import Measured, Planned, Silent, StudyRun, now

#: The custom resource a node declares: how many embedded servers it runs at once.
RESOURCE = "vacuumlab_pg"
#: Retries of a point whose worker process or node died (Ray's own system failures).
RETRIES = 3
INSTALL = "--executor ray needs Ray: pip install 'vacuumlab[ray]'"
#: How often the driver looks at what runs where, in seconds.
POLL_S = 0.5


def load_ray() -> ModuleType:
    """The ray module, with its usage statistics off; one line saying how to install it when
    it is missing."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    try:
        import ray
    except ImportError:
        raise VacuumlabError(INSTALL) from None
    return ray


def local_slots() -> int:
    """Slots a local Ray gives this machine: one server per two cores (a point keeps a
    backend and an autovacuum worker busy), at least one."""
    return max(1, (os.cpu_count() or 1) // 2)


def parse(spec: str) -> str | None:
    """``ray`` (a local Ray) or ``ray:ADDRESS`` (a running cluster) → the address or None."""
    name, _, address = spec.partition(":")
    if name != "ray" or (_ and not address):
        raise VacuumlabError(
            f"--executor {spec!r}: say local, ray (a Ray on this machine) or ray:ADDRESS"
        )
    return address or None


@dataclass
class RayExecutor:
    """Runs each point as a Ray task on a server of its own; see the module's doc."""

    address: str | None = None
    retries: int = RETRIES

    def __post_init__(self) -> None:
        self.ray = load_ray()
        self._started_ray = False

    @property
    def name(self) -> str:
        return "ray" if self.address is None else f"ray:{self.address}"

    def connect(self) -> None:
        """Join the cluster (or start a local Ray), unless this process already has."""
        if self.ray.is_initialized():
            return
        # Ray's own log lines (its start, its token) would break into the progress bar;
        # what goes wrong reaches the user as an error.
        options: dict[str, Any] = {
            "include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR,
        }  # fmt: skip
        if self.address is None:
            options["resources"] = {RESOURCE: local_slots()}
            options["num_cpus"] = os.cpu_count() or 1
        try:
            self.ray.init(address=self.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise VacuumlabError(f"cannot join Ray at {self.address}: {exc}") from None
        self._started_ray = True

    def close(self) -> None:
        if self._started_ray:
            self.ray.shutdown()
            self._started_ray = False

    def nodes(self) -> dict[str, int]:
        """Each live node that declares slots, and how many points it runs at once."""
        self.connect()
        slots = {
            _node_name(n): int(n["Resources"][RESOURCE])
            for n in self.ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get(RESOURCE, 0) >= 1
        }
        if not slots:
            raise VacuumlabError(
                f"no node of the Ray cluster declares {RESOURCE}: start its nodes with "
                f"ray start --resources='{{\"{RESOURCE}\": N}}' (docs/cluster.md)"
            )
        return slots

    def measure(self, run: StudyRun[Any, Any], todo: list[Planned[Any]]) -> None:
        """Submit every point, record each as it comes back; at the end, one line for the
        points that failed (they stay unmeasured for ``--resume``)."""
        why = run.side_by_side(run.config)
        if why is not None:
            raise VacuumlabError(f"--executor ray cannot run this: {why}")
        self.connect()
        assert run.run_id is not None
        ray = self.ray
        tracker = ray.remote(num_cpus=0)(Tracker).options(name=tracker_name(run.run_id)).remote()
        task = ray.remote(measure_remote).options(
            resources={RESOURCE: 1}, num_cpus=0, max_retries=self.retries,
            retry_exceptions=False, name="vacuumlab-point",
        )  # fmt: skip
        params = run.config.params()
        pending = {
            task.remote(run.study, params, planned, run.run_id, tracker): planned
            for planned in todo
        }
        run.progress.started(len(todo))
        failures: list[str] = []
        try:
            self._collect(run, pending, tracker, failures)
        except BaseException:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            raise
        if failures:
            raise VacuumlabError(
                f"{len(failures)} of {len(todo)} points failed and are not stored "
                f"(--resume {run.run_id} measures them): {failures[0]}"
            )

    def _collect(
        self,
        run: StudyRun[Any, Any],
        pending: dict[Any, Planned[Any]],
        tracker: Any,
        failures: list[str],
    ) -> None:
        ray = self.ray
        shown: dict[str, int] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            per_node = ray.get(tracker.running.remote())
            if per_node != shown:
                run.progress.running(per_node)
                shown = per_node
            for ref in ready:
                planned = pending.pop(ref)
                try:
                    done: PointDone = ray.get(ref)
                except (ray.exceptions.RayError, VacuumlabError) as exc:
                    failures.append(f"{run.label(planned)}: {_one_line(exc)}")
                    continue
                run.record(planned, done.measured, done.started, done.ended)


def _one_line(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    text = str(cause if isinstance(cause, VacuumlabError) else exc)
    return " ".join(text.split())[:300]


def _node_name(node: Mapping[str, Any]) -> str:
    """A node as progress and the run show it: its address and the start of its id (two
    nodes may share an address on one machine)."""
    return f"{node.get('NodeManagerAddress', '?')} {str(node.get('NodeID', ''))[:6]}"


def tracker_name(run_id: int) -> str:
    return f"vacuumlab-run-{run_id}"


class Tracker:
    """A Ray actor (no CPU) that knows which points run on which node and in which worker
    process, for the progress. A retried point replaces its entry."""

    def __init__(self) -> None:
        self.where: dict[str, tuple[str, int]] = {}

    def started(self, point: str, node: str, pid: int) -> None:
        self.where[point] = (node, pid)

    def finished(self, point: str) -> None:
        self.where.pop(point, None)

    def pids(self) -> list[int]:
        """The worker processes measuring a point now."""
        return [pid for _, pid in self.where.values()]

    def running(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node, _ in self.where.values():
            counts[node] = counts.get(node, 0) + 1
        return counts


@dataclass(frozen=True, slots=True)
class PointDone:
    """What a task returns: the measured point, when it ran, on which node."""

    measured: Measured
    started: datetime
    ended: datetime
    node: str


def measure_remote(
    study: str, params: Mapping[str, Any], planned: Planned[Any], run_id: int, tracker: Any
) -> PointDone:
    """One point on a server of its own, in a fresh directory under ``$VACUUMLAB_HOME/cluster``
    on this node: the sandbox is stopped and removed afterwards; raw files (pgbench logs) stay
    in ``runs/RUN`` of that directory."""
    import ray

    address = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
    node = _node_name({"NodeManagerAddress": address,
                       "NodeID": ray.get_runtime_context().get_node_id()})  # fmt: skip
    key = f"{point_key(planned.params)} #{planned.repetition}"
    tracker.started.remote(key, node, os.getpid())
    place = default_home() / "cluster" / f"run-{run_id}-{uuid.uuid4().hex[:8]}"
    try:
        run_type = study_type(study)
        config = run_type.config_type.from_params(dict(params))
        with (
            Store.open(place / "point.sqlite") as store,
            Sandbox.start(place / "sandbox") as sandbox,
        ):
            run = run_type(config, Target.of_sandbox(sandbox), store, Silent(), run_id=run_id)
            run.validate()
            run.prepare()
            started = now()
            measured = run.measure_point(planned)
            ended = now()
        return PointDone(measured, started, ended, node)
    finally:
        tracker.finished.remote(key)
        _tidy(place)


def _tidy(place: Path) -> None:
    """Remove the point's server and scratch store; keep its raw files, if it wrote any."""
    shutil.rmtree(place / "sandbox", ignore_errors=True)
    for scratch in place.glob("point.sqlite*"):
        scratch.unlink(missing_ok=True)
    if not any(place.rglob("*.*")):
        shutil.rmtree(place, ignore_errors=True)


def wait_for_nodes(ray: ModuleType, slots: int, within_s: float = 30.0) -> None:
    """Wait until the cluster declares ``slots`` slots in all (tests, the benchmark)."""
    deadline = time.monotonic() + within_s
    while ray.cluster_resources().get(RESOURCE, 0) < slots:
        if time.monotonic() > deadline:
            raise VacuumlabError(f"the Ray cluster did not reach {slots} {RESOURCE} slots")
        time.sleep(0.2)
