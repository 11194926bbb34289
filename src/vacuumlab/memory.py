"""Python's cyclic garbage collector, held off while vacuumlab builds many objects at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector off, and file what it built as old.

    A snapshot of 10,000 tables holds a few hundred thousand objects. Building it, or the
    advice on it, starts a collection every 700 new objects, and as the survivors pile up the
    collections of the oldest generation walk everything alive: nearly a third of
    ``advise()``'s time at that size. Nothing built there needs the collector: reference
    counting frees at once what is not in a cycle, and a cycle waits for a later collection.

    Left in the youngest generation, the block's objects would all be walked by the first
    collection after it (27 ms after a snapshot of 10,000 tables), and again in the middle
    one, though what a snapshot builds lives as long as the snapshot. ``gc.freeze()`` then
    ``gc.unfreeze()`` moves every tracked object to the oldest generation in constant time,
    without walking it, so only a full collection looks at them again, as it would at last.
    That also unfreezes what a caller froze; vacuumlab freezes nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
