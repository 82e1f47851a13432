"""VectorSearch: the question embedded without the subject's names, and the nearest chunks of
the stories in scope; a linked legacy whose subject the question names is searched apart,
without that subject's names (`own_accounts`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from uuid import UUID

from heirloom.contracts.access import ReadScope
from heirloom.contracts.context import ChunkResult, ContextRequest, VectorBranch, VectorSearchInput
from heirloom.domain.access_filter import scope_for
from heirloom.domain.asker import AskerKin, asker_kin, with_asker_names
from heirloom.domain.personas import reaches_links
from heirloom.domain.relevance import retrieval_score
from heirloom.domain.retrieval import (
    SubjectCache,
    _query_embeddings,
    query_text,
    subject_forms,
    without_subject,
)
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
        subjects=services.subjects,
    )


def own_accounts(
    text: str,
    kin: Sequence[AskerKin],
    scope: ReadScope,
    legacy_id: UUID,
    store: StoryStore,
    subjects: SubjectCache | None = None,
) -> list[tuple[str, ReadScope]]:
    """A linked legacy whose subject the question names, by a name or as the asker's relative
    ("my grandfather"), with its own search text: that legacy's stories are the subject's own
    account ("I", never their name), so its subject's names and kin phrase go from the text
    there and the request's subject's stay (a person like any other in those stories)."""
    subjects = subjects or SubjectCache(ttl_s=0.0)
    out: list[tuple[str, ReadScope]] = []
    for grant in scope.grants:
        if grant.legacy_id == legacy_id:
            continue
        subject, forms = subjects.get(store, grant.legacy_id)
        if subject is None:
            continue
        own = without_subject(text, forms)
        named = own != " ".join(text.split()) or any(k.person.id == subject for k in kin)
        own = with_asker_names(own, kin, subject)
        if named and any(ch.isalnum() for ch in own):
            out.append((own, scope.model_copy(update={"grants": (grant,)})))
    return out


def vector_search(
    request: ContextRequest,
    store: StoryStore,
    vectors: VectorIndex,
    embedder: Embedder,
    *,
    k: int = 24,
    subjects: SubjectCache | None = None,
) -> VectorBranch:
    """`subjects`: the container's cache of linked legacies' subjects (none: read each time)."""
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
    searches = [(focus, scope), *own_accounts(text, kin, scope, request.legacy_id, store, subjects)]
    # the queries are embedded while the words are searched (that search needs no embedding)
    pending = _query_embeddings().submit(embedder.embed, [t for t, _ in searches])
    by_words = [vectors.search_text(t, sc, k) for t, sc in searches]
    try:
        embeddings = pending.result()
    except ModelError as exc:  # throttled or refused: the workflow's Catch gives no chunks
        raise VectorUnavailable(f"query embedding failed: {type(exc).__name__} {exc.code}".strip()) from exc
    merged: dict[tuple[UUID, int], ChunkResult] = {}
    apart = {g.legacy_id for _, sc in searches[1:] for g in sc.grants}
    for i, ((_, sc), words, embedding) in enumerate(zip(searches, by_words, embeddings, strict=True)):
        # the nearest chunks, and the cosine of the chunks found by words
        nearest = vectors.search(embedding, sc, k, also=[(h.story_id, h.chunk_index) for h in words])
        found: dict[tuple[UUID, int], ChunkResult] = {(h.story_id, h.chunk_index): h for h in nearest}
        for hit in words:
            key = (hit.story_id, hit.chunk_index)
            if key in found:  # the same cosine, plus its lexical score
                found[key] = hit.model_copy(update={"similarity": found[key].similarity})
        # a legacy searched on its own keeps that search's chunks only
        merged.update({key: h for key, h in found.items() if i > 0 or h.legacy_id not in apart})
    results = sorted(
        (h.model_copy(update={"similarity": round(h.similarity, 6)}) for h in merged.values()),
        key=lambda c: -retrieval_score(c),
    )
    return VectorBranch(hits=tuple(results), latency_ms=round((time.monotonic() - started) * 1000, 2))
