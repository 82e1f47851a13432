"""Api: POST /legacies/{legacy_id}/context, /legacies/{legacy_id}/stories/{story_id}/connections
and /legacies/{legacy_id}/enrichment behind API Gateway (Cognito authorizer), and the curation
routes (merge suggestions, merge, undo, keep apart; the staging switch, staged entities and their
approval or rejection; the changelog) for a legacy's creator and admins; conversation memory (its
switch for creator and admins; a member's messages, the story made of them, and the member's own
conversations and facts listed and deleted)."""

import json
from typing import Annotated, Any, Literal
from uuid import UUID

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from heirloom.contracts.connections import StoryConnections
from heirloom.contracts.conversation import (
    CURSOR_MAX_CHARS,
    PAGE_DEFAULT,
    PAGE_MAX,
    ConversationDeleted,
    ConversationFactPage,
    ConversationPage,
    ConversationStory,
    ConversationStoryBody,
    FactDeleted,
    MemorySetting,
    MessageBody,
    MessageResult,
)
from heirloom.contracts.curation import (
    CHANGE_ID_MAX,
    ChangelogPage,
    DecisionBody,
    KeepApartBody,
    MergeBody,
    MergeResult,
    MergeSuggestion,
    StagedItem,
    StagingSetting,
)
from heirloom.domain.context_api import (
    ConnectionsCall,
    ContextBody,
    ContextCall,
    ContextResponse,
    EnrichmentBody,
    OpeningBody,
    WorkflowFailed,
    WorkflowTimedOut,
    json_request,
    parse_body,
)
from heirloom.domain.conversation_memory import ConversationCall
from heirloom.domain.curation_api import CurationCall
from heirloom.errors import AccessDenied, Conflict, InvalidRequest, NotFound, StoreUnavailable, error_contract
from heirloom.ports import ConnectionsWorkflow, ContextWorkflow
from heirloom.services import Services, default_services
from heirloom.steps.api import run

logger, tracer, metrics = Logger(), Tracer(auto_patch=False), Metrics()
#: bodies are parsed within depth, size and number limits (a 400 beyond them, never a crash)
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=parse_body)
STATUS = {InvalidRequest: 400, AccessDenied: 403, NotFound: 404, Conflict: 409}
#: the refusals, as the OpenAPI document describes them (validation errors are 400, not 422)
ERROR_BODY = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "reason": {"type": "string"}},
    "required": ["error", "reason"],
}
REFUSALS: dict[int, Any] = {
    **{
        code: {"description": text, "content": {"application/json": {"schema": ERROR_BODY}}}
        for code, text in (
            (
                400,
                "InvalidRequest: the path, query or body does not match the contract, or the body is"
                " not JSON (Content-Type application/json), larger than 1 MiB, nested more than 8"
                " levels deep or holds an integer of more than 20 digits",
            ),
            (
                403,
                "AccessDenied: no verified identity, not a member of the legacy (or no such legacy:"
                " the two read alike), or debug without admin",
            ),
            (
                404,
                "NotFound: the story does not exist or is not one the caller may read (the two read alike)",
            ),
            (503, "StoreUnavailable: the permission store is unreachable; nothing returned, retry later"),
            (504, "WorkflowTimedOut: context assembly ran out of time; nothing returned, retry later"),
        )
    },
}
RESPONSES: dict[int, Any] = {
    200: {
        "description": "The assembled context",
        "content": {"application/json": {"model": ContextResponse}},
    },
    **REFUSALS,
}
CONNECTIONS_RESPONSES: dict[int, Any] = {
    200: {
        "description": "The entities named and the readable stories connected to each, as data and as"
        " a formatted block",
        "content": {"application/json": {"model": StoryConnections}},
    },
    **REFUSALS,
}
#: failures that are not the caller's: a fixed reason, never the internal message
UNAVAILABLE = {
    StoreUnavailable: (503, "the permission store is unavailable; nothing was returned, retry later"),
    WorkflowTimedOut: (504, "context assembly ran out of time; nothing was returned, retry later"),
    WorkflowFailed: (500, "context assembly failed"),  # after its subclass above
}


def _claims() -> dict[str, Any]:
    authorizer = app.current_event.request_context.authorizer
    claims = authorizer.claims if authorizer else None
    if not claims or "sub" not in claims:
        raise AccessDenied("no verified identity")
    return dict(claims)


def _is_admin(claims: dict[str, Any]) -> bool:
    groups = claims.get("cognito:groups") or ""
    names = groups if isinstance(groups, list) else str(groups).strip("[]").replace(",", " ").split()
    return "admin" in names


