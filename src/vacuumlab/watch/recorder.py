"""``vacuumlab watch --record``: each refresh appended to the results store as one point of a
run of kind ``watch`` (the layout: records/watch_spec.py), one transaction each, as the studies
record theirs (store.py), so a report can be drawn from the store alone while the watch goes
on or after it ends.

The store's SQLite connection belongs to the thread that opened it: the recorder opens it at
the first refresh it is given, in the refresher's thread, and closes it there.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.live import Refresh
from vacuumlab.records.snapshot import Snapshot
from vacuumlab.records.watch_spec import (
    SNAPSHOT,
    STUDY,
    error_metrics,
    pack_snapshot,
    view_metrics,
)
from vacuumlab.store import Store


class Recorder:
    """Appends refreshes to the store at ``path``; a run is created at the first refresh that
    read the server (its version and settings go into the run)."""

    def __init__(self, path: Path, params: dict[str, Any]) -> None:
        self.path = path
        self.params = params
        self.store: Store | None = None
        self.run_id: int | None = None
        self.refreshes = 0
        self.error: str | None = None  # why recording stopped, if it did

    @classmethod
    def check(cls, path: Path, every_s: float, target: str) -> Recorder:
        """A recorder for ``path``, opened once now so a store that cannot be used is said at
        the start, in one line."""
        Store.open(path).close()
        return cls(path, {"target": target, "refresh_s": every_s})

    def append(self, refresh: Refresh) -> None:
        """Record one refresh; a store that fails stops the recording, not the watch."""
        if self.error is not None:
            return
        try:
            self._append(refresh)
        except VacuumlabError as exc:
            self.error = str(exc)

    def _append(self, refresh: Refresh) -> None:
        view, snapshot = refresh.view, refresh.snapshot
        if self.run_id is None:
            if view is None or snapshot is None:
                return  # nothing to say of the server yet
            self.run_id = self._create(snapshot)
        assert self.store is not None
        self.refreshes += 1
        if view is not None and snapshot is not None:
            started = view.taken_at
            metrics = view_metrics(
                view, snapshot, seconds=refresh.seconds, statements=refresh.statements
            )
            metrics[SNAPSHOT] = pack_snapshot(snapshot)
        else:
            started = datetime.now(UTC) - timedelta(seconds=refresh.seconds)
            metrics = error_metrics(refresh.error or "no view", seconds=refresh.seconds)
        self.store.record_point(
            self.run_id,
            {"refresh": self.refreshes},
            0,
            metrics,
            started_at=started,
            ended_at=started + timedelta(seconds=refresh.seconds),
        )

    def _create(self, snapshot: Snapshot) -> int:
        self.store = Store.open(self.path)
        return self.store.create_run(
            STUDY,
            self.params | {"database": snapshot.server.database},
            server_version=snapshot.server.version,
            settings={s.name: s.setting for s in snapshot.settings},
        )

    def close(self) -> None:
        """End the run (done, or failed with the store's error) and close the store."""
        store, self.store = self.store, None
        if store is None:
            return
        try:
            if self.run_id is not None:
                if self.error is None:
                    store.finish_run(self.run_id, "done")
                else:
                    store.finish_run(self.run_id, "failed", note=self.error)
        except VacuumlabError as exc:
            self.error = self.error or str(exc)
        finally:
            store.close()
