"""GraphSync: replace a story's facts in the graph with the extracted ones (provenance kept)."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.ingestion import GraphSyncInput
from heirloom.domain.processing import graph_sync_step
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    data = parse(GraphSyncInput, event)
    svc = services or default_services()
    return graph_sync_step(svc.ingestion, data).model_dump(mode="json")
