"""VectorSearch: embed the query, search the chunks the user may read by embedding and by
words (inverse-document-frequency weighted), and merge both lists."""

from __future__ import annotations

import time
from uuid import UUID

from heirloom.contracts.context import ChunkResult, ContextRequest, VectorBranch
from heirloom.domain.access_filter import scope_for
from heirloom.domain.relevance import retrieval_score
from heirloom.errors import ModelError, VectorUnavailable
from heirloom.ports import ChunkHit, Embedder, StoryStore, VectorIndex

#: a query this short borrows the previous user message for context ("and her sister?")
SHORT_QUERY_WORDS = 6


def query_text(request: ContextRequest) -> str:
    if len(request.query.split()) >= SHORT_QUERY_WORDS:
        return request.query
    previous = [m.content for m in request.history if m.role == "user"]
    return f"{previous[-1]} {request.query}" if previous else request.query


def _result(hit: ChunkHit) -> ChunkResult:
    return ChunkResult(
        story_id=hit.story_id,
        legacy_id=hit.legacy_id,
        chunk_index=hit.chunk_index,
        text=hit.text,
        token_count=hit.token_count,
        similarity=round(hit.similarity, 6),
        lexical=hit.lexical,
    )


def vector_search(
    request: ContextRequest, store: StoryStore, vectors: VectorIndex, embedder: Embedder, *, k: int = 24
) -> VectorBranch:
    started = time.monotonic()
    if request.mode == "graph":
        return VectorBranch(status="skipped")
    scope = scope_for(store, request.user_id, request.legacy_id)
    text = query_text(request)
    try:
        (embedding,) = embedder.embed([text])
    except ModelError as exc:  # throttled or refused: the workflow's Catch gives no chunks
        raise VectorUnavailable(f"query embedding failed: {type(exc).__name__} {exc.code}".strip()) from exc
    merged: dict[tuple[UUID, int], ChunkHit] = {
        (h.story_id, h.chunk_index): h for h in vectors.search(embedding, scope, k)
    }
    for hit in vectors.search_text(text, embedding, scope, k):
        merged[(hit.story_id, hit.chunk_index)] = hit  # the same cosine, plus its lexical score
    results = sorted((_result(h) for h in merged.values()), key=lambda c: -retrieval_score(c))
    return VectorBranch(hits=tuple(results), latency_ms=round((time.monotonic() - started) * 1000, 2))
