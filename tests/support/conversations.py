"""Conversation-memory test material: the 4-message coreference window, posting messages through
the API, and one owner's fact planted straight into a conversation store."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from heirloom.contracts.conversation import ConversationFact, ConversationMessage

#: a pronoun in the 4th message, its person named in the 1st
WINDOW = [
    "Ada Marsh grew up on a farm near the river.",
    "We went there every summer.",
    "The kitchen always smelled of bread.",
    "She married Tom Reed in 1950.",
]


def say(call, user: str, conversation: str, messages: list[str]) -> list[Any]:
    """Post each message to the conversation as `user` (a `legacy_caller`); their answers."""
    out = []
    for text in messages:
        status, body = call("POST", f"/conversations/{conversation}/messages", user, {"content": text})
        assert status == 200, body
        out.append(body)
    return out


def plant(
    conversations: Any, legacy: str | UUID, owner: str | UUID, token: str, at: datetime | None = None
) -> tuple[UUID, UUID]:
    """One message stating one fact ("Ada Marsh married <token>."), stored as the owner's
    conversation; (conversation, fact)."""
    cid, fid, at = uuid.uuid4(), uuid.uuid4(), at or datetime.now(UTC)
    message = ConversationMessage(
        conversation_id=cid, seq=1, legacy_id=legacy, user_id=owner, role="user",
        content=f"Ada Marsh married {token}.", sent_at=at,
    )  # fmt: skip
    fact = ConversationFact(
        id=fid, conversation_id=cid, seq=1, legacy_id=legacy, user_id=owner, source="Ada Marsh",
        relation="MARRIED", target=token, verb="married", sentence=message.content, confidence=0.9,
        told_at=at,
    )  # fmt: skip
    assert conversations.add_message(message, [fact])
    return cid, fid
