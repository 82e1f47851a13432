"""The bench's bulk corpus loader writes exactly what story-by-story ingestion writes."""

from __future__ import annotations

from typing import Any

import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.domain import ingestion, story_index
from heirloom.domain.chunking import story_digest
from heirloom.domain.entity_sync import sync_story_entities
from heirloom.domain.graph_schema import NODE_LABELS
from heirloom.ports import EmbeddedChunk
from heirloom_dev.bench import corpus as bench_corpus
from heirloom_dev.bench import load as bench

TABLES = {
    "legacies": "id, name, subject_person_id",
    "persons": "id, legacy_id, name, aliases, birth_year, death_year",
    "users": "id, name, person_id",
    "legacy_members": "legacy_id, user_id, role",
    "person_relationships": "from_person_id, to_person_id, type, detail, since, until",
    "legacy_links": "id, legacy_a_id, legacy_b_id, status, share_mode",
    "legacy_link_shares": "link_id, story_id",
    "stories": "id, legacy_id, author_user_id, title, content, visibility, content_hash, created_at, updated_at",
    "story_chunks": "story_id, chunk_index, content, token_count, embedding::text, tsv::text",
    "story_processing": "story_id, chunks_hash, embedder, graph_hash, extractor_version, graph_fingerprint",
}


def _props(props: dict[str, Any], provenance_as_set: bool) -> list[tuple[str, Any]]:
    if provenance_as_set and "story_ids" in props:
        props = {**props, "story_ids": sorted(props["story_ids"])}
    return sorted(props.items())


def _state(stack: bench.BenchStack, *, provenance_as_set: bool = False) -> dict[str, Any]:
    """Every row and graph element; `provenance_as_set`: `story_ids` lists compared as sets (a
    re-synced story's id moves to the end of them)."""
    conn = stack.db.connection()
    tables = {
        name: sorted(str(sorted(r.items())) for r in conn.execute(f"SELECT {cols} FROM {name}").fetchall())
        for name, cols in TABLES.items()
    }
    nodes, edges = [], []
    for label in sorted(NODE_LABELS):
        nodes += [
            str(_props(r["n"], provenance_as_set))
            for r in stack.ports.graph.run(f"MATCH (n:{label}) RETURN n")
        ]
        edges += [
            f"{r['a']} {_props(r['r'], provenance_as_set)} {r['b']}"
            for r in stack.ports.graph.run(f"MATCH (a:{label})-[r]->(b) RETURN a.id AS a, r, b.id AS b")
        ]
    return {"tables": tables, "nodes": sorted(nodes), "edges": sorted(edges)}


def _load_story_by_story(stack: bench.BenchStack, corpus: bench_corpus.Corpus) -> None:
    """The reference: every record and story through the per-record ingestion functions."""
    ports = stack.ports
    bench.apply_records(ports, corpus)
    for sp in corpus.stories:
        ingestion.apply_story(ports, sp.story, process=False)
        digest = story_digest(sp.story.title, sp.story.content)
        chunks = story_index.story_chunks(ports, sp.story)
        vectors = ports.embedder.embed([story_index.embedding_text(sp.story.title, c.text) for c in chunks])
        embedded = [
            EmbeddedChunk(index=c.index, text=c.text, token_count=c.token_count, embedding=tuple(v))
            for c, v in zip(chunks, vectors, strict=True)
        ]
        ports.vectors.replace_chunks(
            sp.story.id, embedded, story_index.index_key(digest, ports.chunk_max_tokens)
        )
        report = sync_story_entities(ports.graph, sp.story, sp.entities, sp.resolved, [])
        ports.stories.mark_graph_synced(
            sp.story.id, digest, bench_corpus.SYNTHETIC_EXTRACTOR, report.fingerprint
        )


@pytest.fixture
def stacks(local_stack, monkeypatch):
    monkeypatch.setattr(bench, "LOAD_BATCH", 5)  # entities shared across batches, not only within one
    embedder = HashingEmbedder(384)
    opened = []

    def open_stack(name: str) -> bench.BenchStack:
        stack = bench._open_stack(name, embedder, None, local_stack.postgres_uri, local_stack.falkor_socket)
        opened.append(stack)
        return stack

    yield open_stack
    for stack in opened:
        stack.ports.graph.delete_all()
        stack.db.close()


def test_bulk_load_writes_what_story_by_story_ingestion_writes(stacks):
    corpus = bench_corpus.generate_corpus(24, seed=7)
    reference, bulk = stacks("bench_ref_load"), stacks("bench_bulk_load")
    _load_story_by_story(reference, corpus)
    bench.load_corpus(bulk, corpus)
    expected = _state(reference)
    assert len(expected["tables"]["story_chunks"]) > 24 and len(expected["edges"]) > 100
    assert any("REFERENCES" in e for e in expected["edges"]) and any(
        "MENTIONS" in e for e in expected["edges"]
    )
    assert _state(bulk) == expected


def test_a_load_resumes_after_an_interruption_and_a_second_load_changes_nothing(stacks):
    corpus = bench_corpus.generate_corpus(24, seed=7)
    reference, bulk = stacks("bench_ref_resume"), stacks("bench_bulk_resume")
    _load_story_by_story(reference, corpus)
    expected = _state(reference, provenance_as_set=True)
    bench.load_corpus(bulk, corpus)
    # an interrupted run: these stories' chunks and graph writes were never marked done
    halfway = [sp.story.id for sp in corpus.stories[7:13]]
    bulk.db.connection().execute(
        "UPDATE story_processing SET graph_hash = NULL, chunks_hash = NULL WHERE story_id = ANY(%s)",
        (halfway,),
    )
    bench.load_corpus(bulk, corpus)
    assert _state(bulk, provenance_as_set=True) == expected
    bench.load_corpus(bulk, corpus)
    assert _state(bulk, provenance_as_set=True) == expected


def test_a_lost_graph_is_rebuilt_without_reloading(stacks):
    """FalkorDB keeps no data across restarts: the graph is written again from the corpus, the
    same as the load wrote it, and nothing in PostgreSQL changes."""
    corpus = bench_corpus.generate_corpus(24, seed=7)
    stack = stacks("bench_rebuild")
    bench.load_corpus(stack, corpus)
    expected = _state(stack)
    assert bench.graph_loaded(stack, corpus)
    stack.ports.graph.delete_all()
    assert not bench.graph_loaded(stack, corpus)
    bench.rebuild_graph(stack, corpus)
    assert bench.graph_loaded(stack, corpus)
    assert _state(stack) == expected
