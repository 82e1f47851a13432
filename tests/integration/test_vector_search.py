"""Embedding search (`PgVectorIndex.search`) returns the `k` nearest chunks the reader may read,
also when most of the index's nearest neighbours belong to other families."""

import math
import random
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from heirloom.adapters.postgres import PgStoryStore, PgVectorIndex
from heirloom.contracts.records import Legacy, Person, Role, Story, User, Visibility
from heirloom.domain.access import resolve_scope
from heirloom.ports import EmbeddedChunk

DIM = 64


def _unit(rng: random.Random, near: list[float] | None = None, spread: float = 1.0) -> tuple[float, ...]:
    vec = [(near[i] if near else 0.0) + rng.gauss(0, spread) for i in range(DIM)]
    norm = math.sqrt(sum(v * v for v in vec))
    return tuple(v / norm for v in vec)


def _cosine(a: tuple[float, ...], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
def families(db):
    """Family A: 40 chunks spread around the space. Family B: 600 chunks packed around the query,
    all nearer to it than any of A's."""
    rng = random.Random(5)
    store = PgStoryStore(db)
    index = PgVectorIndex(db, model_id="test-model")
    author = uuid4()
    store.upsert_user(User(id=author, name="Author"))
    query = list(_unit(rng))
    t = datetime(2024, 1, 1, tzinfo=UTC)
    vectors: dict[UUID, dict[tuple[UUID, int], tuple[float, ...]]] = {}

    def family(count: int, near: list[float] | None, spread: float) -> UUID:
        legacy_id, subject = uuid4(), uuid4()
        store.upsert_legacy(Legacy(id=legacy_id, name="L", subject_person_id=subject))
        store.upsert_person(Person(id=subject, legacy_id=legacy_id, name="S"))
        items = []
        vectors[legacy_id] = {}
        for _ in range(count // 4):
            sid = uuid4()
            store.upsert_story(
                Story(
                    id=sid,
                    legacy_id=legacy_id,
                    author_user_id=author,
                    title="t",
                    content="c",
                    visibility=Visibility.PUBLIC,
                    created_at=t,
                    updated_at=t,
                ),
                "h",
            )
            chunks = []
            for i in range(4):
                vec = _unit(rng, near, spread)
                vectors[legacy_id][(sid, i)] = vec
                chunks.append(EmbeddedChunk(index=i, text="c", token_count=1, embedding=vec))
            items.append((sid, chunks, "h"))
        index.replace_many(items)
        return legacy_id

    a = family(40, None, 1.0)
    family(600, [20 * q for q in query], 1.0)
    return db, a, query, vectors


@pytest.mark.parametrize("exact_max_chunks", [0, 4000], ids=["hnsw", "exact"])
def test_the_k_nearest_readable_chunks_come_back(families, exact_max_chunks):
    db, a, query, vectors = families
    index = PgVectorIndex(db, model_id="test-model", ef_search=10, exact_max_chunks=exact_max_chunks)
    # at this size the planner would rather sort than walk the HNSW index: make it walk the index
    db.connection().execute("SET enable_sort = off")
    scope = resolve_scope(user_id=uuid4(), legacy_id=a, role=Role.ADMIRER, links=[])
    hits = index.search(query, scope, 10)
    # a plain HNSW scan would stop after `ef_search` candidates, all of them family B's
    assert len(hits) == 10 and {h.legacy_id for h in hits} == {a}
    assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
    for h in hits:
        assert h.similarity == pytest.approx(
            _cosine(vectors[a][(h.story_id, h.chunk_index)], query), abs=1e-5
        )
    nearest = sorted(vectors[a], key=lambda key: -_cosine(vectors[a][key], query))[:10]
    found = [(h.story_id, h.chunk_index) for h in hits]
    if exact_max_chunks:  # searched exactly
        assert found == nearest
    else:  # approximate, but a 40-chunk family is found almost whole
        assert len(set(found) & set(nearest)) >= 8


def test_the_chunks_found_by_words_get_their_similarity_after_the_nearest(families):
    db, a, query, vectors = families
    index = PgVectorIndex(db, model_id="test-model")
    scope = resolve_scope(user_id=uuid4(), legacy_id=a, role=Role.ADMIRER, links=[])
    ranked = sorted(vectors[a], key=lambda key: -_cosine(vectors[a][key], query))
    far = ranked[-3:]  # family A's three farthest chunks: never among the nearest 5
    unreadable = next(iter(next(v for legacy, v in vectors.items() if legacy != a)))
    hits = index.search(query, scope, 5, also=[ranked[0], *far, unreadable])
    keys = [(h.story_id, h.chunk_index) for h in hits]
    assert keys[:5] == ranked[:5]  # the nearest first, a chunk named in `also` not repeated
    assert len(keys) == 8 and set(keys[5:]) == set(far)  # another family's chunk: never
    for h in hits:
        assert h.similarity == pytest.approx(
            _cosine(vectors[a][(h.story_id, h.chunk_index)], query), abs=1e-5
        )
