-- When the last applied change to a membership or a link happened (the story event's time),
-- and when memberships were removed: a late or redelivered older event never undoes a newer
-- one (a removed member is not re-admitted, a revoked link not re-activated).
ALTER TABLE legacy_members ADD COLUMN IF NOT EXISTS changed_at timestamptz;
ALTER TABLE legacy_links ADD COLUMN IF NOT EXISTS changed_at timestamptz;
CREATE TABLE IF NOT EXISTS member_removals (
    legacy_id uuid NOT NULL,
    user_id uuid NOT NULL,
    removed_at timestamptz NOT NULL,
    PRIMARY KEY (legacy_id, user_id)
);
