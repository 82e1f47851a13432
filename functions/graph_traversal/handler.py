"""GraphTraversal: openCypher templates for the intent and persona, behind the breaker."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.context import GraphTraversalInput
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.observability import record_traversal
from heirloom.services import Services, default_services
from heirloom.steps.graph_traversal import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    svc = services or default_services()
    result = run(parse(GraphTraversalInput, event), svc)
    record_traversal(result, logger, metrics, svc.settings.resilience.traversal_budget_ms)
    return result.model_dump(mode="json")
