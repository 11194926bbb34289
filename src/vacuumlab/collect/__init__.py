"""Collecting from a server: the snapshot, the 1 Hz sampler, and parsers of the server's own
reports (the autovacuum log entry). Rows become records from :mod:`vacuumlab.records`."""
