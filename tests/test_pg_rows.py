"""Relations built from the tables question's rows without validating each row are the records
validation makes, field for field and type for type; a row validation would refuse still
fails, and columns whose types prove nothing are validated whole."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from helpers.db import execute
from helpers.snapshot import SIZED
from vacuumlab.collect.snapshot import sized_query
from vacuumlab.pg.connect import connect, records_of
from vacuumlab.pg.rows import plan
from vacuumlab.records.snapshot import Relation

CHANGED = (
    "CREATE TABLE tuned (id int PRIMARY KEY, body text) WITH "
    "(autovacuum_vacuum_scale_factor = 0.01, toast.autovacuum_enabled = off)",
    "INSERT INTO tuned SELECT i, md5(i::text) FROM generate_series(1, 200) i",
    "DELETE FROM tuned WHERE id <= 50",
    "VACUUM ANALYZE tuned",
)


def _rows(dsn: str) -> tuple[list[str], list[int], list[tuple[Any, ...]]]:
    with connect(dsn) as session:
        text = sized_query(session, "tables", "measured")
        params = {"measure": True, "parts": 1, "part": 0}
        (names, oids, rows), *rest = session.chunks(text, params, size=100_000, binary=True)
    assert not rest
    return names, oids, rows


def test_relations_built_directly_are_the_validated_ones(embedded_database: str) -> None:
    execute(embedded_database, *SIZED, *CHANGED)
    names, oids, rows = _rows(embedded_database)
    assert plan(Relation, tuple(names), tuple(oids)) is not None, "the direct path must apply"
    direct = records_of(Relation, names, rows, oids)
    validated = records_of(Relation, names, rows)
    assert direct == validated
    for built, checked in zip(direct, validated, strict=True):
        for field in Relation.model_fields:
            assert type(getattr(built, field)) is type(getattr(checked, field)), field
        assert built.model_dump_json() == checked.model_dump_json()
    tuned = next(r for r in direct if r.name == "tuned")
    assert tuned.reloptions == {"autovacuum_vacuum_scale_factor": "0.01"}
    assert tuned.last_vacuum is not None
    assert tuned.last_vacuum.tzinfo is not None
    untouched = [r for r in direct if not r.reloptions]
    assert len({id(r.reloptions) for r in untouched}) == len(untouched)  # no shared mapping


def test_a_row_validation_refuses_still_fails(embedded_database: str) -> None:
    execute(embedded_database, SIZED[0])
    names, oids, rows = _rows(embedded_database)
    kind, oid = names.index("kind"), names.index("oid")
    bad_kind = [(*rows[0][:kind], "x", *rows[0][kind + 1 :])]
    with pytest.raises(ValidationError):
        records_of(Relation, names, bad_kind, oids)
    no_oid = [(None, *rows[0][oid + 1 :])]
    with pytest.raises(ValidationError):
        records_of(Relation, names, no_oid, oids)


def test_columns_that_prove_nothing_are_validated(embedded_database: str) -> None:
    execute(embedded_database, SIZED[0])
    names, oids, rows = _rows(embedded_database)
    at = names.index("reltuples")
    numeric = [*oids[:at], 1700, *oids[at + 1 :]]  # numeric: psycopg gives a Decimal
    assert plan(Relation, tuple(names), tuple(numeric)) is None
    assert plan(Relation, (*names[:-1], "no_such_field"), tuple(oids)) is None
    assert records_of(Relation, names, rows, numeric) == records_of(Relation, names, rows)
