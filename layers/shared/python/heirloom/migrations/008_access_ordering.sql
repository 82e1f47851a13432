-- The total order of access-changing records (heirloom.domain.ordering): after the time, the
-- source's sequence number when it sends one (NULL: none, sorts first).
ALTER TABLE legacy_members ADD COLUMN IF NOT EXISTS changed_seq bigint;
ALTER TABLE member_removals ADD COLUMN IF NOT EXISTS removed_seq bigint;
ALTER TABLE legacy_links ADD COLUMN IF NOT EXISTS changed_seq bigint;
ALTER TABLE stories ADD COLUMN IF NOT EXISTS updated_seq bigint;
-- a person's legacy decides who sees its known relationships: person changes are ordered too
ALTER TABLE persons ADD COLUMN IF NOT EXISTS changed_at timestamptz;
ALTER TABLE persons ADD COLUMN IF NOT EXISTS changed_seq bigint;
