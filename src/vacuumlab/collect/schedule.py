"""A 1 Hz poll of many tables at once, and of the autovacuum workers alive, for the
scheduling study.

Each tick asks two questions in a session of its own (``application_name`` =
``vacuumlab-sampler``): every study table's ``n_dead_tup``, ``autovacuum_count``,
``last_autovacuum`` and (18+) ``total_autovacuum_time`` in one query, and the
``backend_start`` of each autovacuum worker alive (its launch). Why not the server log or
``pg_stat_progress_vacuum``: the counters give every vacuum's end to the millisecond and, on
18, its start (the end less the time it added), on a named server as on the sandbox, with no
access to the log; a 5 Hz progress poll would miss the 20 ms vacuums of small tables under
the default cost budget. A tick that fails is skipped and counted, never fatal.
"""

from __future__ import annotations

from datetime import datetime

import psycopg

from vacuumlab.collect.sampler import Periodic
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session
from vacuumlab.records.scheduling import TableSample
from vacuumlab.records.snapshot import AutovacuumWorker


class TablesSampler(Periodic[TableSample]):
    """Samples ``tables`` of ``schema`` every ``interval`` seconds until :meth:`stop`, and
    notes every autovacuum worker it sees start."""

    def __init__(self, dsn: str, schema: str, tables: list[str], interval: float = 1.0) -> None:
        params: dict[str, object] = {"schema": schema, "tables": tables}
        super().__init__(dsn, "schedule_sample", params, TableSample, interval=interval)
        self.launches: dict[int, datetime] = {}  # pid -> backend_start

    @property
    def samples(self) -> list[TableSample]:
        return self._samples

    def _take(self, session: Session) -> None:
        try:
            rows = session.fetch("schedule_sample", TableSample, self._params)
            workers = session.fetch("autovacuum_workers", AutovacuumWorker)
        except (psycopg.Error, VacuumlabError):
            self.failed += 1
            return
        self._samples.extend(rows)
        for worker in workers:
            # A pid is reused only by another process: key it with its start.
            self.launches.setdefault(hash((worker.pid, worker.backend_start)), worker.backend_start)
