"""Conversation memory (docs/decisions/0018): with the legacy's switch on, the facts a member's
messages state, read with the last 4 messages for "she"/"he", kept as that member's alone and
shown only in their own context; the member may turn the conversation into a story, which then
is read and ingested like any other. Each member lists and deletes their own conversations and
facts (docs/decisions/0021): another member's conversation reads as missing, whatever the role.

Extraction runs when a message is posted (its own call), never inside the context workflow.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from heirloom.contracts.access import ReadScope
from heirloom.contracts.context import ContextRequest, GraphFact, QueryIntent
from heirloom.contracts.conversation import (
    COREFERENCE_WINDOW,
    CURSOR_MAX_CHARS,
    PAGE_DEFAULT,
    PAGE_MAX,
    SEQ_MAX,
    ConversationDeleted,
    ConversationFact,
    ConversationFactPage,
    ConversationMessage,
    ConversationPage,
    ConversationStory,
    ConversationStoryBody,
    FactDeleted,
    MemorySetting,
    MessageBody,
    MessageResult,
)
from heirloom.contracts.extraction import ExtractedFact
from heirloom.contracts.records import Story
from heirloom.domain.access import require_may_create
from heirloom.domain.access_filter import curator_scope, scope_for
from heirloom.domain.chunking import content_hash
from heirloom.domain.extraction import extract_entities
from heirloom.domain.pii import scrub_pii
from heirloom.errors import Conflict, InvalidRequest, NotFound
from heirloom.ports import ConversationStore, EntityExtractor, StoryStore

#: words too common to tie a fact to a question ("the ring")
_COMMON = frozenset({"the", "and", "his", "her", "its", "our", "their", "with", "for", "from", "that"})
_IDS = uuid.UUID("0b7f4c52-6d1e-5c39-9a57-3f0c2e8d1a18")
_T = TypeVar("_T")


@dataclass(frozen=True)
class ConversationPorts:
    stories: StoryStore
    conversations: ConversationStore
    extractor: EntityExtractor | None = None
    #: starts a story's ingestion (the ingestion workflow); None: the caller ingests
    start_ingestion: Callable[[UUID], None] | None = None
    now: Callable[[], datetime] = lambda: datetime.now(UTC)


def memory_for(ports: ConversationPorts, legacy_id: UUID, user_id: UUID) -> MemorySetting:
    _curator(ports, legacy_id, user_id)
    return MemorySetting(enabled=ports.conversations.memory_enabled(legacy_id))


def set_memory_for(
    ports: ConversationPorts, legacy_id: UUID, user_id: UUID, body: MemorySetting
) -> MemorySetting:
    """Turn extraction of members' messages on or off. Off, what was stored stays its owner's
    (to list, delete or make a story of) and reaches no context until memory is on again."""
    _curator(ports, legacy_id, user_id)
    ports.conversations.set_memory(legacy_id, body.enabled)
    return body


def _curator(ports: ConversationPorts, legacy_id: UUID, user_id: UUID) -> ReadScope:
    return curator_scope(ports.stories, user_id, legacy_id, to="change conversation memory")


def _own_conversation(
    ports: ConversationPorts, legacy_id: UUID, user_id: UUID, conversation_id: UUID, last: int | None
) -> list[ConversationMessage]:
    """The conversation's messages (the last `last`), when it is the caller's in this legacy; a
    conversation of someone else reads as missing."""
    messages = ports.conversations.messages(conversation_id, last)
    if messages and (messages[0].user_id != user_id or messages[0].legacy_id != legacy_id):
        raise NotFound(f"no conversation {conversation_id} of yours in this legacy")
    return messages


def post_message(
    ports: ConversationPorts, legacy_id: UUID, user_id: UUID, conversation_id: UUID, body: MessageBody
) -> MessageResult:
    """Store a message of the caller's conversation and the facts it states (a user message),
    together. Memory off, or the caller's conversation deleted (its id stays deleted): Conflict,
    nothing stored."""
    scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)  # a member: NotFound, AccessDenied
    if not ports.conversations.memory_enabled(legacy_id):
        raise Conflict("conversation memory is off for this legacy; nothing was stored")
    earlier = _own_conversation(ports, legacy_id, user_id, conversation_id, COREFERENCE_WINDOW - 1)
    if not earlier:
        _not_deleted(ports, legacy_id, user_id, conversation_id)
    message = ConversationMessage(
        conversation_id=conversation_id,
        seq=(earlier[-1].seq + 1) if earlier else 1,
        legacy_id=legacy_id,
        user_id=user_id,
        role=body.role,
        content=scrub_pii(body.content),  # no contact data stored (seed 004)
        sent_at=ports.now(),
    )
    facts: list[ConversationFact] = []
    if message.role == "user" and ports.extractor is not None:
        known = [n for p in ports.stories.persons_of([legacy_id]) for n in (p.name, *p.aliases)]
        found = window_facts(ports.extractor, [*earlier, message], known)
        facts = [_stored(message, i, f) for i, f in enumerate(found)]
    if not ports.conversations.add_message(message, facts):
        _not_deleted(ports, legacy_id, user_id, conversation_id)  # deleted meanwhile
        raise Conflict("another message of this conversation arrived at the same time; send it again")
    return MessageResult(conversation_id=conversation_id, seq=message.seq, facts=tuple(facts))


def _not_deleted(ports: ConversationPorts, legacy_id: UUID, user_id: UUID, conversation_id: UUID) -> None:
    """A deleted conversation's id stays deleted: Conflict for its owner, and for anyone else
    the NotFound another member's conversation answers."""
    owner = ports.conversations.deleted_owner(conversation_id)
    if owner is None:
        return
    if owner != (legacy_id, user_id):
        raise NotFound(f"no conversation {conversation_id} of yours in this legacy")
    raise Conflict(
        f"conversation {conversation_id} was deleted and its id is not used again;"
        " start a new conversation with a new id; nothing was stored"
    )


