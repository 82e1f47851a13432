-- Conversation memory (docs/architecture.md#conversation-memory, docs/decisions/0018): a legacy's
-- opt-in switch, the messages of each conversation (one owner), and the facts extracted from the
-- owner's messages: the owner's alone, never in the shared graph.
ALTER TABLE legacies ADD COLUMN IF NOT EXISTS conversation_memory boolean NOT NULL DEFAULT false;

CREATE TABLE IF NOT EXISTS conversation_messages (
    conversation_id uuid NOT NULL,
    seq integer NOT NULL CHECK (seq >= 1),
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    role text NOT NULL CHECK (role IN ('user', 'assistant')),
    content text NOT NULL,
    sent_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE IF NOT EXISTS conversation_facts (
    id uuid PRIMARY KEY,
    conversation_id uuid NOT NULL,
    seq integer NOT NULL,
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    -- the owner: the only user whose context may show the fact
    user_id uuid NOT NULL,
    source text NOT NULL,
    relation text NOT NULL,
    target text NOT NULL,
    verb text NOT NULL,
    sentence text NOT NULL,
    negated boolean NOT NULL,
    confidence real NOT NULL,
    told_at timestamptz NOT NULL,
    FOREIGN KEY (conversation_id, seq) REFERENCES conversation_messages ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS conversation_facts_owner ON conversation_facts (legacy_id, user_id, told_at);
