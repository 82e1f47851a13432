"""Api: POST /legacies/{legacy_id}/context for one verified caller, answered by the context
workflow, and the curation routes (merge suggestions, merge, keep apart, unmerge) for a
legacy's creator and admins (the handler maps the typed errors to HTTP statuses)."""

from __future__ import annotations

from typing import overload
from uuid import UUID

from heirloom.contracts.context import (
    ContextRequest,
)
from heirloom.domain.context_api import ContextBody, ContextCall, ContextResponse, ContextSource
from heirloom.domain.curation_api import CurationAnswer, CurationCall, CurationPorts, curate
from heirloom.errors import AccessDenied
from heirloom.ports import ContextWorkflow
from heirloom.services import Services


@overload
def run(
    call: ContextCall, services: Services, workflow: ContextWorkflow | None = None
) -> ContextResponse: ...
@overload
def run(
    call: CurationCall, services: Services, workflow: ContextWorkflow | None = None
) -> CurationAnswer: ...
def run(
    call: ContextCall | CurationCall, services: Services, workflow: ContextWorkflow | None = None
) -> ContextResponse | CurationAnswer:
    if isinstance(call, CurationCall):
        ports = CurationPorts(graph=services.graph, stories=services.stories, curation=services.curation)
        return curate(call, ports)
    return answer(
        call.body,
        legacy_id=call.legacy_id,
        user_id=call.user_id,
        is_admin=call.is_admin,
        debug=call.debug,
        graph_enabled=services.settings.graph.augmentation_enabled,
        workflow=workflow or services.context_workflow,
    )


def answer(
    body: ContextBody,
    *,
    legacy_id: UUID,
    user_id: UUID,
    is_admin: bool,
    debug: bool,
    graph_enabled: bool,
    workflow: ContextWorkflow,
) -> ContextResponse:
    if debug and not is_admin:
        raise AccessDenied("debug metadata is only available to administrators")
    request = ContextRequest(
        legacy_id=legacy_id,
        user_id=user_id,
        persona=body.persona,
        query=body.query,
        history=body.history,
        linked_story_id=body.linked_story_id,
        token_budget=body.token_budget,
        debug=debug,
        graph_enabled=graph_enabled,
    )
    assembled = workflow.run(request)
    sources = [
        ContextSource(story_id=s.story_id, title=s.title, legacy_id=s.legacy_id)
        for s in assembled.metadata.sources
    ]
    return ContextResponse(
        context=assembled.formatted_context,
        sources=sources,
        tokens=assembled.metadata.tokens_used,
        sources_used=list(assembled.sources_used),
        degraded=list(assembled.degraded),
        debug=assembled.metadata.model_dump(mode="json") if debug else None,
    )
