"""In-memory conversation memory (tests, the in-memory stack): as PgConversationStore."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from heirloom.contracts.conversation import ConversationFact, ConversationMessage, ConversationSummary


class MemoryConversationStore:
    def __init__(self) -> None:
        self.enabled: set[UUID] = set()
        self.by_conversation: dict[UUID, list[ConversationMessage]] = {}
        self.facts: list[ConversationFact] = []
        #: deleted conversation -> (legacy, owner): the id stays deleted
        self.deleted: dict[UUID, tuple[UUID, UUID]] = {}

    def memory_enabled(self, legacy_id: UUID) -> bool:
        return legacy_id in self.enabled

    def set_memory(self, legacy_id: UUID, enabled: bool) -> None:
        (self.enabled.add if enabled else self.enabled.discard)(legacy_id)

    def messages(self, conversation_id: UUID, last: int | None = None) -> list[ConversationMessage]:
        found = self.by_conversation.get(conversation_id, [])
        return list(found[-last:] if last else found)

    def add_message(self, message: ConversationMessage, facts: Sequence[ConversationFact]) -> bool:
        if message.conversation_id in self.deleted:
            return False
        stored = self.by_conversation.setdefault(message.conversation_id, [])
        if any(m.seq == message.seq for m in stored):
            return False
        stored.append(message)
        stored.sort(key=lambda m: m.seq)
        self.facts.extend(facts)
        return True

    def deleted_owner(self, conversation_id: UUID) -> tuple[UUID, UUID] | None:
        return self.deleted.get(conversation_id)

    def facts_of(self, legacy_id: UUID, user_id: UUID, limit: int) -> list[ConversationFact]:
        own = [f for f in self.facts if f.legacy_id == legacy_id and f.user_id == user_id]
        return sorted(own, key=lambda f: (f.told_at, f.seq), reverse=True)[:limit]

    def _owned(self, legacy_id: UUID, user_id: UUID, conversation_id: UUID) -> list[ConversationMessage]:
        found = self.by_conversation.get(conversation_id, [])
        return found if found and (found[0].legacy_id, found[0].user_id) == (legacy_id, user_id) else []

    def conversations_of(
        self,
        legacy_id: UUID,
        user_id: UUID,
        limit: int | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> list[ConversationSummary]:
        out = [
            ConversationSummary(
                conversation_id=cid,
                first_message_at=min(m.sent_at for m in found),
                last_message_at=max(m.sent_at for m in found),
                messages=len(found),
                facts=sum(f.conversation_id == cid for f in self.facts),
            )
            for cid in self.by_conversation
            if (found := self._owned(legacy_id, user_id, cid))
        ]
        ranked = sorted(out, key=lambda c: (c.last_message_at, str(c.conversation_id)), reverse=True)
        if after is not None:
            ranked = [
                c for c in ranked if (c.last_message_at, str(c.conversation_id)) < (after[0], str(after[1]))
            ]
        return ranked[:limit]

    def facts_in(
        self,
        legacy_id: UUID,
        user_id: UUID,
        conversation_id: UUID,
        limit: int | None = None,
        after: tuple[int, UUID] | None = None,
    ) -> list[ConversationFact]:
        if not self._owned(legacy_id, user_id, conversation_id):
            return []
        ranked = sorted(
            (f for f in self.facts if f.conversation_id == conversation_id), key=lambda f: (f.seq, str(f.id))
        )
        if after is not None:
            ranked = [f for f in ranked if (f.seq, str(f.id)) > (after[0], str(after[1]))]
        return ranked[:limit]

    def delete_conversation(self, legacy_id: UUID, user_id: UUID, conversation_id: UUID) -> tuple[int, int]:
        found = self._owned(legacy_id, user_id, conversation_id)
        if not found:
            return 0, 0
        del self.by_conversation[conversation_id]
        self.deleted[conversation_id] = (legacy_id, user_id)
        kept = [f for f in self.facts if f.conversation_id != conversation_id]
        removed, self.facts = len(self.facts) - len(kept), kept
        return len(found), removed

    def delete_fact(self, legacy_id: UUID, user_id: UUID, fact_id: UUID) -> ConversationFact | None:
        for f in self.facts:
            if f.id == fact_id and (f.legacy_id, f.user_id) == (legacy_id, user_id):
                self.facts.remove(f)
                return f
        return None

    def forget_member(self, legacy_id: UUID, user_id: UUID) -> int:
        owned = [cid for cid in list(self.by_conversation) if self._owned(legacy_id, user_id, cid)]
        return sum(self.delete_conversation(legacy_id, user_id, cid)[0] for cid in owned)
