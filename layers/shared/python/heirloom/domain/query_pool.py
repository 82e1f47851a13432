"""Graph queries of one traversal within one deadline, the independent ones issued together
(docs/decisions/0019).

`prefetch` hands queries whose parameters are already known to a small thread pool; `run` then
reads every query in the caller's order: a prefetched one waits for its answer, any other is
issued there and then. The caller merges rows in the order it reads them, so the result is the
sequential run's; only the waiting overlaps. No query is issued once the deadline has passed
(in the pool as in the caller); one already in flight may finish (the step's GRACE bounds it).
With `concurrency=1` nothing is prefetched: every query is issued in order, as before.

The threads are the container's, not the request's: one pool per size (`TRAVERSAL_CONCURRENCY`,
so one per container), made at first use and kept warm across invocations, as boto3 clients
and connections are; a request no longer starts and stops threads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from heirloom.ports import GraphStore

#: rows of one query and its latency; None when the deadline had passed before it was issued
Answer = tuple[list[dict[str, Any]], float] | None


def call_key(name: str, params: Mapping[str, Any]) -> str:
    return name + "|" + json.dumps(params, sort_keys=True, default=str)


_EXECUTORS: dict[int, ThreadPoolExecutor] = {}
_EXECUTORS_LOCK = threading.Lock()


def shared_executor(size: int) -> ThreadPoolExecutor:
    """The container's pool of `size` query threads, made at first use (threads start as work
    arrives) and shared by every QueryPool of that concurrency."""
    with _EXECUTORS_LOCK:
        executor = _EXECUTORS.get(size)
        if executor is None:
            executor = _EXECUTORS[size] = ThreadPoolExecutor(size, thread_name_prefix="graph-query")
        return executor


class QueryPool:
    """Issues named queries against `graph` until `deadline` (`clock()` seconds)."""

    def __init__(
        self, graph: GraphStore, deadline: float, clock: Callable[[], float], *, concurrency: int = 1
    ):
        self.graph, self.deadline, self.clock = graph, deadline, clock
        self.concurrency = max(1, concurrency)
        self._pending: dict[str, Future[Answer]] = {}

    def issue(self, cypher: str, params: Mapping[str, Any]) -> Answer:
        if self.clock() >= self.deadline:
            return None
        started = self.clock()
        rows = self.graph.run(cypher, dict(params))
        return rows, round((self.clock() - started) * 1000, 2)

    def prefetch(self, calls: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Issue `(name, cypher, params)` calls now, at most `concurrency` at a time, in order."""
        if self.concurrency == 1:
            return
        for name, cypher, params in calls:
            key = call_key(name, params)
            if key in self._pending:
                continue
            self._pending[key] = shared_executor(self.concurrency).submit(self.issue, cypher, params)

    def answer(self, name: str, cypher: str, params: Mapping[str, Any]) -> Answer:
        """The prefetched answer of this call (waiting for it), else the call issued now. A
        prefetched query's error is raised here, where the sequential run would have raised it."""
        pending = self._pending.pop(call_key(name, params), None)
        return pending.result() if pending is not None else self.issue(cypher, params)

    def close(self) -> None:
        """Drop what was prefetched but never read (not yet started: cancelled, so the next
        request's queries do not wait behind them); the shared threads stay."""
        for pending in self._pending.values():
            pending.cancel()
        self._pending.clear()
