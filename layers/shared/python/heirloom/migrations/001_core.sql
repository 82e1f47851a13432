-- Core schema: the permission source of truth (docs/dataset-format.md) and the chunk index.
-- ${EMBEDDING_DIM} is substituted by the migration runner from settings.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS legacies (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    subject_person_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS persons (
    id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies (id) ON DELETE CASCADE,
    name text NOT NULL,
    aliases text[] NOT NULL DEFAULT '{}',
    birth_year integer,
    death_year integer
);
CREATE INDEX IF NOT EXISTS persons_legacy_idx ON persons (legacy_id);

CREATE TABLE IF NOT EXISTS users (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    person_id uuid REFERENCES persons (id) ON DELETE SET NULL
);

CREATE TABLE IF NOT EXISTS legacy_members (
    legacy_id uuid NOT NULL REFERENCES legacies (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role text NOT NULL CHECK (role IN ('creator', 'admin', 'advocate', 'admirer')),
    PRIMARY KEY (legacy_id, user_id)
);
CREATE INDEX IF NOT EXISTS legacy_members_user_idx ON legacy_members (user_id);

CREATE TABLE IF NOT EXISTS person_relationships (
    from_person_id uuid NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    to_person_id uuid NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    type text NOT NULL CHECK (type IN ('FAMILY_OF', 'KNEW', 'WORKED_WITH', 'FRIENDS_WITH')),
    detail text,
    since text,
    until text,
    PRIMARY KEY (from_person_id, to_person_id, type)
);

CREATE TABLE IF NOT EXISTS stories (
    id uuid PRIMARY KEY,
    legacy_id uuid NOT NULL REFERENCES legacies (id) ON DELETE CASCADE,
    author_user_id uuid NOT NULL REFERENCES users (id),
    title text NOT NULL,
    content text NOT NULL,
    visibility text NOT NULL CHECK (visibility IN ('public', 'private', 'personal')),
    content_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS stories_legacy_idx ON stories (legacy_id, visibility);

CREATE TABLE IF NOT EXISTS legacy_links (
    id uuid PRIMARY KEY,
    legacy_a_id uuid NOT NULL REFERENCES legacies (id) ON DELETE CASCADE,
    legacy_b_id uuid NOT NULL REFERENCES legacies (id) ON DELETE CASCADE,
    status text NOT NULL CHECK (status IN ('active', 'pending', 'revoked')),
    share_mode text NOT NULL CHECK (share_mode IN ('all', 'selective')),
    CHECK (legacy_a_id <> legacy_b_id)
);
CREATE INDEX IF NOT EXISTS legacy_links_a_idx ON legacy_links (legacy_a_id);
CREATE INDEX IF NOT EXISTS legacy_links_b_idx ON legacy_links (legacy_b_id);

-- Stories shared across a selective link. No foreign key to stories: a link may name a story
-- before it arrives; sharing grants nothing until the story exists in the other legacy.
CREATE TABLE IF NOT EXISTS legacy_link_shares (
    link_id uuid NOT NULL REFERENCES legacy_links (id) ON DELETE CASCADE,
    story_id uuid NOT NULL,
    PRIMARY KEY (link_id, story_id)
);

CREATE TABLE IF NOT EXISTS story_chunks (
    story_id uuid NOT NULL REFERENCES stories (id) ON DELETE CASCADE,
    chunk_index integer NOT NULL,
    content text NOT NULL,
    token_count integer NOT NULL,
    embedding vector(${EMBEDDING_DIM}) NOT NULL,
    PRIMARY KEY (story_id, chunk_index)
);
CREATE INDEX IF NOT EXISTS story_chunks_embedding_idx
    ON story_chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);

-- What the index and the graph were last built from, per story.
CREATE TABLE IF NOT EXISTS story_processing (
    story_id uuid PRIMARY KEY REFERENCES stories (id) ON DELETE CASCADE,
    chunks_hash text,
    embedder text,
    graph_hash text,
    extractor_version text,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- Which embedding model filled story_chunks: vectors of two models never share the index.
CREATE TABLE IF NOT EXISTS index_meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
