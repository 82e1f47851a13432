"""StoryEvents: EventBridge story events routed to the shared ingestion path."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.domain.story_events import parse_event
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.story_events import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    applied = run(parse_event(event), services or default_services())
    logger.info("story_event_applied", detail_type=applied.detail_type, change=applied.change)
    return applied.model_dump(mode="json")
