"""StoryEvents: EventBridge story events routed to the shared ingestion path."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.domain.story_events import handle_story_event, parse_event
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
    story_event = parse_event(event)
    svc = services or default_services()
    change = handle_story_event(
        svc.ingestion,
        story_event,
        source=svc.settings.workflow.event_source,
        start_ingestion=svc.start_ingestion,
    )
    logger.info("story_event_applied", detail_type=story_event.detail_type, change=change.value)
    return {"detail_type": story_event.detail_type, "change": change.value}
