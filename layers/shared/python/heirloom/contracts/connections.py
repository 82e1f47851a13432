"""The story_connections workflow's edges (story evolution, docs/design.md §9).

ConnectionsRequest
  -> ConnectionsPlan(ConnectionsPlanInput)          => ConnectionsPlanOutput (+ ContextRequest)
  -> IntentAnalysis -> (Choice) GraphTraversal       => GraphBranch (purpose "connections")
  -> AccessFilter(AccessFilterInput)                 => FilteredContext
  -> ConnectionsAssemble(ConnectionsAssembleInput)   => StoryConnections
"""

from __future__ import annotations

from typing import Literal, Self
from uuid import UUID

from pydantic import Field, model_validator

from heirloom.contracts.context import (
    MAX_HISTORY_MESSAGES,
    ContextRequest,
    Edge,
    FilteredContext,
    Message,
    Persona,
    RetrievalSource,
)

#: opening: the connections of a story someone sets out to evolve; enrichment: before the
#: summary, the connections of what the conversation named that it did not surface
ConnectionsKind = Literal["opening", "enrichment"]
#: what connects two stories
EntityKind = Literal["person", "place", "period", "event", "object"]
#: the most stories a caller may say were surfaced already
MAX_SURFACED = 200


class ConnectionsRequest(Edge):
    """The workflow input. `user_id` comes from the caller's verified identity, never a body."""

    kind: ConnectionsKind
    legacy_id: UUID
    user_id: UUID
    persona: Persona = Persona.BIOGRAPHER
    #: opening: the story (required); enrichment: the story being evolved, if any
    story_id: UUID | None = None
    #: enrichment: the conversation, oldest first
    messages: tuple[Message, ...] = Field(default=(), max_length=MAX_HISTORY_MESSAGES)
    #: enrichment: stories the chat already surfaced (besides those whose titles it quotes)
    surfaced_story_ids: tuple[UUID, ...] = Field(default=(), max_length=MAX_SURFACED)
    #: GRAPH_AUGMENTATION_ENABLED as the caller saw it
    graph_enabled: bool = True

    @model_validator(mode="after")
    def _kind_has_its_input(self) -> Self:
        if self.kind == "opening" and self.story_id is None:
            raise ValueError("opening connections need a story_id")
        if self.kind == "enrichment" and not self.messages:
            raise ValueError("enrichment needs the conversation's messages")
        return self


class ConnectionsPlanInput(Edge):
    connections: ConnectionsRequest


class ConnectionsPlanOutput(Edge):
    """The request with its query (the story's text, or the conversation) and, for an opening,
    the title of the readable story it came from."""

    connections: ConnectionsRequest
    request: ContextRequest
    story_title: str | None = None


class ConnectionsAssembleInput(Edge):
    connections: ConnectionsRequest
    request: ContextRequest
    story_title: str | None = None
    filtered: FilteredContext


class ConnectedStory(Edge):
    story_id: UUID
    title: str
    legacy_id: UUID
    legacy_name: str
    primary: bool
    #: how many of the entities the seed names this story shares
    shared: int = Field(ge=1)


class EntityConnections(Edge):
    """One person, place, period, event or object the story (or conversation) mentions, with the
    other stories the caller may read that connect to it, best first."""

    name: str
    kind: EntityKind
    count: int = Field(ge=0)
    stories: tuple[ConnectedStory, ...] = ()


class EnrichmentLine(Edge):
    story_id: UUID
    title: str
    entity: str
    #: "- Uncle Ray also appears in "The Furnace Street Four"" (rendered as data)
    text: str


class StoryConnections(Edge):
    kind: ConnectionsKind
    story_id: UUID | None = None
    story_title: str | None = None
    #: ranked: most connected first; the legacy's subject is left out (every story is his)
    entities: tuple[EntityConnections, ...] = ()
    #: enrichment: one line per connected story the conversation did not surface
    lines: tuple[EnrichmentLine, ...] = ()
    #: the block an opening instruction (or the summariser) can use; "" when nothing connects
    formatted: str = ""
    sources_used: tuple[RetrievalSource, ...] = ()
    degraded: tuple[RetrievalSource, ...] = ()
