"""Lexical search (`PgVectorIndex.search_text`): word weights come from the chunks the reader may
read, not from the whole index."""

import math
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from heirloom.adapters.postgres import PgStoryStore, PgVectorIndex
from heirloom.contracts.access import ReadScope
from heirloom.contracts.records import Legacy, Person, Role, Story, User, Visibility
from heirloom.domain.access import resolve_scope
from heirloom.ports import EmbeddedChunk

UNIT = tuple([1.0] + [0.0] * 63)


def _idf(total: int, df: int) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


@pytest.fixture
def family(db):
    """Legacy A: three public chunks about the quilt, one public chunk about the harbor and two
    private ones about the harbor. Legacy B (unrelated): ten public chunks about the harbor."""
    store = PgStoryStore(db)
    index = PgVectorIndex(db, model_id="test-model")
    author = uuid4()
    store.upsert_user(User(id=author, name="Author"))
    t = datetime(2024, 1, 1, tzinfo=UTC)
    ids: dict[str, UUID] = {}

    def legacy(name: str) -> UUID:
        legacy_id, subject = uuid4(), uuid4()
        store.upsert_legacy(Legacy(id=legacy_id, name=name, subject_person_id=subject))
        store.upsert_person(Person(id=subject, legacy_id=legacy_id, name=name))
        return legacy_id

    def story(key: str, legacy_id: UUID, text: str, visibility: Visibility = Visibility.PUBLIC) -> None:
        sid = uuid4()
        ids[key] = sid
        store.upsert_story(
            Story(
                id=sid,
                legacy_id=legacy_id,
                author_user_id=author,
                title="Notes",
                content=text,
                visibility=visibility,
                created_at=t,
                updated_at=t,
            ),
            "h",
        )
        index.replace_chunks(sid, [EmbeddedChunk(index=0, text=text, token_count=3, embedding=UNIT)], "h")

    a, b = legacy("A"), legacy("B")
    for i in range(3):
        story(f"quilt{i}", a, "grandmother sewed the quilt")
    story("harbor", a, "grandfather rowed across the harbor")
    for i in range(2):
        story(f"private{i}", a, "the harbor froze that winter", Visibility.PRIVATE)
    for i in range(10):
        story(f"b{i}", b, "boats crowded the harbor")
    return index, a, ids


def _scope(legacy_id: UUID, role: Role) -> ReadScope:
    return resolve_scope(user_id=uuid4(), legacy_id=legacy_id, role=role, links=[])


def test_word_weights_come_from_the_readers_scope(family):
    index, a, ids = family
    hits = {h.story_id: h for h in index.search_text("quilt harbor", _scope(a, Role.ADMIRER), 10)}
    # an admirer of A reads its four public chunks: the quilt is in three, the harbor in one
    # (legacy B's ten harbor chunks and A's private ones do not make the harbor common)
    quilt, harbor = _idf(4, 3), _idf(4, 1)
    assert set(hits) == {ids["quilt0"], ids["quilt1"], ids["quilt2"], ids["harbor"]}
    assert hits[ids["harbor"]].lexical == pytest.approx(harbor / (quilt + harbor), abs=1e-6)
    assert hits[ids["quilt0"]].lexical == pytest.approx(quilt / (quilt + harbor), abs=1e-6)
    assert hits[ids["harbor"]].lexical > hits[ids["quilt0"]].lexical
    assert all(h.similarity == 0.0 for h in hits.values())  # given by search(also=...)


def test_private_chunks_count_only_for_readers_of_private_stories(family):
    index, a, ids = family
    hits = {h.story_id: h for h in index.search_text("quilt harbor", _scope(a, Role.ADVOCATE), 10)}
    # an advocate also reads the two private harbor chunks: six chunks, the harbor in three
    quilt, harbor = _idf(6, 3), _idf(6, 3)
    assert ids["private0"] in hits and ids["private1"] in hits
    assert hits[ids["harbor"]].lexical == pytest.approx(harbor / (quilt + harbor), abs=1e-6)
    assert hits[ids["quilt0"]].lexical == pytest.approx(0.5, abs=1e-6)


def test_best_lexical_matches_first_and_k_respected(family):
    index, a, ids = family
    hits = index.search_text("grandmother sewed the quilt by the harbor", _scope(a, Role.ADMIRER), 2)
    # in A's public chunks "grandmother", "sewed" and "quilt" each occur in three of four and
    # "harbor" in one: the harbor chunk holds the larger share of the query's weight
    common, rare = _idf(4, 3), _idf(4, 1)
    assert [h.lexical for h in hits] == pytest.approx(
        [rare / (3 * common + rare), 3 * common / (3 * common + rare)], abs=1e-6
    )
    assert hits[0].story_id == ids["harbor"] and hits[1].story_id in {ids[f"quilt{i}"] for i in range(3)}
    assert index.search_text("the of and", _scope(a, Role.ADMIRER), 5) == []
    assert index.search_text("lighthouse", _scope(a, Role.ADMIRER), 5) == []
