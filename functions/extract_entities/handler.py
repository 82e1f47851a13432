"""ExtractEntities: people, places, events, objects and time references of a story."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.ingestion import IngestRequest
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.observability import record_extraction
from heirloom.services import Services, default_services
from heirloom.steps.extract_entities import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    result = run(parse(IngestRequest, event), services or default_services())
    record_extraction(result, logger, metrics)
    return result.model_dump(mode="json")
