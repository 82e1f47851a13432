"""IngestObject: S3 ObjectCreated under the import prefix -> the Story Created path."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser.models import S3Model
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.ingest_object import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    records = parse(S3Model, event).Records
    return run(records, services or default_services()).model_dump(mode="json", exclude_none=True)
