"""Conversation memory's values (docs/decisions/0018): the per-legacy switch, a message as the
API takes and stores it, the facts extracted from a user's messages (the user's alone), and a
story made from a conversation."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from heirloom.contracts.context import MAX_HISTORY_CHARS
from heirloom.contracts.extraction import FactRelation
from heirloom.contracts.records import Name, NonBlankText, Visibility

#: messages read for pronoun coreference: the new one and the three before it (seed 004)
COREFERENCE_WINDOW = 4
#: a listing's page size when `limit` is not given, and the most one page may hold
PAGE_DEFAULT, PAGE_MAX = 50, 200
#: the longest cursor a listing accepts (the ones it gives are under 150 characters)
CURSOR_MAX_CHARS = 200


#: the largest message number the store holds (`seq integer`)
SEQ_MAX = 2**31 - 1


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MemorySetting(Frozen):
    """GET/POST /legacies/{legacy_id}/conversation-memory: whether members' conversation
    messages may be extracted (off by default)."""

    enabled: StrictBool  # "off", "yes" or 0 are refused, not read as a switch


class MessageBody(Frozen):
    """POST /legacies/{legacy_id}/conversations/{conversation_id}/messages. Only `user` messages
    are extracted; `assistant` ones are kept for the coreference window."""

    role: Literal["user", "assistant"] = "user"
    content: NonBlankText = Field(min_length=1, max_length=MAX_HISTORY_CHARS)


class ConversationMessage(Frozen):
    conversation_id: UUID
    #: 1, 2, ... in the order the conversation's messages arrived
    seq: int = Field(ge=1, le=SEQ_MAX)
    legacy_id: UUID
    #: the conversation's owner (every message of one conversation has the same)
    user_id: UUID
    role: Literal["user", "assistant"]
    content: str
    sent_at: datetime


class ConversationFact(Frozen):
    """A fact one of the owner's messages states; provenance is the conversation, not a story."""

    id: UUID
    conversation_id: UUID
    seq: int
    legacy_id: UUID
    user_id: UUID
    source: str
    relation: FactRelation
    target: str
    verb: str
    sentence: str
    negated: bool = False
    confidence: float = Field(ge=0.0, le=1.0)
    told_at: datetime


class MessageResult(Frozen):
    """What a posted message left stored: the message's place and the facts it stated."""

    conversation_id: UUID
    seq: int
    facts: tuple[ConversationFact, ...] = ()


class ConversationStoryBody(Frozen):
    """POST /legacies/{legacy_id}/conversations/{conversation_id}/story: the owner's messages
    become one story (personal unless said otherwise), read and ingested like any other."""

    title: Name
    visibility: Visibility = Visibility.PERSONAL


class ConversationStory(Frozen):
    story_id: UUID
    title: str
    visibility: Visibility
    #: how many of the owner's messages it holds
    messages: int


class ConversationSummary(Frozen):
    """GET /legacies/{legacy_id}/conversations: one of the caller's conversations."""

    conversation_id: UUID
    first_message_at: datetime
    last_message_at: datetime
    messages: int
    facts: int


class ConversationPage(Frozen):
    """GET /legacies/{legacy_id}/conversations: the caller's conversations, the latest message's
    first; `next_cursor` asks for the next page (None: the last)."""

    conversations: tuple[ConversationSummary, ...]
    next_cursor: str | None = None


class ConversationFactPage(Frozen):
    """GET .../conversations/{conversation_id}/facts: its facts in message order; `next_cursor`
    asks for the next page (None: the last)."""

    facts: tuple[ConversationFact, ...]
    next_cursor: str | None = None


class ConversationDeleted(Frozen):
    """DELETE .../conversations/{conversation_id}: what was removed, messages and facts together."""

    conversation_id: UUID
    messages: int
    facts: int


class FactDeleted(Frozen):
    """DELETE .../conversation-facts/{fact_id}: the one fact removed."""

    fact_id: UUID
    conversation_id: UUID
