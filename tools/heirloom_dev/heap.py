"""Full garbage collections between local runs, not during them.

A local run holds every function, moto's interpreter and the loaded dataset in one process, a
heap no Lambda container has. A collection of the oldest generation scans all of it: 240-340 ms
on 2 cores during `heirloom eval` on the conversations set (16 of them in one run), longer than
the graph traversal's 300 ms budget, so one such pause inside a question cut its traversal off
and cost its graph evidence at random. Within `between_runs()` the interpreter collects only the
young generations on its own; the full collection it would have made waits for the next call
of the function it yields, made between two runs, outside their timing."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: the oldest generation's threshold while runs are timed: never reached, so never automatic
NEVER = 2**31 - 1


@contextmanager
def between_runs() -> Iterator[Callable[[], bool]]:
    """Yields `collect()`: the full collection when one is due (as many as the interpreter
    would have made, at the same threshold); True when it ran."""
    young, middle, old = gc.get_threshold()

    def collect() -> bool:
        if gc.get_count()[2] <= old:
            return False
        gc.collect()
        return True

    gc.set_threshold(young, middle, NEVER)
    try:
        yield collect
    finally:
        gc.set_threshold(young, middle, old)
