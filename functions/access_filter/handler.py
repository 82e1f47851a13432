"""AccessFilter: drop every story and fact the user may not read; fails closed."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.context import AccessFilterInput
from heirloom.domain.access_filter import filter_context
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
    data = parse(AccessFilterInput, event)
    svc = services or default_services()
    return filter_context(data, svc.stories, svc.vectors).model_dump(mode="json")
