-- The names a story itself gives an animal or a work (decision 0040), kept with its processing
-- record: the legacy's other stories that write such a name alone are linked to the same thing.
-- Gone with the story (ON DELETE CASCADE of story_processing); its legacy is the story's own.
ALTER TABLE story_processing ADD COLUMN IF NOT EXISTS named_things jsonb NOT NULL DEFAULT '[]'::jsonb;
