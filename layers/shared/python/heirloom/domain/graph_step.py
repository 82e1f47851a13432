"""The GraphTraversal step: traversal behind the circuit breaker and the feature flag."""

from __future__ import annotations

import time

from heirloom.contracts.context import GraphBranch, GraphResults, GraphTraversalInput
from heirloom.domain.breaker import CircuitBreaker
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import NeighbourhoodCache, traverse
from heirloom.errors import GraphUnavailable
from heirloom.ports import GraphStore


def graph_traversal_step(
    data: GraphTraversalInput,
    graph: GraphStore,
    breaker: CircuitBreaker,
    *,
    enabled: bool = True,
    budget_ms: float = 300.0,
    cache: NeighbourhoodCache | None = None,
) -> GraphBranch:
    request, intent = data.request, data.intent
    if not (enabled and request.graph_enabled) or request.mode == "vector":
        return GraphBranch(intent=intent, graph=GraphResults(status="skipped"))
    if not breaker.allow():
        return GraphBranch(intent=intent, graph=GraphResults(status="skipped"))
    config = load_personas()[request.persona].traversal
    started = time.monotonic()
    try:
        result = traverse(graph, request, intent, config, budget_ms=budget_ms, cache=cache)
    except Exception as exc:  # any graph failure counts against the breaker
        breaker.record_failure()
        raise GraphUnavailable(f"graph traversal failed: {type(exc).__name__}") from exc
    if result.status == "timeout":
        breaker.record_failure()
    else:
        breaker.record_success()
    latency = round((time.monotonic() - started) * 1000, 2)
    return GraphBranch(intent=intent, graph=result.model_copy(update={"latency_ms": latency}))
