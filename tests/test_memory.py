"""collector_paused(): what the block builds goes to the oldest generation, unwalked, and
cyclic garbage made there is still collected afterwards."""

from __future__ import annotations

import gc
import weakref

from vacuumlab.memory import collector_paused


class Node:
    def __init__(self) -> None:
        self.next: Node | None = None


def test_what_the_block_builds_is_filed_as_old_and_not_walked() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        kept = [Node() for _ in range(50_000)]
    assert gc.isenabled()
    # Nothing is left for the youngest generation's next collection to walk...
    assert gc.get_count()[0] < 100
    # ... because the objects now sit in the oldest generation.
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert id(kept) in oldest
    assert all(id(node) in oldest for node in kept[::1000])
    assert not gc.get_freeze_count()


def test_a_cycle_built_in_the_block_is_still_collected() -> None:
    with collector_paused():
        a, b = Node(), Node()
        a.next, b.next = b, a
        gone = weakref.ref(a)
        del a, b
    assert gone() is not None  # a cycle outlives reference counting
    gc.collect()
    assert gone() is None


def test_a_paused_caller_stays_paused() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
