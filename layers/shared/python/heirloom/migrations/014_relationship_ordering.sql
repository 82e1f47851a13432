-- Relationship changes in the one order of heirloom.domain.ordering: when the stored state was
-- set (the story event's time, then the source's sequence; NULL: a dataset record), and the
-- removals of each relationship (its two persons and type), so a late or redelivered older add
-- or update never brings back a removed relationship.
ALTER TABLE person_relationships ADD COLUMN IF NOT EXISTS changed_at timestamptz;
ALTER TABLE person_relationships ADD COLUMN IF NOT EXISTS changed_seq bigint;
CREATE TABLE IF NOT EXISTS relationship_removals (
    from_person_id uuid NOT NULL,
    to_person_id uuid NOT NULL,
    type text NOT NULL,
    removed_at timestamptz NOT NULL,
    removed_seq bigint,
    PRIMARY KEY (from_person_id, to_person_id, type)
);
