-- A deleted conversation id stays deleted (docs/decisions/0021, "Since"): its owner is kept,
-- nothing of what was said, so a later message to the id answers 409 to the owner and 404 to
-- anyone else instead of starting a new conversation under it.
CREATE TABLE IF NOT EXISTS conversation_tombstones (
    conversation_id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now()
);
