"""Migrations and what only PostgreSQL does (inline vectors, dimension and model checks); the
store's round trips are in test_store_contract.py, held against the in-memory adapters too."""

from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest

import heirloom
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex, SchemaMismatch
from heirloom.contracts.records import (
    Story,
    Visibility,
)
from heirloom.ports import EmbeddedChunk
from tests.integration.test_store_contract import _seed


def test_migrations_are_recorded_and_idempotent(database_url):
    # on an empty database: the `db` fixture's copies a template migrated once per session
    db = PgDatabase(database_url, embedding_dim=64)
    assert db.migrate() != []
    shipped = sorted(
        p.name for p in (Path(heirloom.__file__).parent / "migrations").glob("[0-9][0-9][0-9]_*.sql")
    )
    assert shipped[:3] == ["001_core.sql", "002_tombstones.sql", "003_ingest_failures.sql"]
    assert db.applied_migrations() == shipped
    assert db.migrate() == []


def test_chunk_rows_keep_their_vector_inline(db):
    """Vectors are not moved out of their row (no TOAST fetch per chunk in the exact search):
    `main` storage, and rows of up to ~4 kB (a 384-dimension vector and a paragraph) kept whole."""
    row = (
        db.connection()
        .execute(
            "SELECT a.attstorage AS storage, c.reloptions AS options FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE a.attrelid = 'story_chunks'::regclass AND a.attname = 'embedding'"
        )
        .fetchone()
    )
    assert row is not None
    assert row["storage"] == "m" and "toast_tuple_target=4080" in row["options"]


def test_a_different_embedding_dimension_is_refused(db, database_url):
    other = PgDatabase(database_url, embedding_dim=128)
    with pytest.raises(SchemaMismatch):
        other.migrate()


def test_the_index_refuses_vectors_of_another_model(db):
    store = PgStoryStore(db)
    legacy, _, author = _seed(store)
    t = datetime(2024, 1, 1, tzinfo=UTC)
    sid = uuid4()
    store.upsert_story(
        Story(
            id=sid,
            legacy_id=legacy,
            author_user_id=author,
            title="t",
            content="c",
            visibility=Visibility.PUBLIC,
            created_at=t,
            updated_at=t,
        ),
        "h",
    )
    chunk = [EmbeddedChunk(index=0, text="c", token_count=1, embedding=tuple([1.0] * 64))]
    PgVectorIndex(db, model_id="model-a").replace_chunks(sid, chunk, "h")
    with pytest.raises(SchemaMismatch):
        PgVectorIndex(db, model_id="model-b").replace_chunks(sid, chunk, "h")
