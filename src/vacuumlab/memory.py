"""Python's cyclic garbage collector, held off while vacuumlab builds many objects at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector off.

    A snapshot of 10,000 tables holds a few hundred thousand objects. Building it, or the
    advice on it, starts a collection every 700 new objects, and as the survivors pile up the
    collections of the oldest generation walk everything alive: nearly a third of
    ``advise()``'s time at that size. Nothing built there needs the collector: reference
    counting frees at once what is not in a cycle, and a cycle waits for the first collection
    after the block.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
