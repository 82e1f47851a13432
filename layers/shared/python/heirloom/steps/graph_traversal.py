"""The GraphTraversal step: traversal behind the circuit breaker and the feature flag.

The budget is enforced twice: `traverse` stops issuing queries once it is spent (partial
results), and a traversal still running at the budget plus `GRACE` is abandoned (no results,
status "timeout"), so one hanging query cannot hold the request past its budget."""

from __future__ import annotations

import time

from heirloom.contracts.context import GraphBranch, GraphResults, GraphTraversalInput
from heirloom.domain.breaker import CircuitBreaker
from heirloom.domain.connections_graph import traverse_connections
from heirloom.domain.deadline import DeadlineExceeded, call_within
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import NeighbourhoodCache, traverse
from heirloom.errors import GraphUnavailable
from heirloom.ports import GraphStore
from heirloom.services import Services

#: share of the budget a query in flight when the budget runs out may still take
GRACE = 0.2


def run(data: GraphTraversalInput, services: Services) -> GraphBranch:
    return graph_traversal_step(
        data,
        services.graph,
        services.breaker,
        enabled=services.settings.graph.augmentation_enabled,
        budget_ms=services.settings.resilience.traversal_budget_ms,
        cache=services.neighbourhoods,
        concurrency=services.settings.resilience.traversal_concurrency,
        bridge=services.settings.retrieval.bridge_seeds > 0,
    )


def graph_traversal_step(
    data: GraphTraversalInput,
    graph: GraphStore,
    breaker: CircuitBreaker,
    *,
    enabled: bool = True,
    budget_ms: float = 300.0,
    cache: NeighbourhoodCache | None = None,
    concurrency: int = 1,
    bridge: bool = False,
) -> GraphBranch:
    request, intent = data.request, data.intent
    if not (enabled and request.graph_enabled) or request.mode == "vector":
        return GraphBranch(intent=intent, graph=GraphResults(status="skipped"))
    if not breaker.allow():
        return GraphBranch(intent=intent, graph=GraphResults(status="skipped"))
    config = load_personas()[request.persona].traversal
    started = time.monotonic()

    def walk() -> GraphResults:
        if request.purpose == "connections":  # the story_connections workflow
            return traverse_connections(
                graph, request, intent, config, budget_ms=budget_ms, concurrency=concurrency
            )
        return traverse(
            graph,
            request,
            intent,
            config,
            budget_ms=budget_ms,
            cache=cache,
            concurrency=concurrency,
            bridge=bridge,
        )

    try:
        result = call_within(budget_ms * (1 + GRACE) / 1000, walk, name="graph traversal")
    except DeadlineExceeded:
        result = GraphResults(status="timeout")
    except Exception as exc:  # any graph failure counts against the breaker
        breaker.record_failure()
        raise GraphUnavailable(f"graph traversal failed: {type(exc).__name__}") from exc
    if result.status == "timeout":
        breaker.record_failure()
    else:
        breaker.record_success()
    latency = round((time.monotonic() - started) * 1000, 2)
    return GraphBranch(intent=intent, graph=result.model_copy(update={"latency_ms": latency}))
