"""The Prometheus exporter: a custom collector that refreshes on each scrape, and the HTTP
server that serves it (prometheus_client's own, ``/metrics``).

Each scrape takes one snapshot through the :class:`~vacuumlab.watch.source.Source` (one
read-only session, reused, opened again after a lost connection) and turns the view into
metric families (watch/metrics.py). A scrape that cannot read the server exports
``vacuumlab_up 0`` and counts an error; the next scrape tries again. Scrapes arriving
together are served one after the other: they share the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import Metric

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.live import Refresh
from vacuumlab.watch.metrics import Scrape, families
from vacuumlab.watch.source import Source

DEFAULT_PORT = 9187  # postgres_exporter's: where Prometheus users look for PostgreSQL metrics


class Collector:
    """Refreshes the source on each scrape and yields the metric families of the view."""

    def __init__(
        self, source: Source, *, on_refresh: Callable[[Refresh], None] | None = None
    ) -> None:
        self.source = source
        self.on_refresh = on_refresh
        self.errors = 0
        self._lock = threading.Lock()

    def describe(self) -> list[Metric]:
        """Nothing: registering the collector must not scrape the server."""
        return []

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            refresh = self.source.refresh()
            self.errors += refresh.error is not None
            scrape = Scrape(
                up=refresh.view is not None,
                seconds=refresh.seconds,
                statements=refresh.statements,
                errors=self.errors,
            )
            found = list(families(refresh.view, scrape))
        if self.on_refresh is not None:
            self.on_refresh(refresh)
        return iter(found)

    def close(self) -> None:
        """Close the session, once any scrape under way has finished with it."""
        with self._lock:
            self.source.close()


@dataclass(frozen=True, slots=True)
class Listen:
    """Where the exporter serves: a host (name or address) and a port."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listen:
        """``127.0.0.1:9187``, ``[::1]:9187``, ``:9187`` (every interface) or ``localhost``
        (the default port); a one-line error otherwise."""
        if not text.strip():
            raise VacuumlabError("--listen takes HOST:PORT, e.g. 127.0.0.1:9187")
        host, colon, port = text.strip().rpartition(":")
        if not colon or (host.count(":") and not host.startswith("[")):
            host, port = text.strip(), str(DEFAULT_PORT)
        host = host.removeprefix("[").removesuffix("]") or "0.0.0.0"  # ":9187": every interface
        try:
            number = int(port)
        except ValueError:
            number = -1
        if not 0 <= number <= 65535 or not host or any(c.isspace() for c in host):
            raise VacuumlabError(
                f"--listen takes HOST:PORT (e.g. 127.0.0.1:9187 or [::1]:9187), not {text!r}"
            )
        return cls(host, number)

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/metrics"


def serve(collector: Collector, listen: Listen) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``collector`` on ``listen`` from a daemon thread; a one-line error when the
    address cannot be had. Shut it down with ``server.shutdown()``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        return start_http_server(listen.port, addr=listen.host, registry=registry)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise VacuumlabError(f"cannot listen on {listen.host}:{listen.port}: {reason}") from None
