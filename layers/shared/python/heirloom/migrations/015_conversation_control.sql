-- A member's control over their conversation memory (docs/decisions/0021): list and delete
-- their conversations (by owner), delete a conversation's facts with its messages, and forget a
-- member who leaves the legacy.
CREATE INDEX IF NOT EXISTS conversation_messages_owner ON conversation_messages (legacy_id, user_id);
CREATE INDEX IF NOT EXISTS conversation_facts_message ON conversation_facts (conversation_id, seq);
