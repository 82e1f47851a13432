"""Hard deadlines: a call that hangs is abandoned at its budget; the graph step reports a timeout
(and counts it against the breaker) instead of waiting for a query that never returns."""

import threading
import time
from uuid import UUID

import pytest

from heirloom.contracts.context import ContextRequest, GraphTraversalInput, QueryIntent
from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.domain.deadline import DeadlineExceeded, call_within
from heirloom.domain.graph_step import graph_traversal_step


def test_call_within_returns_the_value_or_raises_the_calls_own_error():
    assert call_within(1.0, lambda: 42) == 42
    with pytest.raises(KeyError, match="boom"):
        call_within(1.0, lambda: {}["boom"])


def test_call_within_abandons_a_call_that_does_not_return_in_time():
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        call_within(0.05, lambda: release.wait(5))
    assert time.monotonic() - started < 1.0
    release.set()


class HangingGraph:
    prefix = "t"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def run(self, cypher, params=None):
        self.calls += 1
        self.release.wait(2)  # a query that hangs (until the test ends)
        return []


def test_a_hanging_graph_query_is_cut_off_at_the_traversal_budget():
    graph = HangingGraph()
    store = InMemoryBreakerStore()
    request = ContextRequest(legacy_id=UUID(int=1), user_id=UUID(int=2), persona="family", query="Who?")
    started = time.monotonic()
    try:
        branch = graph_traversal_step(
            GraphTraversalInput(request=request, intent=QueryIntent()),
            graph,
            CircuitBreaker(store),
            budget_ms=100,
        )
    finally:
        graph.release.set()
    elapsed_ms = (time.monotonic() - started) * 1000
    assert branch.graph.status == "timeout" and branch.graph.hits == () and graph.calls == 1
    assert elapsed_ms < 100 * 1.2 + 200, elapsed_ms  # budget + grace + scheduling slack
    assert store.load("graph").failures == 1
