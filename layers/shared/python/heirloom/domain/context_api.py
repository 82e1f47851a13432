"""The context API: a caller's question becomes a workflow request; the workflow's typed errors
become HTTP outcomes. The user id comes from the verified identity, never from the body."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool, field_validator

from heirloom.contracts.connections import MAX_SURFACED
from heirloom.contracts.context import (
    AS_OF_PATTERN,
    MAX_HISTORY_MESSAGES,
    MAX_QUERY_CHARS,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    Degradation,
    DifferingAccounts,
    Message,
    Persona,
    RetrievalSource,
    Suggestion,
)
from heirloom.contracts.records import NonBlankText
from heirloom.errors import AccessDenied, HeirloomError, InvalidRequest, NotFound, StoreUnavailable
from heirloom.safejson import bounded_loads


class WorkflowFailed(HeirloomError):
    """The workflow failed for a reason that is not the caller's (5xx)."""


class WorkflowTimedOut(WorkflowFailed):
    """A step without a fallback (AccessFilter, RankAssemble) or the whole execution ran out of
    time (`States.Timeout`): nothing was returned; the caller may retry."""


#: workflow error names (Lambda error types) -> the exception the API maps to a status
ERROR_TYPES: dict[str, type[HeirloomError]] = {
    "InvalidRequest": InvalidRequest,
    "AccessDenied": AccessDenied,
    "NotFound": NotFound,
    # AccessFilter could not reach PostgreSQL: the request failed closed, the caller may retry
    "StoreUnavailable": StoreUnavailable,
    "States.Timeout": WorkflowTimedOut,
}


def timed_out(status: str, error: str | None) -> str | None:
    """The error name of an execution that ended in `status`: a TIMED_OUT execution (the whole
    workflow's TimeoutSeconds) may carry none; it is a `States.Timeout` all the same."""
    return error or ("States.Timeout" if status == "TIMED_OUT" else None)


def raise_for_workflow_error(error: str | None, cause: str | None) -> None:
    message = cause or error or "workflow failed"
    with contextlib.suppress(ValueError, AttributeError):
        message = json.loads(message).get("errorMessage", message)
    raise ERROR_TYPES.get(error or "", WorkflowFailed)(message)


#: the largest body accepted, in UTF-8 bytes: a full history (20 x 4,000 characters) and the
#: query stay below it even with every character \u-escaped
MAX_BODY_BYTES = 1_048_576


def parse_body(text: str | bytes) -> Any:
    """A request body as JSON, refused with InvalidRequest (400) before the parser goes past
    MAX_BODY_BYTES or the limits of `heirloom.safejson` (deep nesting raised RecursionError, a
    5,000-digit integer ValueError: a 502 in Lambda)."""
    return bounded_loads(text, what="body", max_bytes=MAX_BODY_BYTES)


def json_request(event: dict[str, Any]) -> dict[str, Any]:
    """An API Gateway proxy event whose body, if it has one, is JSON: a base64 body decoded
    (UTF-8), a JSON media type written `application/json` whatever its case; InvalidRequest for
    any other body (a form or multipart body made the resolver raise: a 502)."""
    body = event.get("body")
    if body in (None, ""):
        return event
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(str(body), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise InvalidRequest("body: not base64 of UTF-8 text") from exc
    headers = {str(k): v for k, v in (event.get("headers") or {}).items()}
    named = [k for k in headers if k.lower() == "content-type"]
    media = str(headers[named[0]] or "").split(";")[0].strip().lower() if named else ""
    if media not in ("", "application/json"):
        raise InvalidRequest(f"body: Content-Type must be application/json, not {media[:60]!r}")
    for key in named:
        headers.pop(key)
    multi = {
        k: v for k, v in (event.get("multiValueHeaders") or {}).items() if str(k).lower() != "content-type"
    }
    typed = {"Content-Type": "application/json"} if named else {}
    return {
        **event,
        "body": body,
        "isBase64Encoded": False,
        "headers": {**headers, **typed},
        "multiValueHeaders": {**multi, **({"Content-Type": ["application/json"]} if named else {})},
    }


class ContextBody(BaseModel):
    """POST /legacies/{legacy_id}/context"""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: NonBlankText = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    persona: Persona
    history: tuple[Message, ...] = Field(default=(), max_length=MAX_HISTORY_MESSAGES)
    linked_story_id: UUID | None = None
    token_budget: int = Field(default=4000, ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET)
    elicitation: StrictBool = Field(
        default=False,
        description="The conversation is eliciting a story: the context marks at most one connection"
        " to suggest (`suggestion`) and ends with the graph suggestion directive",
    )
    as_of: AwareDatetime | None = Field(
        default=None,
        description="The stories and graph facts as they stood then (ISO 8601 with a time zone, not in"
        " the future): stories created later, and the facts only they support, are left out",
    )

    @field_validator("as_of", mode="before")
    @classmethod
    def _as_of_text(cls, value: object) -> object:
        if value is not None and (not isinstance(value, str) or not re.match(AS_OF_PATTERN, value)):
            raise ValueError("an ISO 8601 date and time with its time zone, e.g. 2020-01-31T12:00:00Z")
        return value

    @field_validator("as_of")
    @classmethod
    def _as_of_past(cls, value: datetime | None) -> datetime | None:
        if value is not None and value > datetime.now(UTC):
            raise ValueError("as_of is in the future")
        return value


class OpeningBody(BaseModel):
    """POST /legacies/{legacy_id}/stories/{story_id}/connections"""

    model_config = ConfigDict(extra="forbid", frozen=True)

    persona: Persona = Persona.BIOGRAPHER


class EnrichmentBody(BaseModel):
    """POST /legacies/{legacy_id}/enrichment"""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1, max_length=MAX_HISTORY_MESSAGES)
    persona: Persona = Persona.BIOGRAPHER
    #: the story being evolved: never a line of its own
    story_id: UUID | None = None
    surfaced_story_ids: tuple[UUID, ...] = Field(default=(), max_length=MAX_SURFACED)


class ConnectionsCall(BaseModel):
    """An opening or enrichment request as the Api step takes it, with the verified caller."""

    model_config = ConfigDict(frozen=True)

    body: OpeningBody | EnrichmentBody
    legacy_id: UUID
    user_id: UUID
    story_id: UUID | None = None


class ContextCall(BaseModel):
    """One request as the Api step takes it: the body and the verified caller."""

    model_config = ConfigDict(frozen=True)

    body: ContextBody
    legacy_id: UUID
    user_id: UUID
    is_admin: bool = False
    debug: bool = False


class ContextSource(BaseModel):
    story_id: UUID
    title: str
    legacy_id: UUID


class ContextResponse(BaseModel):
    context: str
    sources: list[ContextSource]
    tokens: int
    suggestion: Suggestion | None = Field(
        default=None, description="Elicitation mode: the one connection to suggest this turn, or none"
    )
    accounts: list[DifferingAccounts] = Field(
        default_factory=list,
        description="Facts readable stories by different narrators disagree on, each account credited"
        " to its narrator and story (the context's Differing Accounts section)",
    )
    sources_used: list[RetrievalSource] = Field(
        description="The retrieval sources that answered: vector (story search by meaning), graph"
    )
    degraded: list[Degradation] = Field(
        description="Sources this request wanted that failed, timed out or are switched off by the"
        " circuit breaker (the context is incomplete and opens with a Note line), and `rerank` when"
        " the reranking stage gave up (every story is there, in the first ranking's order)"
    )
    debug: dict[str, Any] | None = None
