"""A snapshot whose sizes are estimates says so where the sizes are shown."""

from __future__ import annotations

from rich.console import Console

from helpers.advise import relation, snapshot
from vacuumlab.records.snapshot import Table
from vacuumlab.report.snapshot.text import tables_table


def shown(sizes: str) -> str:
    snap = snapshot(Table(heap=relation(1, "jobs", relpages=10), toast=None))
    table = tables_table(snap.model_copy(update={"sizes": sizes}), limit=5)
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_estimated_sizes_are_said_to_be_estimates() -> None:
    assert "sizes estimated from pg_class.relpages" in shown("estimated")
    assert "estimated" not in shown("measured")
