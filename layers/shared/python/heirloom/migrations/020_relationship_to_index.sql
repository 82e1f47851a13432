-- The known connections of a person are read from the store on every context request
-- (docs/decisions/0030): relationships TO a person need their own index (the primary key
-- serves those FROM a person).
CREATE INDEX IF NOT EXISTS person_relationships_to_idx ON person_relationships (to_person_id);
