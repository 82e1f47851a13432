"""IngestObject: S3 ObjectCreated under the import prefix -> the Story Created path."""

from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.parser.models import S3Model
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.domain.imports import import_object
from heirloom.edges import parse
from heirloom.errors import InvalidRequest, NotFound, error_contract
from heirloom.services import Services, default_services

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    records = parse(S3Model, event).Records
    svc = services or default_services()
    results = []
    for record in records:
        bucket, key = record.s3.bucket.name, unquote_plus(record.s3.object.key)
        try:
            change = import_object(svc.ingestion, svc.objects, bucket, key)
            results.append({"key": key, "status": "imported", "change": change.value})
        except InvalidRequest as exc:
            logger.warning("import_rejected", key=key, reason=str(exc))
            results.append({"key": key, "status": "rejected", "reason": str(exc)})
        except NotFound as exc:  # the object is gone: the other records still go in
            logger.warning("import_missing", key=key, reason=str(exc))
            results.append({"key": key, "status": "missing", "reason": str(exc)})
    return {"results": results}
