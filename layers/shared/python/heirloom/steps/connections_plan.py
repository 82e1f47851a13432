"""ConnectionsPlan: check that the caller may read the story (404 otherwise, as if missing) and turn the
story's own text, or the conversation, into the request the context steps take (purpose
"connections": every part of the text is matched for names)."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.access import ReadScope
from heirloom.contracts.connections import ConnectionsPlanInput, ConnectionsPlanOutput
from heirloom.contracts.context import (
    MAX_HISTORY_CHARS,
    MAX_HISTORY_MESSAGES,
    MAX_QUERY_CHARS,
    ContextRequest,
    Message,
)
from heirloom.contracts.records import Story
from heirloom.domain.access_filter import scope_for
from heirloom.domain.personas import load_personas
from heirloom.errors import NotFound
from heirloom.ports import StoryStore
from heirloom.services import Services


def run(data: ConnectionsPlanInput, services: Services) -> ConnectionsPlanOutput:
    return plan_connections(data, services.stories)


def plan_connections(data: ConnectionsPlanInput, store: StoryStore) -> ConnectionsPlanOutput:
    conn = data.connections
    # a persona that stays in its legacy opens no linked legacy's story either
    cross = load_personas()[conn.persona].traversal.include_cross_legacy
    scope = scope_for(store, conn.user_id, conn.legacy_id, cross_legacy=cross)
    story = readable_story(store, scope, conn.story_id) if conn.story_id else None
    opening = story if conn.kind == "opening" else None
    # an opening traverses from the story's own entities too; an enrichment only from what the
    # conversation named (the story it evolves is left out by ConnectionsAssemble)
    if opening is not None:
        text = f"{opening.title}\n\n{opening.content}"
    else:
        text = "\n\n".join(m.content for m in conn.messages)
    query, *rest = pieces(text, MAX_QUERY_CHARS) or [story.title if story else "conversation"]
    history = [Message(role="user", content=p) for p in pieces(" ".join(rest), MAX_HISTORY_CHARS)]
    request = ContextRequest(
        legacy_id=conn.legacy_id,
        user_id=conn.user_id,
        persona=conn.persona,
        query=query,
        history=tuple(history[:MAX_HISTORY_MESSAGES]),
        linked_story_id=opening.id if opening else None,
        graph_enabled=conn.graph_enabled,
        purpose="connections",
    )
    return ConnectionsPlanOutput(
        connections=conn, request=request, story_title=story.title if story else None
    )


def readable_story(store: StoryStore, scope: ReadScope, story_id: UUID) -> Story:
    """The story, if the scope may read it; else NotFound, the same whether it does not exist,
    lies outside the legacies the scope reaches or lies inside and the user may not read it (a
    refusal must not tell the caller that a story they may not read exists)."""
    story = store.get_story(story_id)
    meta = next(iter(store.story_meta([story_id])), None) if story is not None else None
    if story is None or meta is None or not scope.allows(meta):
        raise NotFound(f"story {story_id} does not exist in this legacy")
    return story


def pieces(text: str, size: int) -> list[str]:
    """`text` in parts of at most `size` characters, cut at whitespace where there is some."""
    out: list[str] = []
    rest = " ".join(text.split())
    while rest:
        if len(rest) <= size:
            out.append(rest)
            break
        cut = rest.rfind(" ", 0, size + 1)
        cut = cut if cut > 0 else size
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [p for p in out if p]
