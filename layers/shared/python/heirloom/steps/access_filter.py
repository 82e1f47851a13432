"""AccessFilter: drop every story and fact the user may not read; fails closed (an unreadable
permission store is an error, never an unfiltered answer)."""

from __future__ import annotations

import time
from collections import defaultdict
from uuid import UUID

from heirloom.contracts.context import (
    AccessFilterInput,
    Candidate,
    ChunkResult,
    FilteredContext,
    GraphBranch,
    GraphHit,
    GraphResults,
    QueryIntent,
    VectorBranch,
)
from heirloom.domain.access_filter import (
    _pick_chunks,
    _stored_chunks,
    fact_allowed,
    known_now,
    readable_facts,
    readable_intent,
    readable_traversals,
    scope_for,
)
from heirloom.domain.accounts import credit_readable
from heirloom.domain.community_notes import readable_communities, wants_communities
from heirloom.domain.conversation_memory import own_facts
from heirloom.domain.personas import reaches_links
from heirloom.domain.relevance import retrieval_score
from heirloom.ports import StoryStore, VectorIndex
from heirloom.services import Services


def run(data: AccessFilterInput, services: Services) -> FilteredContext:
    filtered = filter_context(data, services.stories, services.vectors)
    filtered = with_own_facts(data, filtered, services)
    limit = services.settings.curation.context_communities
    if not wants_communities(data.request, filtered) or not limit:
        return filtered
    scope = scope_for(
        services.stories,
        data.request.user_id,
        data.request.legacy_id,
        cross_legacy=reaches_links(data.request),
        as_of=data.request.as_of,
    )
    notes = readable_communities(services.curation, services.stories, scope, limit)
    return filtered.model_copy(update={"communities": notes})


def with_own_facts(data: AccessFilterInput, filtered: FilteredContext, services: Services) -> FilteredContext:
    """The requester's own conversation facts the question names (docs/decisions/0018), through
    the same rule as every fact: kept for their owner alone."""
    request = data.request
    limit = services.settings.retrieval.conversation_facts
    if not limit or request.purpose != "answer":
        return filtered
    own = own_facts(services.conversations, request, filtered.intent, limit)
    if not own:
        return filtered
    scope = scope_for(services.stories, request.user_id, request.legacy_id, cross_legacy=False)
    kept = tuple(f for f in own if fact_allowed(f, set(), scope))
    return filtered.model_copy(update={"facts": filtered.facts + kept})


def filter_context(data: AccessFilterInput, store: StoryStore, vectors: VectorIndex) -> FilteredContext:
    started = time.monotonic()
    request = data.request
    legacy = store.get_legacy(request.legacy_id)  # read once: scope, names, subject
    scope = scope_for(
        store,
        request.user_id,
        request.legacy_id,
        legacy=legacy,
        cross_legacy=reaches_links(request),
        as_of=request.as_of,
    )
    vector = next((b for b in data.branches if isinstance(b, VectorBranch)), VectorBranch(status="skipped"))
    graph_branch = next((b for b in data.branches if isinstance(b, GraphBranch)), None)
    intent = graph_branch.intent if graph_branch else QueryIntent()
    graph = graph_branch.graph if graph_branch else GraphResults(status="skipped")

    by_story: dict[UUID, list[ChunkResult]] = defaultdict(list)
    for hit in vector.hits:
        by_story[hit.story_id].append(hit)
    # a hit's source story (a bridge's seed, docs/decisions/0022; the story that told the fact a
    # second hop went through) is checked like the story it reached
    seed_ids = {h.source_story_id for h in graph.hits if h.source_story_id is not None}
    ids = set(by_story) | {h.story_id for h in graph.hits}
    # facts are checked against every story that supports them, candidates or not
    fact_story_ids = {UUID(s) for f in (*graph.facts, *graph.ambient_facts) for s in f.story_ids}
    metas = {m.id: m for m in store.story_meta(ids | fact_story_ids | seed_ids)}
    readable_any = {sid for sid, meta in metas.items() if scope.allows(meta)}
    hits_by_story: dict[UUID, list[GraphHit]] = defaultdict(list)
    for ghit in graph.hits:
        if ghit.source_story_id is None or ghit.source_story_id in readable_any:
            hits_by_story[ghit.story_id].append(ghit)
    ids = set(by_story) | set(hits_by_story)
    readable = readable_any & ids

    legacy_names: dict[UUID, str] = {request.legacy_id: legacy.name} if legacy else {}
    shared_via: dict[UUID, str] = {}
    for grant in scope.grants[1:]:
        shared_via[grant.legacy_id] = "selective" if grant.story_ids is not None else "all"

    def legacy_name(legacy_id: UUID) -> str:
        if legacy_id not in legacy_names:
            row = store.get_legacy(legacy_id)
            legacy_names[legacy_id] = row.name if row else ""
        return legacy_names[legacy_id]

    stored_chunks = _stored_chunks(vectors, sorted((s for s in readable if s not in by_story), key=str))
    candidates = []
    for sid in sorted(readable, key=str):
        meta = metas[sid]
        chunks = sorted(by_story.get(sid, []), key=lambda c: -retrieval_score(c))
        ghits = hits_by_story.get(sid, [])
        if not chunks:
            stored = [
                ChunkResult(
                    story_id=sid,
                    legacy_id=meta.legacy_id,
                    chunk_index=c.index,
                    text=c.text,
                    token_count=c.token_count,
                    similarity=0.0,
                )
                for c in stored_chunks.get(sid, [])
            ]
            chunks_out = _pick_chunks(stored, [h.entity or "" for h in ghits] + [h.via or "" for h in ghits])
        else:
            chunks_out = chunks
        primary = meta.legacy_id == request.legacy_id
        candidates.append(
            Candidate(
                story_id=sid,
                legacy_id=meta.legacy_id,
                legacy_name=legacy_name(meta.legacy_id),
                title=meta.title,
                written_at=meta.updated_at,
                primary=primary,
                shared_via=None if primary else shared_via.get(meta.legacy_id),  # type: ignore[arg-type]
                chunks=tuple(chunks_out),
                embedding_score=max((retrieval_score(c) for c in chunks), default=None),
                graph_hits=tuple(ghits),
            )
        )
    titles = {str(sid): metas[sid].title for sid in readable_any}
    # known relationships as the store holds them now (a cache may lack an added one, or hold
    # a removed one), then only what the user may see
    now_facts, now_ambient = known_now(store, graph)
    kept_facts = readable_facts(now_facts, titles, scope)
    ambient_facts = readable_facts(now_ambient, titles, scope)
    # narrators named, and disputes recomputed among what the user may read only
    facts = credit_readable(
        kept_facts, {str(m.id): m.author_name for m in metas.values() if m.id in readable_any}
    )

    subject = store.get_person(legacy.subject_person_id) if legacy else None
    latency = {"vector": vector.latency_ms, "graph": graph.latency_ms, "intent": intent.latency_ms}
    latency["access_filter"] = round((time.monotonic() - started) * 1000, 2)
    return FilteredContext(
        intent=readable_intent(intent, request, candidates, facts),
        subject_name=subject.name if subject else (legacy.name if legacy else ""),
        legacy_name=legacy.name if legacy else "",
        candidates=tuple(candidates),
        facts=facts,
        ambient_facts=ambient_facts,
        traversals=readable_traversals(graph.traversals, candidates, facts, ambient_facts),
        vector_status=vector.status,
        graph_status=graph.status,
        dropped_stories=len(ids) - len(readable),
        dropped_facts=len(now_facts) - len(facts),
        latency_ms=latency,
    )
