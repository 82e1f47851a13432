"""A hard wall-clock deadline around one blocking call (docs/design.md §10: "exceeded timeouts
return partial/empty results", `asyncio.wait_for`).

The call runs on a daemon thread; when it has not returned in time the caller gets
`DeadlineExceeded` and moves on, and the call's eventual result is discarded, or handed to a
`late` callback for a later caller. Budgets checked between queries cannot stop one query that
hangs; this can.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The call did not return within its budget (it was abandoned, not cancelled)."""


def call_within(
    seconds: float, fn: Callable[[], T], *, name: str = "call", late: Callable[[T], None] | None = None
) -> T:
    """`fn()`, or `DeadlineExceeded` if it has not returned after `seconds`. Exceptions of `fn`
    propagate unchanged. `late`: given `fn`'s value when it returns after the caller gave up."""
    done = threading.Event()
    lock = threading.Lock()
    values: list[T] = []
    errors: list[BaseException] = []
    abandoned = False

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)
            done.set()
            return
        with lock:
            values.append(value)
            after = abandoned
        done.set()
        if after and late is not None:
            late(value)

    threading.Thread(target=run, name=f"deadline-{name}", daemon=True).start()
    if not done.wait(max(seconds, 0.0)):
        with lock:
            abandoned = not values
        if abandoned:
            raise DeadlineExceeded(f"{name} took longer than {seconds * 1000:.0f} ms")
    if errors:
        raise errors[0]
    return values[0]
