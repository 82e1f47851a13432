"""CommunitiesRebuild: each legacy's communities rebuilt where the recorded impact calls for it
(the scheduled communities workflow)."""

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.curation import CommunitiesRebuildInput
from heirloom.edges import parse
from heirloom.errors import error_contract
from heirloom.services import Services, default_services
from heirloom.steps.communities_rebuild import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, services: Services | None = None
) -> dict[str, Any]:
    return run(parse(CommunitiesRebuildInput, event), services or default_services()).model_dump(mode="json")
