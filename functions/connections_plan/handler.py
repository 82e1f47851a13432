"""ConnectionsPlan: check the story is readable, make its text (or the conversation) the query."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.connections import ConnectionsPlanInput
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.connections_plan import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    result = run(parse(ConnectionsPlanInput, event), services or default_services())
    return result.model_dump(mode="json")
