-- Deleted stories: a late or replayed create/update older than the delete never revives one.
CREATE TABLE IF NOT EXISTS story_tombstones (
    story_id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL,
    deleted_at timestamptz NOT NULL
);
