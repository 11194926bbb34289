"""A snapshot (``vacuumlab snapshot``, ``vacuumlab sandbox demo``) in the terminal: the server,
the settings vacuum reads, the tables by dead tuples and those with settings of their own, what
holds the xmin horizon back, the vacuums running, and what was not collected. Pure: it reads
the :class:`~vacuumlab.records.snapshot.Snapshot` record only.

`text` draws it.
"""
