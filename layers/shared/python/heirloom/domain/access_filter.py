"""AccessFilter: keeps only what the user may read (docs/dataset-format.md), from both retrieval branches.

Stories are checked against PostgreSQL (the source of truth) with the same `ReadScope` that the
vector search compiled to SQL. A graph fact survives only if a readable story supports it or it
is a known relationship touching a legacy the user is a member of. Any failure here fails the
request closed: nothing unfiltered is ever passed on.

What goes on to debug output is computed here too, after filtering and only from what the user
may read: the intent's matches keep only entities a readable story or allowed fact shows (the
gazetteer also knows entities of stories the user cannot read), and each traversal's `results`
counts the readable stories its hits reached (the `facts` template: the facts kept).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from uuid import UUID

from heirloom.contracts.context import (
    AccessFilterInput,
    Candidate,
    ChunkResult,
    ContextRequest,
    FilteredContext,
    GraphBranch,
    GraphFact,
    GraphHit,
    GraphResults,
    QueryEntities,
    QueryIntent,
    TraversalStat,
    VectorBranch,
)
from heirloom.contracts.records import Legacy
from heirloom.domain.access import ReadScope, resolve_scope
from heirloom.domain.relevance import retrieval_score
from heirloom.errors import NotFound
from heirloom.ports import Chunk, StoryStore, VectorIndex

log = logging.getLogger(__name__)

#: opening chunks shown for a story that only the graph found
GRAPH_ONLY_CHUNKS = 2


def scope_for(
    store: StoryStore, user_id: UUID, legacy_id: UUID, *, legacy: Legacy | None = None
) -> ReadScope:
    """The user's read scope on `legacy_id`; raises AccessDenied / NotFound. `legacy`: its row,
    when the caller has read it already."""
    if (legacy or store.get_legacy(legacy_id)) is None:
        raise NotFound(f"legacy {legacy_id} does not exist")
    return resolve_scope(
        user_id=user_id,
        legacy_id=legacy_id,
        role=store.role_of(user_id, legacy_id),
        links=store.links_of(legacy_id),
        member_legacy_ids=store.member_legacy_ids(user_id),
    )


def fact_allowed(fact: GraphFact, readable: set[str], scope: ReadScope) -> bool:
    if any(sid in readable for sid in fact.story_ids):
        return True
    members = {str(x) for x in scope.member_legacy_ids}
    return fact.known and any(lid in members for lid in fact.legacy_ids)


def _pick_chunks(chunks: list[ChunkResult], hints: Iterable[str]) -> list[ChunkResult]:
    """Chunks that name a hint (entity or person the graph followed) first, else the opening."""
    words = [h.lower() for h in hints if h]
    named = [c for c in chunks if any(w in c.text.lower() for w in words)]
    rest = [c for c in chunks if c not in named]
    return (named + rest)[:GRAPH_ONLY_CHUNKS]


def _stored_chunks(vectors: VectorIndex, story_ids: Sequence[UUID]) -> dict[UUID, list[Chunk]]:
    """Chunks for graph-only excerpts, in one read. When the chunk index is unavailable these
    stories get no excerpt (their facts still count, their text cannot be shown). Permissions
    never come from here."""
    if not story_ids:
        return {}
    try:
        return vectors.chunks_of_many(story_ids)
    except Exception as exc:
        log.warning("graph_only_excerpts_unavailable: %s", type(exc).__name__)
        return {}


def readable_intent(
    intent: QueryIntent, request: ContextRequest, candidates: Sequence[Candidate], facts: Sequence[GraphFact]
) -> QueryIntent:
    """The intent as debug output may show it: a match survives when an allowed fact names its
    node, or a readable candidate's hits, title or excerpt name it; an entity name a dropped
    match brought in survives only when the user wrote it."""
    node_ids = {f.subject_id for f in facts} | {f.object_id for f in facts}
    shown = " \n ".join(
        [
            *(name for f in facts for name in (f.subject, f.object)),
            *(c.title for c in candidates),
            *(chunk.text for c in candidates for chunk in c.chunks),
            *(name for c in candidates for h in c.graph_hits for name in (h.entity, h.via) if name),
        ]
    ).casefold()
    kept = tuple(m for m in intent.matches if m.node_id in node_ids or m.name.casefold() in shown)
    dropped = {m.name.casefold() for m in intent.matches if m not in kept} - {m.name.casefold() for m in kept}
    if not dropped:
        return intent
    written = " ".join([request.query, *(m.content for m in request.history)]).casefold()

    def names(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in values if n.casefold() not in dropped or n.casefold() in written)

    e = intent.entities
    entities = QueryEntities(
        people=names(e.people),
        places=names(e.places),
        time_periods=e.time_periods,
        events=names(e.events),
        objects=names(e.objects),
    )
    return intent.model_copy(update={"matches": kept, "entities": entities})


def readable_traversals(
    stats: Sequence[TraversalStat], candidates: Sequence[Candidate], facts: Sequence[GraphFact]
) -> tuple[TraversalStat, ...]:
    """Each traversal's `results` recounted from what the user may read: the readable stories
    its hits reached (`facts`: the facts kept; a template that reaches no story: 0)."""
    reached: dict[str, set[UUID]] = defaultdict(set)
    for c in candidates:
        for h in c.graph_hits:
            reached[h.template].add(c.story_id)
    return tuple(
        s.model_copy(
            update={"results": len(facts) if s.template == "facts" else len(reached.get(s.template, ()))}
        )
        for s in stats
    )


def filter_context(data: AccessFilterInput, store: StoryStore, vectors: VectorIndex) -> FilteredContext:
    started = time.monotonic()
    request = data.request
    legacy = store.get_legacy(request.legacy_id)  # read once: scope, names, subject
    scope = scope_for(store, request.user_id, request.legacy_id, legacy=legacy)
    vector = next((b for b in data.branches if isinstance(b, VectorBranch)), VectorBranch(status="skipped"))
    graph_branch = next((b for b in data.branches if isinstance(b, GraphBranch)), None)
    intent = graph_branch.intent if graph_branch else QueryIntent()
    graph = graph_branch.graph if graph_branch else GraphResults(status="skipped")

    by_story: dict[UUID, list[ChunkResult]] = defaultdict(list)
    for hit in vector.hits:
        by_story[hit.story_id].append(hit)
    hits_by_story: dict[UUID, list[GraphHit]] = defaultdict(list)
    for ghit in graph.hits:
        hits_by_story[ghit.story_id].append(ghit)

    ids = set(by_story) | set(hits_by_story)
    # facts are checked against every story that supports them, candidates or not
    fact_story_ids = {UUID(s) for f in graph.facts for s in f.story_ids}
    metas = {m.id: m for m in store.story_meta(ids | fact_story_ids)}
    readable_any = {sid for sid, meta in metas.items() if scope.allows(meta)}
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
                primary=primary,
                shared_via=None if primary else shared_via.get(meta.legacy_id),  # type: ignore[arg-type]
                chunks=tuple(chunks_out),
                embedding_score=max((retrieval_score(c) for c in chunks), default=None),
                graph_hits=tuple(ghits),
            )
        )
    readable_str = {str(s) for s in readable_any}
    facts = tuple(f for f in graph.facts if fact_allowed(f, readable_str, scope))

    subject = store.get_person(legacy.subject_person_id) if legacy else None
    latency = {"vector": vector.latency_ms, "graph": graph.latency_ms, "intent": intent.latency_ms}
    latency["access_filter"] = round((time.monotonic() - started) * 1000, 2)
    return FilteredContext(
        intent=readable_intent(intent, request, candidates, facts),
        subject_name=subject.name if subject else (legacy.name if legacy else ""),
        legacy_name=legacy.name if legacy else "",
        candidates=tuple(candidates),
        facts=facts,
        traversals=readable_traversals(graph.traversals, candidates, facts),
        vector_status=vector.status,
        graph_status=graph.status,
        dropped_stories=len(ids) - len(readable),
        dropped_facts=len(graph.facts) - len(facts),
        latency_ms=latency,
    )
