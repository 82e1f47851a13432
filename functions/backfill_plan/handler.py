"""BackfillPlan: the next page of stories whose index or graph is behind (one run at a time,
continued as a new execution every `stories_per_execution` stories)."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.ingestion import BackfillPlanInput
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.backfill_plan import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    return run(parse(BackfillPlanInput, event), services or default_services()).model_dump(mode="json")