@app.post("/legacies/<legacy_id>/context", responses=RESPONSES)
@tracer.capture_method
def post_context(
    legacy_id: UUID, body: Annotated[ContextBody, Body()], debug: Annotated[bool, Query()] = False
) -> ContextResponse:
    claims = _claims()
    call = ContextCall(
        body=body, legacy_id=legacy_id, user_id=_user_id(claims), is_admin=_is_admin(claims), debug=debug
    )
    return run(call, app.context["services"], app.context.get("workflow"))


def _user_id(claims: dict[str, Any]) -> UUID:
    try:
        return UUID(str(claims["sub"]))
    except ValueError as exc:
        raise AccessDenied("identity is not a user id") from exc


@app.post("/legacies/<legacy_id>/stories/<story_id>/connections", responses=CONNECTIONS_RESPONSES)
@tracer.capture_method
def post_connections(
    legacy_id: UUID, story_id: UUID, body: Annotated[OpeningBody, Body()]
) -> StoryConnections:
    """Opening connections: the people, places and periods the story names, and for each the other
    stories the caller may read that share it (the story itself must be readable)."""
    call = ConnectionsCall(body=body, legacy_id=legacy_id, user_id=_user_id(_claims()), story_id=story_id)
    return run(call, app.context["services"], connections_workflow=app.context.get("connections"))


@app.post("/legacies/<legacy_id>/enrichment", responses=CONNECTIONS_RESPONSES)
@tracer.capture_method
def post_enrichment(legacy_id: UUID, body: Annotated[EnrichmentBody, Body()]) -> StoryConnections:
    """Pre-summary enrichment: "Additional Context from Connected Stories" lines for the stories
    the conversation's entities connect to and the chat did not surface."""
    call = ConnectionsCall(body=body, legacy_id=legacy_id, user_id=_user_id(_claims()))
    return run(call, app.context["services"], connections_workflow=app.context.get("connections"))


def _answers(model: Any, reasons: dict[int, str]) -> dict[int, Any]:
    """A route's OpenAPI answers: 200 with the model, or a typed refusal per status."""
    error = {"application/json": {"schema": ERROR_BODY}}
    return {200: {"description": "OK", "content": {"application/json": {"model": model}}}} | {
        code: {"description": text, "content": error} for code, text in reasons.items()
    }


def _curation_responses(model: Any) -> dict[int, Any]:
    """The curation routes' answers: the model, or a typed refusal."""
    reasons = {
        400: "InvalidRequest: the path or body does not match the contract",
        403: "AccessDenied: no verified identity, not a member (or no such legacy), or not the"
        " legacy's creator or an admin",
        404: "NotFound: the entity (or one no story the caller may read names), merge or staged"
        " item does not exist",
        409: "Conflict: the merge was undone already, or a later merge must be undone first; the"
        " staged item's story text changed since it was staged",
        503: "StoreUnavailable: the permission store is unreachable; retry later",
    }
    return _answers(model, reasons)


@app.get("/legacies/<legacy_id>/merge-suggestions", responses=_curation_responses(list[MergeSuggestion]))
def get_merge_suggestions(legacy_id: UUID) -> list[MergeSuggestion]:
    return _curate(action="suggestions", legacy_id=legacy_id)


@app.post("/legacies/<legacy_id>/merges", responses=_curation_responses(MergeResult))
def post_merge(legacy_id: UUID, body: Annotated[MergeBody, Body()]) -> MergeResult:
    return _curate(action="merge", legacy_id=legacy_id, merge=body)


@app.post("/legacies/<legacy_id>/merges/<merge_id>/undo", responses=_curation_responses(MergeResult))
def post_unmerge(legacy_id: UUID, merge_id: UUID) -> MergeResult:
    return _curate(action="undo", legacy_id=legacy_id, merge_id=merge_id)


@app.post("/legacies/<legacy_id>/keep-apart", responses=_curation_responses(KeepApartBody))
def post_keep_apart(legacy_id: UUID, body: Annotated[KeepApartBody, Body()]) -> KeepApartBody:
    return _curate(action="keep_apart", legacy_id=legacy_id, keep_apart=body)


@app.get("/legacies/<legacy_id>/staging", responses=_curation_responses(StagingSetting))
def get_staging(legacy_id: UUID) -> StagingSetting:
    return _curate(action="staging", legacy_id=legacy_id)


