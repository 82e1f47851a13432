"""IntentAnalysis: known-entity matching and the intent classifier, plus the breaker state."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.context import IntentAnalysisInput
from heirloom.domain.intent_step import intent_analysis_step
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
    data = parse(IntentAnalysisInput, event)
    svc = services or default_services()
    graph = svc.graph if svc.settings.graph.augmentation_enabled else None
    intent = intent_analysis_step(
        data.request,
        svc.stories,
        graph,
        svc.breaker,
        svc.gazetteers,
        svc.intent_classifier,
        svc.local_intent_classifier,
    )
    return intent.model_dump(mode="json")
