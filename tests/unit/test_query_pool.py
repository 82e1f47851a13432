"""The query pool's threads are the container's: every request of one concurrency shares them
(none started and stopped per request), and a request that ends drops only its own queued
queries (docs/decisions/0019)."""

import threading
import time
from typing import Any

from heirloom.domain.query_pool import QueryPool, shared_executor


class RecordingGraph:
    """Answers every query with its name; records the thread that ran it; `hold` blocks the
    queries named in it until released."""

    def __init__(self, hold: frozenset[str] = frozenset()):
        self.threads: set[threading.Thread] = set()
        self.ran: list[str] = []
        self.hold, self.release, self.held = hold, threading.Event(), threading.Semaphore(0)
        #: released once per query recorded
        self.done = threading.Semaphore(0)
        self._lock = threading.Lock()

    def run(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        if cypher in self.hold:
            self.held.release()
            self.release.wait(30)
        with self._lock:
            self.threads.add(threading.current_thread())
            self.ran.append(cypher)
        self.done.release()
        return [{"q": cypher}]


def _pool(graph: RecordingGraph, concurrency: int) -> QueryPool:
    return QueryPool(graph, time.monotonic() + 60, time.monotonic, concurrency=concurrency)  # type: ignore[arg-type]


def test_requests_of_one_concurrency_share_the_container_s_threads():
    assert shared_executor(3) is shared_executor(3)
    graph = RecordingGraph()
    for request in range(6):
        pool = _pool(graph, 3)
        calls = [(f"q{i}", f"r{request}q{i}", {"i": i}) for i in range(3)]
        pool.prefetch(calls)
        answers = [pool.answer(*c) for c in calls]
        assert [a[0] if a else None for a in answers] == [[{"q": c[1]}] for c in calls]
        pool.close()
    assert len(graph.ran) == 18
    # threads kept across the six requests: never more than the pool's size (a pool per request
    # started up to 18)
    assert 1 <= len(graph.threads) <= 3


def test_closing_a_request_cancels_only_its_queued_queries():
    graph = RecordingGraph(hold=frozenset({"slow0", "slow1"}))
    first = _pool(graph, 2)
    first.prefetch([("slow0", "slow0", {}), ("slow1", "slow1", {}), ("queued", "queued", {})])
    assert graph.held.acquire(timeout=30) and graph.held.acquire(timeout=30)  # both running
    first.close()  # the queued one never starts
    graph.release.set()
    second = _pool(graph, 2)
    second.prefetch([("next", "next", {})])
    answer = second.answer("next", "next", {})
    assert answer is not None and answer[0] == [{"q": "next"}]
    second.close()
    # the two held queries and "next" have finished (a free thread alone does not say that both
    # held ones have), then whatever was still queued behind them has had its turn
    assert all(graph.done.acquire(timeout=30) for _ in range(3))
    shared_executor(2).submit(lambda: None).result(30)
    assert "queued" not in graph.ran and {"slow0", "slow1", "next"} <= set(graph.ran)