@app.post("/legacies/<legacy_id>/staging", responses=_curation_responses(StagingSetting))
def post_staging(legacy_id: UUID, body: Annotated[StagingSetting, Body()]) -> StagingSetting:
    """Staging on: extracted places, events and objects wait for approval before any retrieval."""
    return _curate(action="set_staging", legacy_id=legacy_id, staging=body)


@app.get("/legacies/<legacy_id>/staged", responses=_curation_responses(list[StagedItem]))
def get_staged(
    legacy_id: UUID,
    status: Annotated[Literal["pending", "approved", "rejected", "all"], Query()] = "pending",
) -> list[StagedItem]:
    return _curate(action="staged", legacy_id=legacy_id, status=None if status == "all" else status)


@app.post("/legacies/<legacy_id>/staged/<item_id>/approve", responses=_curation_responses(StagedItem))
def post_approve(
    legacy_id: UUID, item_id: UUID, body: Annotated[DecisionBody | None, Body()] = None
) -> StagedItem:
    """Approve a staged item (`name`, `type`: an optional edit; no body: as extracted) into the graph."""
    return _curate(action="approve", legacy_id=legacy_id, item_id=item_id, decision=body or DecisionBody())


@app.post("/legacies/<legacy_id>/staged/<item_id>/reject", responses=_curation_responses(StagedItem))
def post_reject(legacy_id: UUID, item_id: UUID) -> StagedItem:
    return _curate(action="reject", legacy_id=legacy_id, item_id=item_id)


