"""VectorSearch: embed the query and search the chunks the user may read."""

from __future__ import annotations

import time

from heirloom.contracts.context import ChunkResult, ContextRequest, VectorBranch
from heirloom.domain.access_filter import scope_for
from heirloom.ports import Embedder, StoryStore, VectorIndex

#: a query this short borrows the previous user message for context ("and her sister?")
SHORT_QUERY_WORDS = 6


def query_text(request: ContextRequest) -> str:
    if len(request.query.split()) >= SHORT_QUERY_WORDS:
        return request.query
    previous = [m.content for m in request.history if m.role == "user"]
    return f"{previous[-1]} {request.query}" if previous else request.query


def vector_search(
    request: ContextRequest, store: StoryStore, vectors: VectorIndex, embedder: Embedder, *, k: int = 24
) -> VectorBranch:
    started = time.monotonic()
    if request.mode == "graph":
        return VectorBranch(status="skipped")
    scope = scope_for(store, request.user_id, request.legacy_id)
    (embedding,) = embedder.embed([query_text(request)])
    hits = vectors.search(embedding, scope, k)
    return VectorBranch(
        hits=tuple(
            ChunkResult(
                story_id=h.story_id,
                legacy_id=h.legacy_id,
                chunk_index=h.chunk_index,
                text=h.text,
                token_count=h.token_count,
                similarity=round(h.similarity, 6),
            )
            for h in hits
        ),
        latency_ms=round((time.monotonic() - started) * 1000, 2),
    )
