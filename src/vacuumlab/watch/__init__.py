"""Autovacuum live: one refresh's picture (view.py, cluster.py: pure), the session that takes
the snapshots (source.py) and the Prometheus exporter (exporter.py). The terminal view of
``vacuumlab watch`` draws from the same :class:`~vacuumlab.records.live.LiveView`."""
