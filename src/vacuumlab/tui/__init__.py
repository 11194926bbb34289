"""The terminal user interface: the full-screen live view of ``vacuumlab watch``, on Textual.

It draws records (:class:`~vacuumlab.records.live.Refresh`) that a ``fetch`` callable hands it,
and never talks to a server itself: the CLI wires ``fetch`` to ``vacuumlab.watch.source``, and
an import-linter contract keeps psycopg out of this package. Below the CLI, above the rest.

- app.py: the App, its panels and its keys;
- rows.py: each panel's rows, a pure function of one view and the keys' state;
- screens.py: the pop-ups (one relation in full, the keys);
- refresher.py: the one thread that takes refreshes;
- watch.tcss: the layout.
"""

from __future__ import annotations

from vacuumlab.tui.app import WatchApp, watch

__all__ = ["WatchApp", "watch"]