def window_facts(
    extractor: EntityExtractor, window: Sequence[ConversationMessage], known_names: Sequence[str]
) -> list[ExtractedFact]:
    """The facts the last message of `window` states, read with the messages before it in the
    window (so "she" may be a person an earlier message named); facts of earlier messages are
    theirs, not repeated."""
    window = list(window)[-COREFERENCE_WINDOW:]
    newest = window[-1].content
    text = "\n\n".join(m.content for m in window)
    found = extract_entities(extractor, text, known_names=known_names).facts
    return [f for f in found if " ".join(f.sentence.split()) in " ".join(newest.split())]


def _stored(message: ConversationMessage, i: int, fact: ExtractedFact) -> ConversationFact:
    key = f"{message.conversation_id}|{message.seq}|{i}|{fact.source}|{fact.relation}|{fact.target}"
    return ConversationFact(
        id=uuid.uuid5(_IDS, key),
        conversation_id=message.conversation_id,
        seq=message.seq,
        legacy_id=message.legacy_id,
        user_id=message.user_id,
        source=fact.source,
        relation=fact.relation,
        target=fact.target,
        verb=fact.verb,
        sentence=fact.sentence,
        negated=fact.negated,
        confidence=fact.confidence,
        told_at=message.sent_at,
    )


def story_from_conversation(
    ports: ConversationPorts,
    legacy_id: UUID,
    user_id: UUID,
    conversation_id: UUID,
    body: ConversationStoryBody,
) -> ConversationStory:
    """The caller's messages of their conversation as one story they author; ingested as any
    story, so from then on the story's visibility decides who reads what it says. The same
    messages make the same story (its id is theirs), so a retry stores nothing twice. The
    visibility must be one the caller's role may create (domain/access.CREATES)."""
    scope = scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)
    require_may_create(scope.role, body.visibility)
    messages = _own_conversation(ports, legacy_id, user_id, conversation_id, None)
    own = [m for m in messages if m.role == "user"]
    if not own:
        raise NotFound(f"no conversation {conversation_id} of yours in this legacy")
    content = "\n\n".join(m.content for m in own)
    at = ports.now()
    story = Story(
        id=uuid.uuid5(_IDS, f"story|{conversation_id}|{own[-1].seq}"),
        legacy_id=legacy_id,
        author_user_id=user_id,
        title=body.title,
        content=content,
        visibility=body.visibility,
        created_at=at,
        updated_at=at,
    )
    if ports.stories.get_story(story.id) is None:
        ports.stories.upsert_story(story, content_hash(content))
        if ports.start_ingestion is not None:
            ports.start_ingestion(story.id)
    return ConversationStory(
        story_id=story.id, title=story.title, visibility=story.visibility, messages=len(own)
    )


