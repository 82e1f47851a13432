"""VectorSearch: the question embedded (with and without the subject's name) and the nearest
chunks of the stories in scope."""

from __future__ import annotations

import time
from uuid import UUID

from heirloom.contracts.context import ChunkResult, ContextRequest, VectorBranch, VectorSearchInput
from heirloom.domain.access_filter import scope_for
from heirloom.domain.asker import asker_kin, with_asker_names
from heirloom.domain.personas import reaches_links
from heirloom.domain.relevance import retrieval_score
from heirloom.domain.retrieval import _query_embeddings, query_text, subject_forms, without_subject
from heirloom.errors import ModelError, VectorUnavailable
from heirloom.ports import Embedder, StoryStore, VectorIndex
from heirloom.services import Services


def run(data: VectorSearchInput, services: Services) -> VectorBranch:
    return vector_search(
        data.request,
        services.stories,
        services.vectors,
        services.embedder,
        k=services.settings.resilience.vector_k,
    )


def vector_search(
    request: ContextRequest, store: StoryStore, vectors: VectorIndex, embedder: Embedder, *, k: int = 24
) -> VectorBranch:
    started = time.monotonic()
    if request.mode == "graph":
        return VectorBranch(status="skipped")
    legacy = store.get_legacy(request.legacy_id)  # read once, for the scope and the subject
    cross = reaches_links(request)
    scope = scope_for(
        store,
        request.user_id,
        request.legacy_id,
        legacy=legacy,
        cross_legacy=cross,
        as_of=request.as_of,
    )
    text = query_text(request)
    # the subject's names would pull every story titled with them ahead of the answer
    focus = without_subject(text, subject_forms(store, request.legacy_id, legacy=legacy)) or text
    # the asker's relatives only: others named relative to someone seed the graph, not the text
    kin = asker_kin(text, request.user_id, request.legacy_id, store, cross_legacy=cross, others=False)
    focus = with_asker_names(focus, kin, legacy.subject_person_id if legacy else None)
    # the query is embedded while the words are searched (that search needs no embedding)
    pending = _query_embeddings().submit(embedder.embed, [focus])
    by_words = vectors.search_text(focus, scope, k)
    try:
        (embedding,) = pending.result()
    except ModelError as exc:  # throttled or refused: the workflow's Catch gives no chunks
        raise VectorUnavailable(f"query embedding failed: {type(exc).__name__} {exc.code}".strip()) from exc
    # the nearest chunks, and the cosine of the chunks found by words
    nearest = vectors.search(embedding, scope, k, also=[(h.story_id, h.chunk_index) for h in by_words])
    merged: dict[tuple[UUID, int], ChunkResult] = {(h.story_id, h.chunk_index): h for h in nearest}
    for hit in by_words:
        key = (hit.story_id, hit.chunk_index)
        if key in merged:  # the same cosine, plus its lexical score
            merged[key] = hit.model_copy(update={"similarity": merged[key].similarity})
    results = sorted(
        (h.model_copy(update={"similarity": round(h.similarity, 6)}) for h in merged.values()),
        key=lambda c: -retrieval_score(c),
    )
    return VectorBranch(hits=tuple(results), latency_ms=round((time.monotonic() - started) * 1000, 2))
