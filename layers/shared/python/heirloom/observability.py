"""Structured events and EMF metrics with seed 000's names (serverless form). Counts, ids and
latencies only: never story text, names or queries."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from heirloom.contracts.context import AssembledContext, GraphBranch
from heirloom.contracts.ingestion import ExtractionResult

#: graph_context_circuit_state as a number: closed 0, half_open 1, open 2
CIRCUIT_VALUES = {"closed": 0.0, "half_open": 1.0, "open": 2.0}


def _phase_latency(namespace: str | None, phase: str, value_ms: float) -> None:
    with single_metric(
        name="GraphContextLatency", unit=MetricUnit.Milliseconds, value=value_ms, namespace=namespace
    ) as metric:
        metric.add_dimension(name="phase", value=phase)


def record_context(result: AssembledContext, logger: Logger, metrics: Metrics) -> None:
    meta = result.metadata
    graph_sources = sum(1 for s in meta.sources if "graph" in s.source)
    embedding_sources = sum(1 for s in meta.sources if s.source.startswith("embedding"))
    logger.info(
        "context_assembled",
        extra={
            "component": "graph_context",
            "embedding_results": len(result.embedding_results),
            "graph_results": len(result.graph_results),
            "final_results": len(meta.sources),
            "graph_ratio": round(graph_sources / len(meta.sources), 3) if meta.sources else 0.0,
            "intent": meta.intent.intent.value,
            "circuit_state": meta.circuit_state,
            "vector_status": meta.vector_status,
            "graph_status": meta.graph_status,
            "tokens_used": meta.tokens_used,
            "latency_ms": meta.latency_ms,
        },
    )
    namespace = metrics.namespace
    for phase, value in meta.latency_ms.items():
        _phase_latency(namespace, phase, value)
    for source, count in (("embedding", embedding_sources), ("graph", graph_sources)):
        with single_metric(
            name="GraphContextResults", unit=MetricUnit.Count, value=count, namespace=namespace
        ) as metric:
            metric.add_dimension(name="source", value=source)
    if meta.circuit_state in CIRCUIT_VALUES:
        metrics.add_metric(
            name="GraphCircuitState", unit=MetricUnit.Count, value=CIRCUIT_VALUES[meta.circuit_state]
        )
        metrics.add_metric(
            name="GraphCircuitOpen", unit=MetricUnit.Count, value=1.0 if meta.circuit_state == "open" else 0.0
        )


def record_traversal(branch: GraphBranch, logger: Logger, metrics: Metrics, budget_ms: float) -> None:
    graph = branch.graph
    if graph.status == "timeout":
        logger.warning(
            "neptune_timeout",
            extra={
                "component": "graph_context",
                "operation": "traversal",
                "timeout_ms": budget_ms,
                "fallback": "partial_results",
            },
        )
    for stat in graph.traversals:
        with single_metric(
            name="NeptuneQueryLatency",
            unit=MetricUnit.Milliseconds,
            value=stat.latency_ms,
            namespace=metrics.namespace,
        ) as metric:
            metric.add_dimension(name="query_type", value=stat.template)


def record_extraction(result: ExtractionResult, logger: Logger, metrics: Metrics) -> None:
    e = result.entities
    counts = {
        "people": len(e.people),
        "places": len(e.places),
        "events": len(e.events),
        "objects": len(e.objects),
    }
    logger.info(
        "entities_extracted",
        extra={
            "component": "entity_extraction",
            "story_id": str(result.story_id),
            "status": result.status,
            **counts,
        },
    )
    for kind, value in counts.items():
        with single_metric(
            name="EntityExtractionEntities",
            unit=MetricUnit.Count,
            value=float(value),
            namespace=metrics.namespace,
        ) as metric:
            metric.add_dimension(name="type", value=kind)