def own_facts(
    store: ConversationStore, request: ContextRequest, intent: QueryIntent, limit: int
) -> tuple[GraphFact, ...]:
    """The requesting user's conversation facts that name someone or something the question,
    its history or the intent names, newest first, up to `limit`. Only ever the requester's
    own: the access filter keeps a conversation fact for its owner alone."""
    if limit <= 0 or not store.memory_enabled(request.legacy_id):
        return ()  # memory off: stored facts are kept, and reach no context
    said = set(
        _words(
            " ".join(
                [request.query, *(m.content for m in request.history), *(m.name for m in intent.matches)]
            )
        )
    )
    out: list[GraphFact] = []
    for f in store.facts_of(request.legacy_id, request.user_id, limit=200):
        if request.as_of is not None and f.told_at > request.as_of:
            continue
        if not (_words(f.source) | _words(f.target)) & said:
            continue
        out.append(
            GraphFact(
                subject_id=f"conversation:{f.id}:source",
                subject=f.source,
                predicate=f.relation,
                object_id=f"conversation:{f.id}:target",
                object=f.target,
                # "She married ..." says whom only with the messages before it
                sentence=f.sentence if _words(f.source) & _words(f.sentence) else f"{f.source}: {f.sentence}",
                # no story title: format.told_fact_sentence says where it comes from
                owner_user_id=f.user_id,
            )
        )
        if len(out) >= limit:
            break
    return tuple(out)


def _words(text: str) -> set[str]:
    """The words of `text` that can name someone or something (three letters or more)."""
    words = "".join(c if c.isalnum() else " " for c in text.casefold()).split()
    return {w for w in words if len(w) >= 3 and w not in _COMMON}


def conversations_for(
    ports: ConversationPorts,
    legacy_id: UUID,
    user_id: UUID,
    limit: int = PAGE_DEFAULT,
    cursor: str | None = None,
) -> ConversationPage:
    """One page of the caller's own conversations in the legacy, latest first (a member's,
    whatever the memory switch); `cursor`: the page after the one that gave it."""
    scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)
    after = None
    if cursor is not None:
        at, cid = _decode_cursor("conversations", cursor)
        after = (_parsed(_aware, at), _parsed(UUID, cid))
    found = ports.conversations.conversations_of(legacy_id, user_id, limit + 1, after)
    page, next_cursor = _page(
        found, limit, "conversations", lambda c: (c.last_message_at.isoformat(), str(c.conversation_id))
    )
    return ConversationPage(conversations=page, next_cursor=next_cursor)


def facts_for(
    ports: ConversationPorts,
    legacy_id: UUID,
    user_id: UUID,
    conversation_id: UUID,
    limit: int = PAGE_DEFAULT,
    cursor: str | None = None,
) -> ConversationFactPage:
    """One page of the facts of the caller's conversation, each with the sentence it came
    from, in message order; `cursor`: the page after the one that gave it."""
    scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)
    after = None
    if cursor is not None:
        seq, fid = _decode_cursor(f"facts:{conversation_id}", cursor)
        after = (_parsed(_seq, seq), _parsed(UUID, fid))
    if not _own_conversation(ports, legacy_id, user_id, conversation_id, 1):
        raise NotFound(f"no conversation {conversation_id} of yours in this legacy")
    found = ports.conversations.facts_in(legacy_id, user_id, conversation_id, limit + 1, after)
    page, next_cursor = _page(found, limit, f"facts:{conversation_id}", lambda f: (str(f.seq), str(f.id)))
    return ConversationFactPage(facts=page, next_cursor=next_cursor)


_BAD_CURSOR = "cursor: not one this listing gave; list again without it"


def _page(
    found: Sequence[_T], limit: int, listing: str, keys: Callable[[_T], tuple[str, str]]
) -> tuple[tuple[_T, ...], str | None]:
    """The first `limit` items of `found` (read with one more, to know whether a page follows)
    and the cursor of the next page, or None."""
    page = tuple(found[:limit])
    return page, _cursor(listing, *keys(page[-1])) if len(found) > limit else None


def _cursor(listing: str, *keys: str) -> str:
    """Opaque to clients: the listing it belongs to and the last item's sort keys."""
    return base64.urlsafe_b64encode(json.dumps([listing, *keys]).encode()).decode().rstrip("=")


