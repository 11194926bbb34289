"""Where a study runs: the sandbox, or a server the user names.

On a named server a study works only in the database the DSN names and only inside its own
schema; server-wide settings are changed only when the user allows ``ALTER SYSTEM``, and are
put back as they were when the study ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, connect
from vacuumlab.pg.install import PgBin
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.settings import (
    SettingChange,
    alter_system,
    load_specs,
    plan,
    wait_until_applied,
)


@dataclass(frozen=True, slots=True)
class Previous:
    """A setting as it was before a study changed it: its ALTER SYSTEM value, if any, and what
    ``pg_settings.setting`` read then (what putting it back should read again)."""

    name: str
    auto_conf_value: str | None  # None: it was not set by ALTER SYSTEM, so RESET restores it
    setting: str | None = None


@dataclass
class Target:
    """A server a study may change, and how to undo the changes."""

    dsn: str
    pgbench: Path
    label: str
    sandbox: Sandbox | None = None
    allow_alter_system: bool = True
    _previous: dict[str, Previous] = field(default_factory=dict)
    #: The settings the last steps left away from the baseline: the next step puts back
    #: those it does not name (and only those: putting back a postmaster setting restarts).
    _changed: set[str] = field(default_factory=set)

    @classmethod
    def of_sandbox(cls, sandbox: Sandbox) -> Target:
        return cls(sandbox.dsn, sandbox.bin.exe("pgbench"), "sandbox", sandbox)

    @classmethod
    def of_dsn(cls, dsn: str, *, allow_alter_system: bool, pg_bin: Path | None) -> Target:
        with connect(dsn) as session:  # fails early, with a one-line error, if unreachable
            version = session.info.major
        pgbench = PgBin.locate(pg_bin).exe("pgbench")
        return cls(dsn, pgbench, f"server (PostgreSQL {version})", None, allow_alter_system)

    def check(self, settings: Mapping[str, str | None]) -> list[SettingChange]:
        """Validate server-wide settings before anything runs; refuse what is not allowed."""
        if not settings:
            return []
        if not self.allow_alter_system:
            names = ", ".join(sorted(settings))
            raise VacuumlabError(
                f"the steps change server-wide settings ({names}): pass --allow-alter-system "
                '(they are restored afterwards) or use --steps with scope = "table"'
            )
        with connect(self.dsn) as session:
            changes = plan(load_specs(session), settings)
        if self.sandbox is None and any(c.needs_restart for c in changes):
            names = ", ".join(c.name for c in changes if c.needs_restart)
            raise VacuumlabError(
                f"{names} need a server restart; vacuumlab restarts only its sandbox"
            )
        return changes

    def apply(self, settings: Mapping[str, str]) -> None:
        """Apply server-wide settings on top of those in force and wait until the server
        shows them."""
        wanted = _named(settings)
        self._write(wanted)
        self._changed |= set(wanted)

    def apply_step(self, settings: Mapping[str, str]) -> None:
        """Run on the baseline (the server's settings before the run) plus ``settings``:
        every setting an earlier step changed that these do not name goes back to its value
        before the run (its old ALTER SYSTEM value, or RESET) in the same reload, and this
        returns once the server shows them all. Empty ``settings``: the baseline alone."""
        wanted = _named(settings)
        back = [self._previous[name] for name in sorted(self._changed - set(wanted))]
        request: dict[str, str | None] = {p.name: p.auto_conf_value for p in back}
        request.update(wanted)
        if request:
            self._write(request)
        # A reset names no value to wait for: the one pg_settings read before the run is it.
        baseline = [SettingChange(p.name, None, p.setting, False) for p in back]
        wait_until_applied(self.dsn, [c for c in baseline if c.expected is not None])
        self._changed = set(wanted)

    def _write(self, request: Mapping[str, str | None]) -> None:
        """ALTER SYSTEM every setting of ``request`` (None: RESET), one reload, and wait until
        the server shows the values set; remember each setting's value before the run."""
        if not request:
            return
        if self.sandbox is not None:
            self._remember(request)
            self.sandbox.configure(request)
            return
        changes = self.check(request)
        self._remember(request)
        with connect(self.dsn, read_only=False) as session:
            for change in changes:
                session.execute(alter_system(change))
            session.execute("SELECT pg_reload_conf()")
        wait_until_applied(self.dsn, changes)

    def _remember(self, settings: Mapping[str, str | None]) -> None:
        new = [name for name in settings if name not in self._previous]
        if not new:
            return
        with connect(self.dsn) as session:
            for previous in _previous_values(session, new):
                self._previous[previous.name] = previous

    def restore(self) -> None:
        """Put every changed setting back: its old ALTER SYSTEM value, or RESET."""
        if not self._previous:
            return
        request = {p.name: p.auto_conf_value for p in self._previous.values()}
        if self.sandbox is not None:
            self.sandbox.configure(request)
        else:
            with connect(self.dsn, read_only=False) as session:
                for name, value in request.items():
                    session.execute(alter_system(SettingChange(name, value, None, False)))
                session.execute("SELECT pg_reload_conf()")
        self._previous.clear()
        self._changed.clear()


def _named(settings: Mapping[str, str]) -> dict[str, str]:
    """Settings by the name pg_settings gives them (lower case), as the checks take them."""
    return {name.strip().lower(): value for name, value in settings.items()}


def _previous_values(session: Session, names: list[str]) -> list[Previous]:
    """Which settings came from postgresql.auto.conf (ALTER SYSTEM), and with what value.

    ``sourcefile`` is visible to superusers and pg_read_all_settings; for others it reads NULL,
    and the setting is reset rather than restored (ALTER SYSTEM needs such a role anyway).
    """
    text = queries.tag(
        "SELECT name, setting, source, sourcefile FROM pg_settings WHERE name = ANY(%s)",
        "previous_settings",
    )
    rows = session.query(text, dict, [names])
    return [
        Previous(
            row["name"],
            row["setting"]
            if row["source"] == "configuration file"
            and str(row["sourcefile"] or "").endswith("postgresql.auto.conf")
            else None,
            row["setting"],
        )
        for row in rows
    ]
