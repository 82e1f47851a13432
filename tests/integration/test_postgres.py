"""Migrations and round trips through StoryStore and VectorIndex on the embedded PostgreSQL."""

from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest

import heirloom
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex, SchemaMismatch
from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    ShareMode,
    Story,
    User,
    Visibility,
)
from heirloom.domain.access import resolve_scope
from heirloom.ports import Change, EmbeddedChunk


def test_migrations_are_recorded_and_idempotent(db):
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


def _seed(store):
    legacy, person, user = uuid4(), uuid4(), uuid4()
    store.upsert_legacy(Legacy(id=legacy, name="L", subject_person_id=person))
    store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada", aliases=("Nana",)))
    store.upsert_user(User(id=user, name="U"))
    return legacy, person, user


def test_story_store_round_trips_and_reports_changes(db):
    store = PgStoryStore(db)
    legacy, person, user = _seed(store)
    assert store.get_person(person).aliases == ("Nana",)
    assert (
        store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada", aliases=("Nana",)))
        is Change.UNCHANGED
    )
    assert (
        store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada B", aliases=())) is Change.UPDATED
    )
    assert store.upsert_member(Member(legacy_id=legacy, user_id=user, role=Role.ADMIRER)) is Change.CREATED
    assert store.role_of(user, legacy) is Role.ADMIRER
    assert store.upsert_member(Member(legacy_id=legacy, user_id=user, role=Role.ADMIN)) is Change.UPDATED
    assert store.member_legacy_ids(user) == [legacy]
    t = datetime(2024, 1, 1, tzinfo=UTC)
    story = Story(
        id=uuid4(),
        legacy_id=legacy,
        author_user_id=user,
        title="T",
        content="Body.",
        visibility=Visibility.PRIVATE,
        created_at=t,
        updated_at=t,
    )
    assert store.upsert_story(story, "h1") is Change.CREATED
    assert store.upsert_story(story, "h1") is Change.UNCHANGED
    assert store.get_story(story.id) == story and store.get_story_hash(story.id) == "h1"
    meta = store.story_meta([story.id])[0]
    assert meta.visibility is Visibility.PRIVATE and meta.author_user_id == user
    other_person = uuid4()
    store.upsert_person(Person(id=other_person, legacy_id=legacy, name="Bo"))
    rel = Relationship(
        from_person_id=person, to_person_id=other_person, type=RelationshipType.KNEW, detail="x"
    )
    assert store.upsert_relationship(rel) is Change.CREATED
    assert store.relationships_of([other_person]) == [rel]
    assert store.remove_member(legacy, user) is Change.DELETED
    assert store.role_of(user, legacy) is None
    assert store.delete_story(story.id) is Change.DELETED and store.get_story(story.id) is None


def test_link_shares_round_trip(db):
    store = PgStoryStore(db)
    a, _, _ = _seed(store)
    b, _, _ = _seed(store)
    s1, s2 = uuid4(), uuid4()
    link = Link(
        id=uuid4(),
        legacy_a_id=a,
        legacy_b_id=b,
        status=LinkStatus.ACTIVE,
        share_mode=ShareMode.SELECTIVE,
        shared_story_ids=tuple(sorted([s1, s2])),
    )
    assert store.upsert_link(link) is Change.CREATED
    assert store.links_of(b) == [link]
    assert store.upsert_link(link) is Change.UNCHANGED
    narrowed = link.model_copy(update={"shared_story_ids": (s1,)})
    assert store.upsert_link(narrowed) is Change.UPDATED
    assert store.links_of(a)[0].shared_story_ids == (s1,)


def test_vector_search_applies_the_read_scope_in_sql(db):
    store = PgStoryStore(db)
    index = PgVectorIndex(db, model_id="test-model")
    legacy, _, author = _seed(store)
    reader = uuid4()
    store.upsert_user(User(id=reader, name="R"))
    t = datetime(2024, 1, 1, tzinfo=UTC)
    ids = {}
    for vis in Visibility:
        for who, uid in (("author", author), ("reader", reader)):
            sid = uuid4()
            ids[(vis, who)] = sid
            store.upsert_story(
                Story(
                    id=sid,
                    legacy_id=legacy,
                    author_user_id=uid,
                    title="t",
                    content="c",
                    visibility=vis,
                    created_at=t,
                    updated_at=t,
                ),
                "h",
            )
            index.replace_chunks(
                sid,
                [EmbeddedChunk(index=0, text="c", token_count=1, embedding=tuple([1.0] + [0.0] * 63))],
                "h",
            )
    assert index.count() == 6 and index.indexed_hash(ids[(Visibility.PUBLIC, "author")]) == "h"
    admirer = resolve_scope(user_id=reader, legacy_id=legacy, role=Role.ADMIRER, links=[])
    found = {h.story_id for h in index.search([1.0] + [0.0] * 63, admirer, k=10)}
    assert found == {
        ids[(Visibility.PUBLIC, "author")],
        ids[(Visibility.PUBLIC, "reader")],
        ids[(Visibility.PERSONAL, "reader")],
    }
    advocate = resolve_scope(user_id=reader, legacy_id=legacy, role=Role.ADVOCATE, links=[])
    found = {h.story_id for h in index.search([1.0] + [0.0] * 63, advocate, k=10)}
    assert ids[(Visibility.PRIVATE, "author")] in found and ids[(Visibility.PERSONAL, "author")] not in found
    hits = index.search([1.0] + [0.0] * 63, advocate, k=10)
    assert all(abs(h.similarity - 1.0) < 1e-6 for h in hits)


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
