"""Conversation memory in PostgreSQL (docs/decisions/0018, 0021): the legacy's switch, the
messages, and the facts of the owner's messages, a message and its facts in one transaction;
every read and delete by its owner names them (`legacy_id`, `user_id`) in the statement. A
deleted conversation leaves a tombstone (migration 017); a message and a delete of one
conversation serialise on an advisory lock, so no message lands in a conversation deleted
meanwhile."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from heirloom.adapters.postgres.rows import StoreBase, advisory_lock, advisory_locks
from heirloom.contracts.conversation import ConversationFact, ConversationMessage, ConversationSummary

_MESSAGE_COLUMNS = "conversation_id, seq, legacy_id, user_id, role, content, sent_at"
_FACT_COLUMNS = (
    "id, conversation_id, seq, legacy_id, user_id, source, relation, target, verb, sentence, negated,"
    " confidence, told_at"
)


class PgConversationStore(StoreBase):
    def memory_enabled(self, legacy_id: UUID) -> bool:
        row = self._one("SELECT conversation_memory FROM legacies WHERE id = %s", (legacy_id,))
        return bool(row and row["conversation_memory"])

    def set_memory(self, legacy_id: UUID, enabled: bool) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE legacies SET conversation_memory = %s WHERE id = %s", (enabled, legacy_id))

    def messages(self, conversation_id: UUID, last: int | None = None) -> list[ConversationMessage]:
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM conversation_messages WHERE conversation_id = %s"
                " ORDER BY seq DESC LIMIT %s",
                (conversation_id, last),
            )
            .fetchall()
        )
        return [ConversationMessage(**r) for r in reversed(rows)]

    def add_message(self, message: ConversationMessage, facts: Sequence[ConversationFact]) -> bool:
        with self.db.transaction() as conn:
            advisory_lock(conn, f"conversation:{message.conversation_id}")
            if conn.execute(
                "SELECT 1 FROM conversation_tombstones WHERE conversation_id = %s", (message.conversation_id,)
            ).fetchone():
                return False
            inserted = conn.execute(
                f"INSERT INTO conversation_messages ({_MESSAGE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (conversation_id, seq) DO NOTHING RETURNING seq",
                (
                    message.conversation_id,
                    message.seq,
                    message.legacy_id,
                    message.user_id,
                    message.role,
                    message.content,
                    message.sent_at,
                ),
            ).fetchone()
            if inserted is None:
                return False
            for f in facts:
                conn.execute(
                    f"INSERT INTO conversation_facts ({_FACT_COLUMNS})"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        f.id,
                        f.conversation_id,
                        f.seq,
                        f.legacy_id,
                        f.user_id,
                        f.source,
                        f.relation,
                        f.target,
                        f.verb,
                        f.sentence,
                        f.negated,
                        f.confidence,
                        f.told_at,
                    ),
                )
            return True

    def deleted_owner(self, conversation_id: UUID) -> tuple[UUID, UUID] | None:
        row = self._one(
            "SELECT legacy_id, user_id FROM conversation_tombstones WHERE conversation_id = %s",
            (conversation_id,),
        )
        return (row["legacy_id"], row["user_id"]) if row else None

    def facts_of(self, legacy_id: UUID, user_id: UUID, limit: int) -> list[ConversationFact]:
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_FACT_COLUMNS} FROM conversation_facts WHERE legacy_id = %s AND user_id = %s"
                " ORDER BY told_at DESC, seq DESC, id LIMIT %s",
                (legacy_id, user_id, limit),
            )
            .fetchall()
        )
        return [ConversationFact(**r) for r in rows]

    def conversations_of(
        self,
        legacy_id: UUID,
        user_id: UUID,
        limit: int | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> list[ConversationSummary]:
        at, cid = after or (None, None)
        rows = (
            self.db.connection()
            .execute(
                "SELECT * FROM (SELECT m.conversation_id, min(m.sent_at) AS first_message_at,"
                " max(m.sent_at) AS last_message_at, count(*) AS messages,"
                " (SELECT count(*) FROM conversation_facts f WHERE f.conversation_id = m.conversation_id"
                "  AND f.legacy_id = %s AND f.user_id = %s) AS facts"
                " FROM conversation_messages m WHERE m.legacy_id = %s AND m.user_id = %s"
                " GROUP BY m.conversation_id) c"
                " WHERE %s::timestamptz IS NULL OR (c.last_message_at, c.conversation_id) < (%s, %s::uuid)"
                " ORDER BY last_message_at DESC, conversation_id DESC LIMIT %s",
                (legacy_id, user_id, legacy_id, user_id, at, at, cid, limit),
            )
            .fetchall()
        )
        return [ConversationSummary(**r) for r in rows]

    def facts_in(
        self,
        legacy_id: UUID,
        user_id: UUID,
        conversation_id: UUID,
        limit: int | None = None,
        after: tuple[int, UUID] | None = None,
    ) -> list[ConversationFact]:
        seq, fid = after or (None, None)
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_FACT_COLUMNS} FROM conversation_facts"
                " WHERE conversation_id = %s AND legacy_id = %s AND user_id = %s"
                " AND (%s::integer IS NULL OR (seq, id) > (%s, %s::uuid)) ORDER BY seq, id LIMIT %s",
                (conversation_id, legacy_id, user_id, seq, seq, fid, limit),
            )
            .fetchall()
        )
        return [ConversationFact(**r) for r in rows]

    def delete_conversation(self, legacy_id: UUID, user_id: UUID, conversation_id: UUID) -> tuple[int, int]:
        owner = (conversation_id, legacy_id, user_id)
        with self.db.transaction() as conn:
            advisory_lock(conn, f"conversation:{conversation_id}")
            facts = conn.execute(
                "DELETE FROM conversation_facts WHERE conversation_id = %s AND legacy_id = %s AND user_id = %s",
                owner,
            ).rowcount
            messages = conn.execute(
                "DELETE FROM conversation_messages WHERE conversation_id = %s AND legacy_id = %s"
                " AND user_id = %s",
                owner,
            ).rowcount
            if messages:
                conn.execute(
                    "INSERT INTO conversation_tombstones (conversation_id, legacy_id, user_id)"
                    " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    (conversation_id, legacy_id, user_id),
                )
        return messages, facts

    def delete_fact(self, legacy_id: UUID, user_id: UUID, fact_id: UUID) -> ConversationFact | None:
        with self.db.transaction() as conn:
            row = conn.execute(
                f"DELETE FROM conversation_facts WHERE id = %s AND legacy_id = %s AND user_id = %s"
                f" RETURNING {_FACT_COLUMNS}",
                (fact_id, legacy_id, user_id),
            ).fetchone()
        return None if row is None else ConversationFact(**row)

    def forget_member(self, legacy_id: UUID, user_id: UUID) -> int:
        with self.db.transaction() as conn:
            owned = conn.execute(
                "SELECT DISTINCT conversation_id FROM conversation_messages WHERE legacy_id = %s AND user_id = %s",
                (legacy_id, user_id),
            ).fetchall()
            advisory_locks(conn, [f"conversation:{row['conversation_id']}" for row in owned])
            conn.execute(
                "INSERT INTO conversation_tombstones (conversation_id, legacy_id, user_id)"
                " SELECT DISTINCT conversation_id, legacy_id, user_id FROM conversation_messages"
                " WHERE legacy_id = %s AND user_id = %s ON CONFLICT DO NOTHING",
                (legacy_id, user_id),
            )
            conn.execute(
                "DELETE FROM conversation_facts WHERE legacy_id = %s AND user_id = %s", (legacy_id, user_id)
            )
            return conn.execute(
                "DELETE FROM conversation_messages WHERE legacy_id = %s AND user_id = %s",
                (legacy_id, user_id),
            ).rowcount
