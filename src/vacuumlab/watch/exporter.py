"""The Prometheus exporter: a custom collector that refreshes on each scrape, and the HTTP
server that serves it (prometheus_client's WSGI app, over TLS and behind basic auth when the
web configuration says so: watch/webconfig.py).

Each scrape takes one snapshot through the :class:`~vacuumlab.watch.source.Source` (one
read-only session, reused, opened again after a lost connection), or with ``--all-databases``
one of each database in turn (watch/all_databases.py), and turns the view into metric
families (watch/metrics.py). A scrape that cannot read the server exports ``vacuumlab_up 0``
and counts an error; the next scrape tries again. Scrapes arriving together are served one
after the other: they share the sessions.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import Metric

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.live import Refresh
from vacuumlab.watch.metrics import Scrape, families
from vacuumlab.watch.source import Refreshes
from vacuumlab.watch.webconfig import WebConfig

DEFAULT_PORT = 9187  # postgres_exporter's: where Prometheus users look for PostgreSQL metrics
#: Seconds a client may take over each read and over the whole answer's write, handshake
#: included: one that sends nothing holds a thread that long, never the server.
CLIENT_TIMEOUT = 60.0


class Collector:
    """Refreshes the source on each scrape and yields the metric families of the view."""

    def __init__(
        self, source: Refreshes, *, on_refresh: Callable[[Refresh], None] | None = None
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

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the address (127.0.0.0/8, ::1, localhost)."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name: it may resolve anywhere
            return False

    def address(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port if port is None else port}"

    def url(self, port: int | None = None, *, tls: bool = False) -> str:
        return f"{'https' if tls else 'http'}://{self.address(port)}/metrics"


def exposure_warning(listen: Listen, web: WebConfig) -> str | None:
    """What to say when the metrics, which name every table, leave this machine in clear;
    None on loopback or over TLS."""
    if listen.loopback or web.tls is not None:
        return None
    where = f"serving metrics without TLS on {listen.address()}"
    if web.users:
        return (
            f"{where}; the passwords and every table's name cross the network in clear "
            "(tls_server_config in --web-config sets TLS)"
        )
    return (
        f"{where}; every table's name is readable by anyone who can reach it "
        "(--web-config sets TLS and passwords)"
    )


def serve(
    collector: Collector, listen: Listen, web: WebConfig | None = None
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``collector`` on ``listen`` from a daemon thread, over TLS and behind basic auth
    when ``web`` says so; a one-line error when the address cannot be had. Shut it down with
    ``server.shutdown()``."""
    web = web or WebConfig()
    context = web.tls.context() if web.tls is not None else None  # fails before listening
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        server = _bind(listen, context)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise VacuumlabError(f"cannot listen on {listen.address()}: {reason}") from None
    server.set_app(web.guard(make_wsgi_app(registry)))
    thread = threading.Thread(target=server.serve_forever, name="exporter", daemon=True)
    thread.start()
    return server, thread


class _Server(ThreadingMixIn, WSGIServer):
    """prometheus_client's server (a thread per request, wsgiref), with the TLS handshake
    moved from the accepting thread into the request's own: prometheus_client wraps the
    listening socket, so one client that connects and sends nothing stops every scrape."""

    daemon_threads = True
    block_on_close = False  # server_close() waits for no client that says nothing
    tls: ssl.SSLContext | None = None

    def get_request(self) -> tuple[Any, Any]:
        connection, client = self.socket.accept()
        connection.settimeout(CLIENT_TIMEOUT)
        if self.tls is not None:
            connection = self.tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, client

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            try:
                request.do_handshake()
            except OSError:  # plain HTTP, an unverified certificate, a timeout: the client's
                return
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up or times out is no error of the exporter's: no traceback."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Quiet(WSGIRequestHandler):
    """No line on stderr per request (prometheus_client's handler does the same)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _bind(listen: Listen, tls: ssl.SSLContext | None) -> _Server:
    """A server bound to ``listen``, of the address family its host resolves to first (as
    prometheus_client does: a plain HTTPServer would take AF_INET and fail on ``::1``)."""
    found = socket.getaddrinfo(
        listen.host, listen.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, _, _, _, address = found[0]

    class Server(_Server):
        address_family = family

    server = Server((str(address[0]), listen.port), _Quiet)
    server.tls = tls
    return server
