-- Lexical search over chunks (title + paragraph), alongside the embeddings.
ALTER TABLE story_chunks ADD COLUMN IF NOT EXISTS tsv tsvector;
CREATE INDEX IF NOT EXISTS story_chunks_tsv_idx ON story_chunks USING gin (tsv);
