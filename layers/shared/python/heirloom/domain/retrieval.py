"""VectorSearch: embed the query, search the chunks the user may read by embedding and by
words (inverse-document-frequency weighted), and merge both lists. The legacy subject's names
are left out of both searches: every story is about the subject."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from uuid import UUID

from heirloom.contracts.context import ChunkResult, ContextRequest, VectorBranch
from heirloom.contracts.records import Legacy
from heirloom.domain.access_filter import scope_for
from heirloom.domain.relevance import retrieval_score
from heirloom.errors import ModelError, VectorUnavailable
from heirloom.ports import ChunkHit, Embedder, StoryStore, VectorIndex

#: a query this short borrows the previous user message for context ("and her sister?")
SHORT_QUERY_WORDS = 6


def subject_forms(store: StoryStore, legacy_id: UUID, *, legacy: Legacy | None = None) -> tuple[str, ...]:
    """The names the legacy's subject goes by (name, aliases, first name). `legacy`: its row,
    when the caller has read it already."""
    legacy = legacy or store.get_legacy(legacy_id)
    person = store.get_person(legacy.subject_person_id) if legacy else None
    if person is None:
        return ()
    forms = {person.name, *person.aliases}
    parts = person.name.split()
    if len(parts) > 1:
        forms.add(parts[0])
    return tuple(sorted((f for f in forms if f.strip()), key=len, reverse=True))


def without_subject(text: str, forms: tuple[str, ...]) -> str:
    """`text` with the subject's names removed: every story is about the subject, so naming
    them says nothing about which story answers (possessives go with the name)."""
    for form in forms:
        text = re.sub(rf"\b{re.escape(form)}(?:['’]s?)?(?!\w)", " ", text, flags=re.IGNORECASE)
    return " ".join(text.split())


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


@lru_cache(maxsize=1)
def _query_embeddings() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="heirloom-query-embed")


def vector_search(
    request: ContextRequest, store: StoryStore, vectors: VectorIndex, embedder: Embedder, *, k: int = 24
) -> VectorBranch:
    started = time.monotonic()
    if request.mode == "graph":
        return VectorBranch(status="skipped")
    legacy = store.get_legacy(request.legacy_id)  # read once, for the scope and the subject
    scope = scope_for(store, request.user_id, request.legacy_id, legacy=legacy)
    text = query_text(request)
    # the subject's names would pull every story titled with them ahead of the answer
    focus = without_subject(text, subject_forms(store, request.legacy_id, legacy=legacy)) or text
    # the query is embedded while the words are searched (that search needs no embedding)
    pending = _query_embeddings().submit(embedder.embed, [focus])
    by_words = vectors.search_text(focus, scope, k)
    try:
        (embedding,) = pending.result()
    except ModelError as exc:  # throttled or refused: the workflow's Catch gives no chunks
        raise VectorUnavailable(f"query embedding failed: {type(exc).__name__} {exc.code}".strip()) from exc
    # the nearest chunks, and the cosine of the chunks found by words
    nearest = vectors.search(embedding, scope, k, also=[(h.story_id, h.chunk_index) for h in by_words])
    merged: dict[tuple[UUID, int], ChunkHit] = {(h.story_id, h.chunk_index): h for h in nearest}
    for hit in by_words:
        key = (hit.story_id, hit.chunk_index)
        if key in merged:  # the same cosine, plus its lexical score
            merged[key] = hit.model_copy(update={"similarity": merged[key].similarity})
    results = sorted((_result(h) for h in merged.values()), key=lambda c: -retrieval_score(c))
    return VectorBranch(hits=tuple(results), latency_ms=round((time.monotonic() - started) * 1000, 2))
