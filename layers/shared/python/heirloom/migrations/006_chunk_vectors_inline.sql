-- Chunk vectors stay in their row (1.5 kB at 384 dimensions; rows up to ~4 kB are kept whole).
-- The exact search reads every vector of a reader's scope, and a vector moved out of line
-- (TOAST, the default for pgvector's type) costs an index lookup and a fetch per chunk: half of
-- that statement at 10k stories. Longer rows move their text out first, the vector last.
ALTER TABLE story_chunks SET (toast_tuple_target = 4080);
-- rows already written: rewritten once (the same values; the indexes are rebuilt)
ALTER TABLE story_chunks
    ALTER COLUMN embedding TYPE vector(${EMBEDDING_DIM}) USING embedding::text::vector(${EMBEDDING_DIM});
-- after the rewrite, which resets the column's storage to its type's
ALTER TABLE story_chunks ALTER COLUMN embedding SET STORAGE MAIN;
