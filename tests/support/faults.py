"""Fault-injecting decorators for the ports (GraphStore, VectorIndex, StoryStore, Embedder, ...).

`faulty(port, fault)` wraps a real adapter: every method call goes through to it unless the
`Fault` says otherwise. Tests hand the wrapped ports to the real handlers through their
`services=` injection and change the `Fault` between (or during) requests:

    graph = faulty(real_graph, fault := Fault())
    fault.down(GraphUnavailable("graph store unavailable: [Errno 111] Connection refused"))
    fault.slow(0.4)          # each call sleeps 400 ms, then runs
    fault.fail_calls(after=3, times=1, error=...)   # the 4th call fails, the others run
    fault.fail_when(lambda method, args, kwargs: ..., error)   # the calls the predicate picks
    fault.off()

Sleeps wait on an event that `release()` sets, so an abandoned slow call never outlives its test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from unittest import mock


class Fault:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.off()
        #: every call that reached the wrapper (method names), faulted or not
        self.calls: list[str] = []
        #: how many calls were faulted
        self.injected = 0

    # -- configuration ----------------------------------------------------------------------
    def off(self) -> Fault:
        self.error: BaseException | None = None
        self.delay_s = 0.0
        self.methods: frozenset[str] | None = None
        self.after = 0
        self.times: int | None = None
        self.hook: Callable[[str, tuple[Any, ...], dict[str, Any]], None] | None = None
        self.predicate: Callable[[str, tuple[Any, ...], dict[str, Any]], bool] | None = None
        self._seen = 0
        return self

    def down(self, error: BaseException, methods: Iterable[str] | None = None) -> Fault:
        """Every (matching) call raises `error`."""
        self.off()
        self.error = error
        self.methods = frozenset(methods) if methods is not None else None
        return self

    def slow(self, delay_s: float, methods: Iterable[str] | None = None) -> Fault:
        """Every (matching) call sleeps `delay_s`, then runs."""
        self.off()
        self.delay_s = delay_s
        self.methods = frozenset(methods) if methods is not None else None
        return self

    def fail_calls(
        self, *, after: int, times: int | None, error: BaseException, methods: Iterable[str] | None = None
    ) -> Fault:
        """Let `after` matching calls through, then fail the next `times` (None: all the rest)."""
        self.down(error, methods)
        self.after = after
        self.times = times
        return self

    def fail_when(
        self, predicate: Callable[[str, tuple[Any, ...], dict[str, Any]], bool], error: BaseException
    ) -> Fault:
        """Fail the calls for which `predicate(method, args, kwargs)` holds (e.g. one story's)."""
        self.off()
        self.error = error
        self.predicate = predicate
        return self

    def before(self, hook: Callable[[str, tuple[Any, ...], dict[str, Any]], None]) -> Fault:
        """Run `hook(method, args, kwargs)` before each matching call (to interleave a race)."""
        self.hook = hook
        return self

    def release(self) -> None:
        """Cut every pending and future sleep short (teardown)."""
        self._released.set()

    # -- the decorator's side ---------------------------------------------------------------
    def _apply(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append(method)
            if self.methods is not None and method not in self.methods:
                return
            index = self._seen
            self._seen += 1
            error, delay, hook = self.error, self.delay_s, self.hook
            if error is not None:
                in_window = index >= self.after and (self.times is None or index < self.after + self.times)
                if self.predicate is not None:
                    in_window = in_window and self.predicate(method, args, kwargs)
                if not in_window:
                    error = None
                else:
                    self.injected += 1
            elif delay:
                self.injected += 1
        if hook is not None:
            hook(method, args, kwargs)
        if delay:
            self._released.wait(delay)
        if error is not None:
            raise error


class FaultyPort:
    """Delegates every attribute to `target`; method calls pass through `fault` first."""

    def __init__(self, target: Any, fault: Fault):
        self.__dict__["_target"] = target
        self.__dict__["_fault"] = fault

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value
        fault: Fault = self._fault

        def call(*args: Any, **kwargs: Any) -> Any:
            fault._apply(name, args, kwargs)
            return value(*args, **kwargs)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)


def faulty(target: Any, fault: Fault | None = None) -> Any:
    """`target` behind a fault injector (a fresh, inactive `Fault` unless one is given)."""
    return FaultyPort(target, fault or Fault())


def connection_refused(what: str) -> ConnectionRefusedError:
    return ConnectionRefusedError(111, f"Connection refused ({what})")


@contextmanager
def instant_retries() -> Iterator[list[float]]:
    """moto's interpreter without the waits between Retry attempts (it sleeps them for real);
    yields the waits it would have slept, in order. Patches the module moto 5.2.5 sleeps in
    (`retrier_decl`); tests/statemachines/test_error_contract.py fails first if it moves."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    waits: list[float] = []
    assert retrier_decl.time is time, "moto no longer sleeps Retry intervals where expected"
    with mock.patch.object(retrier_decl, "time", SimpleNamespace(sleep=waits.append)):
        yield waits
