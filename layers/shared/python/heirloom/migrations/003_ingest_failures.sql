-- Ingestion failures recorded by the workflow's Catch, for replay (`heirloom backfill` or a new
-- execution). Holds error names and causes, never story text.
CREATE TABLE IF NOT EXISTS ingest_failures (
    id bigserial PRIMARY KEY,
    story_id uuid NOT NULL,
    error text NOT NULL,
    cause text NOT NULL DEFAULT '',
    failed_at timestamptz NOT NULL DEFAULT now(),
    replayed_at timestamptz
);
CREATE INDEX IF NOT EXISTS ingest_failures_open_idx ON ingest_failures (story_id) WHERE replayed_at IS NULL;
