"""The exporter on a free loopback port, scraped over HTTP (or TLS) and parsed with
prometheus_client's parser (the exporter's tests and the version matrix)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from vacuumlab.watch.all_databases import ServerSource
from vacuumlab.watch.exporter import Collector, Listen, serve
from vacuumlab.watch.source import Refreshes, Source
from vacuumlab.watch.view import Pick
from vacuumlab.watch.webconfig import WebConfig


@contextmanager
def exporting(
    dsn: str,
    *,
    pick: Pick | None = None,
    web: WebConfig | None = None,
    all_databases: bool = False,
) -> Iterator[tuple[str, Collector]]:
    """The exporter on a free loopback port, exporting the relations ``pick`` wants (as
    ``--schema`` and ``--max-tables`` say; all by default), of every database with
    ``all_databases``, over TLS and behind passwords where ``web`` says so; yields its URL and
    its collector."""
    source: Refreshes = ServerSource(dsn, pick=pick) if all_databases else Source(dsn, pick=pick)
    source.open()
    collector = Collector(source)
    listen = Listen("127.0.0.1", 0)
    server, _ = serve(collector, listen, web)
    try:
        port = server.server_address[1]
        yield listen.url(port, tls=web is not None and web.tls is not None), collector
    finally:
        server.shutdown()
        server.server_close()
        collector.close()


def scrape(url: str) -> dict[str, Metric]:
    with urllib.request.urlopen(url, timeout=60) as response:
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def value(families: dict[str, Metric], name: str, **labels: str) -> float | None:
    """The one sample named ``name`` (a counter's family drops its ``_total``) with ``labels``
    among its own (a per-table series' ``database``, say, may be left out)."""
    family = families[name.removesuffix("_total")]
    found = [
        s.value
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1
    return found[0] if found else None
