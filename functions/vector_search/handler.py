"""VectorSearch: embed the query and search the chunks the user may read."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.context import VectorSearchInput
from heirloom.domain.retrieval import vector_search
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
    data = parse(VectorSearchInput, event)
    svc = services or default_services()
    result = vector_search(
        data.request, svc.stories, svc.vectors, svc.embedder, k=svc.settings.resilience.vector_k
    )
    return result.model_dump(mode="json")
