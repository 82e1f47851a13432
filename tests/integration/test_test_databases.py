"""The suite's databases (tests/support/stack.py): `db` is a copy of a template migrated once per
session, and that copy must be what running the migrations builds; `database_url` alone is empty."""

import uuid

import psycopg

from heirloom.adapters.postgres import PgDatabase
from tests.support.stack import create_database

#: the schema as the catalog describes it: tables and columns, indexes, constraints, extensions
SCHEMA_QUERIES = {
    "columns": "SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default"
    " FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2",
    "vector_dims": "SELECT c.relname, a.attname, a.atttypmod, a.attstorage FROM pg_attribute a"
    " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = 'public' AND a.attnum > 0 ORDER BY 1, 2",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2",
    "constraints": "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2",
    "functions": "SELECT proname, pg_get_function_arguments(oid) FROM pg_proc"
    " WHERE pronamespace = 'public'::regnamespace ORDER BY 1, 2",
    "extensions": "SELECT extname FROM pg_extension ORDER BY 1",
    "migrations": "SELECT name FROM schema_migrations ORDER BY 1",
}


def _schema(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {k: conn.execute(q).fetchall() for k, q in SCHEMA_QUERIES.items()}


def test_a_db_copy_has_the_schema_the_migrations_build(local_stack, db):
    assert local_stack.postgres_uri
    name = f"m_{uuid.uuid4().hex[:12]}"
    url = create_database(local_stack.postgres_uri, name)
    try:
        migrated = PgDatabase(url, embedding_dim=64)
        assert migrated.migrate() == db.applied_migrations()
        migrated.close()
        db.close()
        assert isinstance(db.url, str)
        assert _schema(url) == _schema(db.url)
    finally:
        with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_database_url_without_db_is_empty(database_url):
    with psycopg.connect(database_url) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == []
