-- Curation (docs/architecture.md#curation): merges of duplicate entities with what each changed
-- (so an unmerge restores the graph exactly), pairs an admin kept apart, graph impact since the
-- last community build, and the community summaries per legacy and visibility tier.
CREATE TABLE IF NOT EXISTS entity_merges (
    id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    label text NOT NULL,
    survivor_id text NOT NULL,
    absorbed_id text NOT NULL,
    -- the absorbed node, the survivor's properties before, the edges removed and added
    changes jsonb NOT NULL,
    merged_by uuid NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now(),
    unmerged_by uuid,
    unmerged_at timestamptz
);
CREATE INDEX IF NOT EXISTS entity_merges_legacy ON entity_merges (legacy_id, merged_at);

CREATE TABLE IF NOT EXISTS entity_keep_apart (
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    -- the two entity ids, smaller first
    entity_a text NOT NULL,
    entity_b text NOT NULL,
    decided_by uuid NOT NULL,
    decided_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (legacy_id, entity_a, entity_b),
    CHECK (entity_a < entity_b)
);

CREATE TABLE IF NOT EXISTS graph_impact (
    legacy_id uuid PRIMARY KEY REFERENCES legacies(id) ON DELETE CASCADE,
    -- graph changes recorded since the last community build
    impact integer NOT NULL DEFAULT 0,
    last_build text,
    last_built_at timestamptz
);

CREATE TABLE IF NOT EXISTS communities (
    legacy_id uuid NOT NULL REFERENCES legacies(id) ON DELETE CASCADE,
    -- 'public': built from public stories and known records; 'private': public and private
    tier text NOT NULL CHECK (tier IN ('public', 'private')),
    community_no integer NOT NULL,
    -- hash of the connected component it was found in (a partial rebuild keeps unchanged ones)
    component_key text NOT NULL,
    member_ids text[] NOT NULL,
    summary text NOT NULL,
    story_ids uuid[] NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (legacy_id, tier, community_no)
);
