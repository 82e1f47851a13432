"""Structured events and EMF metrics with the names of docs/design.md §12 (serverless form). Counts, ids and
latencies only: never story text, names or queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

if TYPE_CHECKING:  # each handler imports the contracts it records, not the others'
    from aws_lambda_powertools import Logger, Metrics

    from heirloom.contracts.context import AssembledContext, GraphBranch
    from heirloom.contracts.ingestion import ExtractionResult

#: the libraries whose calls become X-Ray subsegments: the AWS SDK and Neptune over HTTPS
TRACED_LIBRARIES = ("botocore", "requests")


def trace_library_calls() -> None:
    """Patch the traced libraries for X-Ray, once a function builds its ports. Handlers build
    their Tracer with auto_patch=False: patching every library X-Ray supports imports them all
    (httpx, botocore, requests...: about 230 ms of each cold import). A no-op wherever tracing
    is off (outside Lambda, or POWERTOOLS_TRACE_DISABLED)."""
    Tracer(auto_patch=False).patch(list(TRACED_LIBRARIES))


#: graph_context_circuit_state as a number: closed 0, half_open 1, open 2
CIRCUIT_VALUES = {"closed": 0.0, "half_open": 1.0, "open": 2.0}


def _dimensioned(
    name: str, unit: MetricUnit, value: float, namespace: str | None, dimension: str, dimension_value: str
) -> None:
    """One EMF metric with its own dimension (Powertools' single_metric), unless metrics are off."""
    if is_metrics_disabled():
        return
    with single_metric(name=name, unit=unit, value=value, namespace=namespace) as metric:
        metric.add_dimension(name=dimension, value=dimension_value)


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
            "degraded": list(result.degraded),
            "tokens_used": meta.tokens_used,
            "latency_ms": meta.latency_ms,
        },
    )
    namespace = metrics.namespace
    for phase, value in meta.latency_ms.items():
        _dimensioned("GraphContextLatency", MetricUnit.Milliseconds, value, namespace, "phase", phase)
    for source, count in (("embedding", embedding_sources), ("graph", graph_sources)):
        _dimensioned("GraphContextResults", MetricUnit.Count, count, namespace, "source", source)
    for missing in result.degraded:  # an answer the caller was told is incomplete
        _dimensioned("ContextDegraded", MetricUnit.Count, 1.0, namespace, "source", missing)
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
        _dimensioned(
            "NeptuneQueryLatency",
            MetricUnit.Milliseconds,
            stat.latency_ms,
            metrics.namespace,
            "query_type",
            stat.template,
        )


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
        _dimensioned(
            "EntityExtractionEntities", MetricUnit.Count, float(value), metrics.namespace, "type", kind
        )
