"""Settings steps, as ``run churn --steps`` and ``run custom --steps`` take them: a TOML file
of ``[[step]]`` tables, each applied server-wide or to the study's tables only (as storage
parameters), and checked against the server before anything is measured.

A step runs on the server's settings as they were before the run plus its own: nothing an
earlier step set stays in force (``Target.apply_step``; on a table the studies keep, such as
churn's ``--continuous`` one, :func:`reset_on_tables`). What a step ran with is read back just
before its load (:func:`read_in_force`) and stored with its point."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.knobs import KNOBS
from vacuumlab.pg.connect import connect
from vacuumlab.pg.settings import load_specs, to_base_unit
from vacuumlab.pg.target import Target
from vacuumlab.records.churn import ChurnPoint, Step
from vacuumlab.records.churn_spec import reloption_metric, setting_metric
from vacuumlab.store import Metric
from vacuumlab.studies.base import SCHEMA, Planned, work_session

#: Settings a step may set on a table itself (reloptions); the rest are server-wide only.
TABLE_SETTINGS = frozenset(name for name, k in KNOBS.items() if "table" in k.scopes)


def load_steps(path: Path) -> tuple[Step, ...]:
    """Steps from a TOML file: ``[[step]]`` tables with ``name``, ``scope`` and ``settings``.

    Example::

        [[step]]
        name = "aggressive queue"
        scope = "table"            # or "server" (the default)
        settings = { autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0 }
    """
    data = read_toml(path)
    entries = data.get("step")
    if not isinstance(entries, list) or not entries:
        raise VacuumlabError(f"{path} has no [[step]] tables")
    return tuple(_step(entry, number, path) for number, entry in enumerate(entries, start=1))


def read_toml(path: Path) -> dict[str, object]:
    """A TOML file the user wrote (steps, a tune's space), or a one-line error."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise VacuumlabError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise VacuumlabError(f"{path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise VacuumlabError(f"{path} is not valid TOML: {exc}") from None


def _step(entry: object, number: int, path: Path) -> Step:
    where = f"{path}: step {number}"
    if not isinstance(entry, dict):
        raise VacuumlabError(f"{where} is not a table")
    name, scope, settings = entry.get("name"), entry.get("scope", "server"), entry.get("settings")
    if not isinstance(name, str) or not name.strip():
        raise VacuumlabError(f"{where} has no name")
    if scope not in ("server", "table"):
        raise VacuumlabError(f'{where}: scope must be "server" or "table", not {scope!r}')
    if not isinstance(settings, dict) or not settings:
        raise VacuumlabError(f"{where} has no settings")
    values = {str(k): _toml_value(v, where) for k, v in settings.items()}
    return Step(name.strip(), values, scope)


def _toml_value(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float | str):
        return str(value)
    raise VacuumlabError(f"{where}: setting values must be strings, numbers or booleans")


def check_steps(target: Target, steps: Iterable[Step]) -> None:
    """Every step's settings checked against the server before anything is measured."""
    for step in steps:
        if step.scope == "server":
            target.check(step.settings)
        else:
            check_table_settings(target.dsn, step)


def check_table_settings(dsn: str, step: Step) -> None:
    unknown = sorted(set(step.settings) - TABLE_SETTINGS)
    if unknown:
        raise VacuumlabError(
            f"step {step.name!r}: {', '.join(unknown)} cannot be set per table; "
            'use scope = "server"'
        )
    # Let PostgreSQL judge the values, on a temporary table that vanishes with the session.
    with work_session(dsn) as session:
        try:
            session.execute(
                sql.SQL("CREATE TEMP TABLE vacuumlab_check (id int) WITH ({})").format(
                    reloptions(dsn, step)
                )
            )
        except psycopg.Error as exc:
            raise VacuumlabError(f"step {step.name!r}: {exc.diag.message_primary}") from None


def reloptions(dsn: str, step: Step) -> sql.Composed:
    """``name = value`` pairs; values with units become the number PostgreSQL expects,
    because reloptions take no units (``10ms`` is ``10`` for cost_delay)."""
    with connect(dsn) as session:
        specs = load_specs(session)
    parts = []
    for name, value in step.settings.items():
        spec = specs.get(name)
        if spec is not None and spec.vartype in ("integer", "real"):
            number = to_base_unit(spec, value)
            value = str(int(number)) if number.is_integer() else str(number)
        parts.append(sql.SQL("{} = {}").format(sql.Identifier(name), sql.Literal(value)))
    return sql.SQL(", ").join(parts)


def set_on_tables(dsn: str, step: Step, tables: Iterable[str]) -> None:
    """A table-scope step's settings as storage parameters of each of the study's tables."""
    options = reloptions(dsn, step)
    with work_session(dsn) as session:
        for table in tables:
            session.execute(
                sql.SQL("ALTER TABLE {} SET ({})").format(sql.Identifier(SCHEMA, table), options)
            )


def reset_on_tables(dsn: str, names: Iterable[str], tables: Iterable[str]) -> None:
    """Storage parameters an earlier step set on tables a run keeps, unset again."""
    options = sql.SQL(", ").join(sql.Identifier(name) for name in sorted(names))
    with work_session(dsn) as session:
        for table in tables:
            session.execute(
                sql.SQL("ALTER TABLE {} RESET ({})").format(sql.Identifier(SCHEMA, table), options)
            )


@dataclass(frozen=True, slots=True)
class _Setting:
    name: str
    setting: str | None


@dataclass(frozen=True, slots=True)
class _Options:
    name: str
    heap_options: list[str]
    toast_options: list[str]


def read_in_force(dsn: str, steps: Iterable[Step], tables: Iterable[str]) -> dict[str, Metric]:
    """What a step runs with, read back from the server as a new session (an autovacuum
    worker) sees it: every autovacuum_* and vacuum_* setting and any other a step of the run
    names, and the storage parameters of each of ``tables`` and of its TOAST relation, as the
    point's metrics (``records/churn_spec.py``)."""
    names = sorted({name.strip().lower() for step in steps for name in step.settings})
    with connect(dsn) as session:
        settings = session.fetch("settings_in_force", _Setting, {"names": names})
        options = session.fetch(
            "table_options", _Options, {"schema": SCHEMA, "tables": sorted(set(tables))}
        )
    metrics: dict[str, Metric] = {setting_metric(s.name): s.setting for s in settings}
    for row in options:
        for prefix, found in (("", row.heap_options), ("toast.", row.toast_options)):
            for option in found:
                name, _, value = option.partition("=")
                metrics[reloption_metric(row.name, prefix + name)] = value
    return metrics


def plan_steps(steps: tuple[Step, ...], repeat: int) -> list[Planned[ChurnPoint]]:
    """Every step once per repetition, the repetitions one after another."""
    return [
        Planned(ChurnPoint(n, step), rep)
        for rep in range(repeat)
        for n, step in enumerate(steps, start=1)
    ]


def step_label(planned: Planned[ChurnPoint], steps: int, repeat: int) -> str:
    """``step 2/6: name``, with the repetition when there are several."""
    point = planned.point
    label = f"step {point.number}/{steps}: {point.step.name}"
    if repeat > 1:
        label += f" (repetition {planned.repetition + 1}/{repeat})"
    return label