@app.get("/legacies/<legacy_id>/changelog", responses=_curation_responses(ChangelogPage))
def get_changelog(
    legacy_id: UUID,
    before: Annotated[int | None, Query(ge=1, le=CHANGE_ID_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> ChangelogPage:
    """The legacy's graph changes, newest first; `before` (a change id) pages on."""
    return _curate(action="changelog", legacy_id=legacy_id, before=before, limit=limit)


def _curate(**fields: Any) -> Any:
    return run(CurationCall(user_id=_user_id(_claims()), **fields), app.context["services"])


def _conversation_responses(model: Any) -> dict[int, Any]:
    """The conversation-memory routes' answers: the model, or a typed refusal."""
    reasons = {
        400: "InvalidRequest: the path, query or body does not match the contract (a `limit`"
        " outside 1..200, a `cursor` no listing gave)",
        403: "AccessDenied: no verified identity, not a member of the legacy (or no such legacy),"
        " (the switch) not its creator or an admin, or (the story) a visibility the caller's role"
        " may not create",
        404: "NotFound: a conversation or fact of the caller's in the legacy does not exist"
        " (another member's reads as missing)",
        409: "Conflict: conversation memory is off for the legacy (nothing stored), the caller"
        " deleted this conversation (its id is not used again), or another message of the"
        " conversation arrived at the same time",
        503: "StoreUnavailable: the permission store is unreachable; retry later",
    }
    return _answers(model, reasons)


@app.get("/legacies/<legacy_id>/conversation-memory", responses=_conversation_responses(MemorySetting))
def get_conversation_memory(legacy_id: UUID) -> MemorySetting:
    return _converse(action="memory", legacy_id=legacy_id)


@app.post("/legacies/<legacy_id>/conversation-memory", responses=_conversation_responses(MemorySetting))
def post_conversation_memory(legacy_id: UUID, body: Annotated[MemorySetting, Body()]) -> MemorySetting:
    """On: the messages members send while talking with a persona may be extracted, each
    member's facts shown in their own context alone (off by default)."""
    return _converse(action="set_memory", legacy_id=legacy_id, memory=body)


@app.post(
    "/legacies/<legacy_id>/conversations/<conversation_id>/messages",
    responses=_conversation_responses(MessageResult),
)
def post_conversation_message(
    legacy_id: UUID, conversation_id: UUID, body: Annotated[MessageBody, Body()]
) -> MessageResult:
    """Store a message of the caller's conversation and the facts it states (read with the last
    4 messages), for the caller's own context."""
    return _converse(action="message", legacy_id=legacy_id, conversation_id=conversation_id, message=body)


@app.post(
    "/legacies/<legacy_id>/conversations/<conversation_id>/story",
    responses=_conversation_responses(ConversationStory),
)
def post_conversation_story(
    legacy_id: UUID, conversation_id: UUID, body: Annotated[ConversationStoryBody, Body()]
) -> ConversationStory:
    """The caller's messages of the conversation as one story (personal unless said otherwise)."""
    return _converse(action="story", legacy_id=legacy_id, conversation_id=conversation_id, story=body)


#: a listing's page size (`limit`) and where it goes on from (`cursor`, as `next_cursor` gave it)
Limit = Annotated[int, Query(ge=1, le=PAGE_MAX)]
Cursor = Annotated[str | None, Query(min_length=1, max_length=CURSOR_MAX_CHARS)]


@app.get("/legacies/<legacy_id>/conversations", responses=_conversation_responses(ConversationPage))
def get_conversations(
    legacy_id: UUID, limit: Limit = PAGE_DEFAULT, cursor: Cursor = None
) -> ConversationPage:
    """The caller's own conversations in the legacy, latest first, with their counts; `limit`
    per page (50 unless given, at most 200), `cursor` (a page's `next_cursor`) the next page."""
    return _converse(action="conversations", legacy_id=legacy_id, limit=limit, cursor=cursor)


@app.get(
    "/legacies/<legacy_id>/conversations/<conversation_id>/facts",
    responses=_conversation_responses(ConversationFactPage),
)
def get_conversation_facts(
    legacy_id: UUID, conversation_id: UUID, limit: Limit = PAGE_DEFAULT, cursor: Cursor = None
) -> ConversationFactPage:
    """The facts of the caller's conversation, each with the sentence it came from, in message
    order; paged as the conversations are."""
    return _converse(
        action="facts", legacy_id=legacy_id, conversation_id=conversation_id, limit=limit, cursor=cursor
    )


@app.delete(
    "/legacies/<legacy_id>/conversations/<conversation_id>",
    responses=_conversation_responses(ConversationDeleted),
)
def delete_conversation(legacy_id: UUID, conversation_id: UUID) -> ConversationDeleted:
    """Remove the caller's conversation: its messages and facts, together."""
    return _converse(action="delete", legacy_id=legacy_id, conversation_id=conversation_id)


@app.delete(
    "/legacies/<legacy_id>/conversation-facts/<fact_id>", responses=_conversation_responses(FactDeleted)
)
def delete_conversation_fact(legacy_id: UUID, fact_id: UUID) -> FactDeleted:
    """Remove one of the caller's conversation facts."""
    return _converse(action="delete_fact", legacy_id=legacy_id, fact_id=fact_id)


def _converse(**fields: Any) -> Any:
    return run(ConversationCall(user_id=_user_id(_claims()), **fields), app.context["services"])


@app.not_found
def _no_route(exc: Exception) -> Response[dict[str, Any]]:
    """A path the route does not match (API Gateway passes any segment on) reads like any 404."""
    return Response(404, content_types.APPLICATION_JSON, {"error": "NotFound", "reason": "no such resource"})


@app.exception_handler(RequestValidationError)
def _invalid(exc: RequestValidationError) -> Response[dict[str, Any]]:
    # a location part is cut short: a body that is no JSON object may be one huge key
    reasons = [f"{'.'.join(str(p)[:60] for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]]
    return Response(
        400, content_types.APPLICATION_JSON, {"error": "InvalidRequest", "reason": "; ".join(reasons)}
    )


@app.exception_handler(InvalidRequest)
@app.exception_handler(Conflict)
@app.exception_handler(AccessDenied)
@app.exception_handler(NotFound)
def _typed(exc: Exception) -> Response[dict[str, Any]]:
    status = next(code for kind, code in STATUS.items() if isinstance(exc, kind))
    return Response(status, content_types.APPLICATION_JSON, {"error": type(exc).__name__, "reason": str(exc)})


@app.exception_handler(StoreUnavailable)
@app.exception_handler(WorkflowFailed)
def _unavailable(exc: Exception) -> Response[dict[str, Any]]:
    status, reason = next(out for kind, out in UNAVAILABLE.items() if isinstance(exc, kind))
    logger.error("context_unavailable", error=type(exc).__name__, detail=str(exc)[:300])
    return Response(status, content_types.APPLICATION_JSON, {"error": type(exc).__name__, "reason": reason})


@error_contract
@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(
    event: dict[str, Any],
    context: LambdaContext,
    services: Services | None = None,
    workflow: ContextWorkflow | None = None,
    connections: ConnectionsWorkflow | None = None,
) -> dict[str, Any]:
    try:
        event = json_request(event)
    except InvalidRequest as exc:  # before the resolver, which would raise on a form body
        return {
            "statusCode": 400,
            "multiValueHeaders": {"Content-Type": [content_types.APPLICATION_JSON]},
            "body": json.dumps({"error": "InvalidRequest", "reason": str(exc)}),
            "isBase64Encoded": False,
        }
    app.append_context(services=services or default_services(), workflow=workflow, connections=connections)
    return app.resolve(event, context)
