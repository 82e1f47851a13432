-- Staging and the changelog (docs/architecture.md#staging, #changelog): a legacy's staging
-- switch, the entities extracted while it was on with each curator's decision, the extraction
-- they came from (re-synced on a decision), and every graph change per legacy.
ALTER TABLE legacies ADD COLUMN IF NOT EXISTS staging boolean NOT NULL DEFAULT false;

CREATE TABLE IF NOT EXISTS staged_extractions (
    story_id uuid PRIMARY KEY REFERENCES stories(id) ON DELETE CASCADE,
    content_hash text NOT NULL,
    extractor_version text NOT NULL,
    entities jsonb NOT NULL
);

CREATE TABLE IF NOT EXISTS staged_entities (
    -- uuid5 of (story, content hash, label, name key): staging the same extraction again is a no-op
    id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    story_id uuid NOT NULL REFERENCES stories(id) ON DELETE CASCADE,
    content_hash text NOT NULL,
    label text NOT NULL CHECK (label IN ('Place', 'Event', 'Object')),
    name_key text NOT NULL,
    name text NOT NULL,
    type text NOT NULL,
    sentences text[] NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    -- the curator's edit, applied when approved
    final_name text,
    final_type text,
    decided_by uuid,
    decided_at timestamptz,
    staged_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (story_id, content_hash, label, name_key)
);
CREATE INDEX IF NOT EXISTS staged_entities_legacy ON staged_entities (legacy_id, status, staged_at);

CREATE TABLE IF NOT EXISTS graph_changes (
    id bigserial PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    at timestamptz NOT NULL DEFAULT now(),
    -- 'story': a story's extraction synced; 'event': a story event (a delete); 'person': a curator
    source text NOT NULL CHECK (source IN ('story', 'event', 'person')),
    story_id uuid,
    actor_id uuid,
    action text NOT NULL,
    detail jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS graph_changes_legacy ON graph_changes (legacy_id, id);
