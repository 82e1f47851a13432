"""IngestFailed: record an ingestion failure for replay (error names only, no story text)."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.ingestion import IngestFailure
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.ingest_failed import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    failure = parse(IngestFailure, event)
    recorded = run(failure, services or default_services())
    metrics.add_metric(name="IngestionFailures", unit=MetricUnit.Count, value=1)
    logger.warning("ingestion_failed", story_id=str(failure.story_id), error=failure.error)
    return recorded.model_dump(mode="json")
