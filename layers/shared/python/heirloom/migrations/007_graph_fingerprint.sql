-- What the graph should hold for each story (a hash of its edges and years, taken when its
-- graph facts were written): the lost-graph repair compares it with what the graph holds.
ALTER TABLE story_processing ADD COLUMN IF NOT EXISTS graph_fingerprint text;
