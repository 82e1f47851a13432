"""Api: POST /legacies/{legacy_id}/context, .../stories/{story_id}/connections and
.../enrichment for one verified caller, answered by the context and story_connections workflows,
the curation routes (merge suggestions, merge, keep apart, unmerge, staging, changelog) for a
legacy's creator and admins, and conversation memory (the switch; a member's messages, the
story made of them, their own conversations and facts listed and deleted); the handler maps the typed errors to HTTP statuses."""

from __future__ import annotations

from typing import overload
from uuid import UUID

from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import (
    ContextRequest,
)
from heirloom.domain.context_api import (
    ConnectionsCall,
    ContextBody,
    ContextCall,
    ContextResponse,
    ContextSource,
    EnrichmentBody,
)
from heirloom.domain.conversation_memory import (
    ConversationAnswer,
    ConversationCall,
    ConversationPorts,
    converse,
)
from heirloom.domain.curation_api import CurationAnswer, CurationCall, CurationPorts, curate
from heirloom.errors import AccessDenied
from heirloom.ports import ConnectionsWorkflow, ContextWorkflow
from heirloom.services import Services


@overload
def run(
    call: ContextCall,
    services: Services,
    workflow: ContextWorkflow | None = None,
    connections_workflow: ConnectionsWorkflow | None = None,
) -> ContextResponse: ...
@overload
def run(
    call: ConnectionsCall,
    services: Services,
    workflow: ContextWorkflow | None = None,
    connections_workflow: ConnectionsWorkflow | None = None,
) -> StoryConnections: ...
@overload
def run(
    call: CurationCall,
    services: Services,
    workflow: ContextWorkflow | None = None,
    connections_workflow: ConnectionsWorkflow | None = None,
) -> CurationAnswer: ...
@overload
def run(
    call: ConversationCall,
    services: Services,
    workflow: ContextWorkflow | None = None,
    connections_workflow: ConnectionsWorkflow | None = None,
) -> ConversationAnswer: ...
def run(
    call: ContextCall | ConnectionsCall | CurationCall | ConversationCall,
    services: Services,
    workflow: ContextWorkflow | None = None,
    connections_workflow: ConnectionsWorkflow | None = None,
) -> ContextResponse | StoryConnections | CurationAnswer | ConversationAnswer:
    """A question (ContextCall) to the context workflow; an opening or enrichment request
    (ConnectionsCall) to the story_connections workflow; a curation request (CurationCall) to
    the curation rules over the graph and PostgreSQL."""
    if isinstance(call, ConnectionsCall):
        return connections(call, services, connections_workflow)
    if isinstance(call, CurationCall):
        ports = CurationPorts(graph=services.graph, stories=services.stories, curation=services.curation)
        return curate(call, ports)
    if isinstance(call, ConversationCall):
        return converse(call, conversation_ports(services))
    return answer(
        call.body,
        legacy_id=call.legacy_id,
        user_id=call.user_id,
        is_admin=call.is_admin,
        debug=call.debug,
        graph_enabled=services.settings.graph.augmentation_enabled,
        workflow=workflow or services.context_workflow,
    )


def conversation_ports(services: Services) -> ConversationPorts:
    """Extraction runs here, on the message's own call, never in the context workflow."""
    return ConversationPorts(
        stories=services.stories,
        conversations=services.conversations,
        extractor=services.extractor,
        start_ingestion=services.start_ingestion,
    )


def connections(
    call: ConnectionsCall, services: Services, workflow: ConnectionsWorkflow | None = None
) -> StoryConnections:
    """Opening connections of a story (`call.story_id`) or the enrichment of a conversation."""
    body = call.body
    graph_enabled = services.settings.graph.augmentation_enabled
    common = {"legacy_id": call.legacy_id, "user_id": call.user_id, "persona": body.persona}
    if isinstance(body, EnrichmentBody):
        request = ConnectionsRequest(
            kind="enrichment",
            story_id=body.story_id,
            messages=body.messages,
            surfaced_story_ids=body.surfaced_story_ids,
            graph_enabled=graph_enabled,
            **common,
        )
    else:
        request = ConnectionsRequest(
            kind="opening", story_id=call.story_id, graph_enabled=graph_enabled, **common
        )
    return (workflow or services.connections_workflow).run(request)


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
        elicitation=body.elicitation,
        as_of=body.as_of,
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
        suggestion=assembled.suggestion,
        accounts=list(assembled.accounts),
        sources_used=list(assembled.sources_used),
        degraded=list(assembled.degraded),
        debug=assembled.metadata.model_dump(mode="json") if debug else None,
    )
