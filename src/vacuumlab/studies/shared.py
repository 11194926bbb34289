"""What several studies do on their target: a CHECKPOINT, so a step starts with clean buffers
and pays its own writes."""

from __future__ import annotations

import contextlib

import psycopg

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session


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
