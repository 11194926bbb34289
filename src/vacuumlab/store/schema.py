"""The results store's SQLite schema: its version, its tables, and the table of executions
that stores made before it lack (docs/store.md describes every column)."""

from __future__ import annotations

SCHEMA_VERSION = 1


TABLES = ("meta", "runs", "points", "series")

# How a run's points were run, once per start or resume. Stores made before it lack the table:
# the first execution recorded creates it, and reading one without it finds none.
EXECUTIONS = """CREATE TABLE IF NOT EXISTS executions (
        run_id     INTEGER NOT NULL REFERENCES runs (id),
        executor   TEXT NOT NULL,
        nodes      TEXT NOT NULL,
        started_at TEXT NOT NULL
    )"""

SCHEMA = (
    """CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value NOT NULL
    )""",
    """CREATE TABLE runs (
        id                INTEGER PRIMARY KEY,
        study             TEXT NOT NULL,
        params            TEXT NOT NULL,
        server_version    TEXT NOT NULL,
        settings          TEXT NOT NULL,
        machine           TEXT NOT NULL,
        vacuumlab_version TEXT NOT NULL,
        started_at        TEXT NOT NULL,
        ended_at          TEXT,
        status            TEXT NOT NULL
                          CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
        note              TEXT
    )""",
    "CREATE INDEX runs_study ON runs (study)",
    """CREATE TABLE points (
        id         INTEGER PRIMARY KEY,
        run_id     INTEGER NOT NULL REFERENCES runs (id),
        key        TEXT NOT NULL,
        params     TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        metrics    TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at   TEXT NOT NULL,
        UNIQUE (run_id, key, repetition)
    )""",
    """CREATE TABLE series (
        point_id INTEGER NOT NULL REFERENCES points (id),
        metric   TEXT NOT NULL,
        t        REAL NOT NULL,
        value    REAL
    )""",
    "CREATE INDEX series_point_metric_t ON series (point_id, metric, t)",
    EXECUTIONS,
    # Append-only is enforced in the file itself, so ad-hoc tools cannot break it by accident.
    """CREATE TRIGGER points_append_only BEFORE UPDATE ON points
    BEGIN SELECT RAISE(ABORT, 'points are append-only'); END""",
    """CREATE TRIGGER series_append_only BEFORE UPDATE ON series
    BEGIN SELECT RAISE(ABORT, 'series are append-only'); END""",
    """CREATE TRIGGER runs_append_only
    BEFORE UPDATE OF id, study, params, server_version, settings, machine, vacuumlab_version,
                     started_at ON runs
    BEGIN SELECT RAISE(ABORT, 'runs change only status, ended_at and note'); END""",
)
