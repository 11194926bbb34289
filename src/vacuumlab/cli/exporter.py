"""``vacuumlab exporter``: autovacuum's state as Prometheus metrics, read-only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vacuumlab.cli.options import DataDir, DsnArg, err, sandbox_dsn
from vacuumlab.errors import VacuumlabError

if TYPE_CHECKING:
    from vacuumlab.records.live import LiveView, Refresh

DEFAULT_LISTEN = "127.0.0.1:9187"
#: Relations with per-table series by default: enough for the tables that matter, few enough
#: for Prometheus (nine series each).
DEFAULT_MAX_TABLES = 500


def exporter_command(
    dsn: DsnArg = None,
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            help="Address and port to serve /metrics on; :9187 listens on every interface.",
            metavar="HOST:PORT",
        ),
    ] = DEFAULT_LISTEN,
    max_tables: Annotated[
        int,
        typer.Option(
            "--max-tables",
            min=1,
            help="Export per-table series for at most this many relations: those nearest "
            "autovacuum (running, due, then the soonest predicted and the closest to a "
            "threshold).",
            metavar="N",
        ),
    ] = DEFAULT_MAX_TABLES,
    schema: Annotated[
        list[str] | None,
        typer.Option(
            "--schema",
            help="Export only the tables of this schema; repeat for more [default: every schema].",
            show_default=False,
            metavar="SCHEMA",
        ),
    ] = None,
    web_config: Annotated[
        Path | None,
        typer.Option(
            "--web-config",
            help="Serve over TLS and ask for a password as this file says: the web "
            "configuration file of postgres_exporter and node_exporter (tls_server_config, "
            "basic_auth_users with bcrypt hashes), e.g. --web-config /etc/vacuumlab/web.yml "
            "[default: plain HTTP, no password].",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    all_databases: Annotated[
        bool,
        typer.Option(
            "--all-databases",
            help="Read every database of the server that accepts connections at each scrape, "
            "one after another, with the DSN's other settings; --max-tables then counts "
            "across the server. One the role may not connect to exports "
            "vacuumlab_database_up 0 and is named once on stderr, e.g. vacuumlab exporter "
            "postgresql://monitor@db/postgres --all-databases [default: the DSN's database "
            "only].",
            show_default=False,
        ),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Serve autovacuum's state as Prometheus metrics: per table, dead tuples and inserts
    against their effective thresholds, the seconds to the next vacuum the simulator
    predicts and the last vacuum's duration; per server, workers busy and available, the
    oldest horizon holder, and the xid and mxid ages against their limits. Each scrape takes
    one read-only snapshot (a fixed number of statements), or one of each database with
    --all-databases. Works as a role with pg_monitor.

    Example: vacuumlab exporter postgresql://monitor@db/app --listen 0.0.0.0:9187 --schema public

    Every database: vacuumlab exporter postgresql://monitor@db/postgres --all-databases

    Over TLS, with passwords: vacuumlab exporter "$DSN" --listen :9187 --web-config web.yml

    Grafana: import docs/grafana-dashboard.json.
    """
    from vacuumlab.pg.connect import redact
    from vacuumlab.watch.all_databases import ServerSource
    from vacuumlab.watch.exporter import Collector, Listen, exposure_warning, serve
    from vacuumlab.watch.source import Refreshes, Source
    from vacuumlab.watch.view import Pick
    from vacuumlab.watch.webconfig import WebConfig

    where = Listen.parse(listen)
    web = WebConfig() if web_config is None else WebConfig.load(web_config)
    pick = Pick(schemas=frozenset(schema or ()), limit=max_tables)
    server = dsn or sandbox_dsn(data_dir)
    source: Refreshes = (
        ServerSource(server, pick=pick) if all_databases else Source(server, pick=pick)
    )
    source.open()  # a wrong DSN, host or password: say so now, not at the first scrape
    collector = Collector(source, on_refresh=_Reporter())
    http, thread = serve(collector, where, web)
    port = http.server_address[1]
    try:
        if (warning := exposure_warning(Listen(where.host, port), web)) is not None:
            sys.stderr.write(f"warning: {warning}\n")  # one line: a console would wrap it
        err.print(
            f"· serving {where.url(port, tls=web.tls is not None)}"
            f"{' (basic auth)' if web.users else ''} for {redact(source.dsn)}"
            f"{' (every database)' if all_databases else ''} (Ctrl-C stops)"
        )
        while thread.is_alive():
            thread.join(1.0)
    finally:
        http.shutdown()
        http.server_close()
        collector.close()
    raise VacuumlabError("the HTTP server stopped")


class _Reporter:
    """Says on stderr when scrapes start failing and when they work again, once each; and so
    for each database that cannot be read (--all-databases), with the fix."""

    def __init__(self) -> None:
        self.failing = False
        self.unread: set[str] = set()

    def __call__(self, refresh: Refresh) -> None:
        if refresh.error is not None and not self.failing:
            err.print(f"· scrape failed, exporting vacuumlab_up 0: {refresh.error}")
        elif refresh.error is None and self.failing:
            err.print("· scrapes read the server again")
        self.failing = refresh.error is not None
        if refresh.view is not None:
            self._databases(refresh.view)

    def _databases(self, view: LiveView) -> None:
        unread = view.unread
        for name in sorted(self.unread & {d.database for d in view.databases}):
            sys.stderr.write(f"· database {name} read again\n")
        for name, note in unread.items():
            if name not in self.unread:
                fix = f" (fix: {note.fix})" if note.fix else ""
                # One line, as written: a console would wrap it, and rich would read a
                # database named [bold] as markup.
                sys.stderr.write(
                    f"· database {name} not read, exporting vacuumlab_database_up 0: "
                    f"{note.reason}{fix}\n"
                )
        self.unread = set(unread)