def _decode_cursor(listing: str, cursor: str) -> list[str]:
    """The sort keys of a cursor `_cursor(listing, ...)` gave; InvalidRequest for anything else
    (a cursor of another listing, or of another conversation's facts, too)."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError:
        raise InvalidRequest(_BAD_CURSOR) from None
    if (
        not isinstance(decoded, list)
        or len(decoded) != 3
        or decoded[0] != listing
        or not all(isinstance(k, str) for k in decoded)
    ):
        raise InvalidRequest(_BAD_CURSOR)
    return decoded[1:]


def _seq(text: str) -> int:
    """A message number as the store holds it (1..SEQ_MAX); a forged one beyond is refused
    here, not by the database as a 500."""
    value = int(text)
    if not 1 <= value <= SEQ_MAX:
        raise ValueError("not a message number")
    return value


def _aware(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError("a time without its offset")
    return when


def _parsed(parse: Callable[[str], _T], key: str) -> _T:
    try:
        return parse(key)
    except ValueError:
        raise InvalidRequest(_BAD_CURSOR) from None


def delete_conversation(
    ports: ConversationPorts, legacy_id: UUID, user_id: UUID, conversation_id: UUID
) -> ConversationDeleted:
    """Remove the caller's conversation, its messages and facts together. Someone else's reads
    as missing (404, never 403). A story made of it stays: it is a story now."""
    scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)
    messages, facts = ports.conversations.delete_conversation(legacy_id, user_id, conversation_id)
    if not messages:
        raise NotFound(f"no conversation {conversation_id} of yours in this legacy")
    return ConversationDeleted(conversation_id=conversation_id, messages=messages, facts=facts)


def delete_fact(ports: ConversationPorts, legacy_id: UUID, user_id: UUID, fact_id: UUID) -> FactDeleted:
    """Remove one of the caller's conversation facts (its message stays)."""
    scope_for(ports.stories, user_id, legacy_id, cross_legacy=False)
    fact = ports.conversations.delete_fact(legacy_id, user_id, fact_id)
    if fact is None:
        raise NotFound(f"no conversation fact {fact_id} of yours in this legacy")
    return FactDeleted(fact_id=fact.id, conversation_id=fact.conversation_id)


#: what a conversation route answers
ConversationAnswer = (
    MemorySetting
    | MessageResult
    | ConversationStory
    | ConversationPage
    | ConversationFactPage
    | ConversationDeleted
    | FactDeleted
)


class ConversationCall(BaseModel):
    """One conversation-memory request as the Api step takes it: the route, its input, the
    verified caller."""

    model_config = ConfigDict(frozen=True)

    action: Literal[
        "memory", "set_memory", "message", "story", "conversations", "facts", "delete", "delete_fact"
    ]
    legacy_id: UUID
    user_id: UUID
    conversation_id: UUID | None = None
    fact_id: UUID | None = None
    memory: MemorySetting | None = None
    message: MessageBody | None = None
    story: ConversationStoryBody | None = None
    #: the listings' page size and where to go on from (`conversations`, `facts`)
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)
    cursor: str | None = Field(None, max_length=CURSOR_MAX_CHARS)


def converse(call: ConversationCall, ports: ConversationPorts) -> ConversationAnswer:
    legacy, user, conversation = call.legacy_id, call.user_id, call.conversation_id
    if call.action == "memory":
        return memory_for(ports, legacy, user)
    if call.action == "set_memory" and call.memory is not None:
        return set_memory_for(ports, legacy, user, call.memory)
    if call.action == "message" and conversation is not None and call.message is not None:
        return post_message(ports, legacy, user, conversation, call.message)
    if call.action == "story" and conversation is not None and call.story is not None:
        return story_from_conversation(ports, legacy, user, conversation, call.story)
    if call.action == "conversations":
        return conversations_for(ports, legacy, user, call.limit, call.cursor)
    if call.action == "facts" and conversation is not None:
        return facts_for(ports, legacy, user, conversation, call.limit, call.cursor)
    if call.action == "delete" and conversation is not None:
        return delete_conversation(ports, legacy, user, conversation)
    if call.action == "delete_fact" and call.fact_id is not None:
        return delete_fact(ports, legacy, user, call.fact_id)
    raise InvalidRequest(f"{call.action}: its input is missing")
