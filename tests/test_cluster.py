"""Points on Ray (``run --executor ray``): a local Ray with two ``vacuumlab_pg`` slots runs a
small cost-driver matrix two points at a time, with one worker killed mid-point, and stores
the same points as the one local loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.cli import run_cli
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.store import Point, Store
from vacuumlab.studies.cost_driver import CostDriverRun

ray = pytest.importorskip("ray")

from vacuumlab.lab import cluster  # noqa: E402

#: The issue's matrix, compact rows only: four points, two at a time.
MATRIX = dict(rows=20_000, dead_pcts=(10, 50), indexes=(0, 1), distributions=("compact",), repeat=1)
#: What a point's table and its vacuum must agree on, wherever it ran.
SAME = ("heap_pages", "dead_tuples", "dirty_pages", "tuples_removed", "pages_scanned")


def config() -> CostDriverConfig:
    return CostDriverConfig.from_preset("quick", **MATRIX)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(
        num_cpus=2, resources={cluster.RESOURCE: 2}, include_dashboard=False,
        log_to_driver=False, logging_level="ERROR",
    )  # fmt: skip
    yield
    ray.shutdown()


def kill_one_worker(run_id: int, killed: list[int], stop: threading.Event) -> None:
    """Kill the first worker process seen measuring a point of the run."""
    tracker = None
    while not stop.is_set() and not killed:
        try:
            tracker = tracker or ray.get_actor(cluster.tracker_name(run_id))
            pids = ray.get(tracker.pids.remote())
        except ValueError:  # the actor is not there yet
            pids = []
        if pids:
            time.sleep(1.0)  # well into its point: the sandbox is up
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        time.sleep(0.2)


@pytest.fixture(scope="module")
def runs(
    local_ray: None, sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Store, int, int, list[int]]:
    """The matrix on the local loop, then on Ray with one worker killed mid-point."""
    store = Store.open(tmp_path_factory.mktemp("cluster") / "results.sqlite")
    target = Target.of_sandbox(sandbox)
    sequential = CostDriverRun(config(), target, store).execute()
    on_ray = CostDriverRun(config(), target, store)
    on_ray.run_id = on_ray._create_run()
    on_ray.executor = cluster.RayExecutor()
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_one_worker, args=(on_ray.run_id, killed, stop))
    killer.start()
    try:
        on_ray.execute()
    finally:
        stop.set()
        killer.join()
    return store, sequential, on_ray.run_id, killed


def keyed(points: list[Point]) -> dict[tuple[str, int], Point]:
    return {(p.key, p.repetition): p for p in points}


@pytest.mark.slow
def test_ray_stores_the_same_points_as_the_local_loop(
    runs: tuple[Store, int, int, list[int]],
) -> None:
    store, sequential, on_ray, _ = runs
    local, fanned = keyed(store.points(sequential)), keyed(store.points(on_ray))
    assert len(local) == 4
    assert set(fanned) == set(local)
    for key, point in fanned.items():
        assert point.params == local[key].params
        for name in SAME:
            assert point.metrics[name] == local[key].metrics[name], (key, name)
        assert point.metrics["tuples_removed"] == point.metrics["dead_tuples"]
        assert point.metrics["vm_all_visible_after"] == point.metrics["heap_pages"]
    assert store.run(on_ray).status == "done"
    [execution] = store.executions(on_ray)
    assert execution.executor == "ray"
    assert list(execution.nodes.values()) == [2]
    assert execution.side_by_side


@pytest.mark.slow
def test_a_killed_worker_loses_only_its_point_and_ray_retries_it(
    runs: tuple[Store, int, int, list[int]],
) -> None:
    store, _, on_ray, killed = runs
    assert len(killed) == 1, "no worker was seen measuring a point"
    points = store.points(on_ray)
    assert len(points) == len({(p.key, p.repetition) for p in points}) == 4
    for point in points:
        assert point.metrics["tuples_removed"] == point.metrics["dead_tuples"]


def test_ray_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(VacuumlabError, match=r"pip install 'vacuumlab\[ray\]'"):
        cluster.load_ray()
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"


def test_ray_missing_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    block = (
        "import sys, importlib.abc\n"
        "class NoRay(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, NoRay())\n"
        "from vacuumlab.cli import main\n"
        "sys.argv = ['vacuumlab', *sys.argv[1:]]\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", block, "run", "cost-driver", "--executor", "ray",
         "--store", str(tmp_path / "r.sqlite")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --executor ray needs Ray: pip install 'vacuumlab[ray]'"
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["cost-driver", "--dsn", "postgresql://nobody@127.0.0.1:1/x"], "--dsn"),
        (["churn", "--continuous"], "--continuous steps share one table"),
        (["cost-driver", "--executor", "spark"], "say local, ray"),
    ],
)
def test_runs_that_cannot_fan_out_are_refused_in_one_line(
    args: list[str], says: str, tmp_path: Path
) -> None:
    executor = [] if "--executor" in args else ["--executor", "ray"]
    result = run_cli("run", *args, *executor, "--store", str(tmp_path / "r.sqlite"))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert says in line


def test_help_never_imports_ray() -> None:
    code = "import sys; from vacuumlab.cli import app; print('ray' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.slow
def test_a_tune_measures_its_trials_side_by_side_on_ray(
    local_ray: None, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The tuner's loop stays here and hands Ray a round of trials at a time (two slots):
    the references in two rounds, then the search's proposals."""
    from helpers.tune import queue_profile
    from vacuumlab.records.tune import TuneConfig
    from vacuumlab.records.tune_spec import kind
    from vacuumlab.studies.tune.run import TuneRun
    from vacuumlab.studies.tune.space import default_space

    profile = queue_profile(5_000, 300.0)
    space = default_space(profile, 180000)
    tune = TuneConfig.from_preset(
        "quick", profile=profile.model_dump(mode="json"), space=space.dimensions,
        fixed=space.fixed, trials=4, confirm=0, candidates=50, seconds=3, warmup=1, clients=2,
        jobs=1,
    )  # fmt: skip
    with Store.open(tmp_path / "results.sqlite") as store:
        run = TuneRun(tune, Target.of_sandbox(sandbox), store)
        run.executor = cluster.RayExecutor()
        run_id = run.execute()
        points = store.points(run_id)
        [execution] = store.executions(run_id)
    trials = sorted(p.params["trial"] for p in points if kind(p.params) == "trial")
    assert trials == [1, 2, 3, 4]
    assert execution.executor == "ray"
    assert execution.side_by_side
    assert [kind(p.params) for p in points].count("verdict") == 1
