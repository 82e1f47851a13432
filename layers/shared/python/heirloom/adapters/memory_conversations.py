"""In-memory conversation memory (tests, the in-memory stack): as PgConversationStore."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from heirloom.contracts.conversation import ConversationFact, ConversationMessage


class MemoryConversationStore:
    def __init__(self) -> None:
        self.enabled: set[UUID] = set()
        self.by_conversation: dict[UUID, list[ConversationMessage]] = {}
        self.facts: list[ConversationFact] = []

    def memory_enabled(self, legacy_id: UUID) -> bool:
        return legacy_id in self.enabled

    def set_memory(self, legacy_id: UUID, enabled: bool) -> None:
        (self.enabled.add if enabled else self.enabled.discard)(legacy_id)

    def messages(self, conversation_id: UUID, last: int | None = None) -> list[ConversationMessage]:
        found = self.by_conversation.get(conversation_id, [])
        return list(found[-last:] if last else found)

    def add_message(self, message: ConversationMessage, facts: Sequence[ConversationFact]) -> bool:
        stored = self.by_conversation.setdefault(message.conversation_id, [])
        if any(m.seq == message.seq for m in stored):
            return False
        stored.append(message)
        stored.sort(key=lambda m: m.seq)
        self.facts.extend(facts)
        return True

    def facts_of(self, legacy_id: UUID, user_id: UUID, limit: int) -> list[ConversationFact]:
        own = [f for f in self.facts if f.legacy_id == legacy_id and f.user_id == user_id]
        return sorted(own, key=lambda f: (f.told_at, f.seq), reverse=True)[:limit]
