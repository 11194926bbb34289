"""What several studies do on their target: a CHECKPOINT, so a step starts with clean buffers
and pays its own writes; a table of their own, created afresh."""

from __future__ import annotations

import contextlib

import psycopg
from psycopg import sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session
from vacuumlab.studies.base import SCHEMA


def checkpoint(s: Session) -> None:
    """A CHECKPOINT the study cannot do without."""
    try:
        s.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        raise VacuumlabError(
            "the study needs CHECKPOINT: a superuser or a member of pg_checkpoint (15+)"
        ) from None


def checkpoint_if_allowed(s: Session) -> None:
    """A CHECKPOINT where the role may (superuser or pg_checkpoint, 15+); without it the run
    goes on."""
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        s.execute("CHECKPOINT")


def recreate(s: Session, table: sql.Identifier, definition: sql.Composable) -> None:
    """Drop the study's ``table`` (in schema vacuumlab) and create it afresh as
    ``definition``: its columns and options."""
    s.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
    s.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
    s.execute(sql.SQL("CREATE TABLE {} {}").format(table, definition))
