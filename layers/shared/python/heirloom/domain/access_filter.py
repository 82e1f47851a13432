"""AccessFilter: keeps only what the user may read (docs/dataset-format.md), from both retrieval branches.

Stories are checked against PostgreSQL (the source of truth) with the same `ReadScope` that the
vector search compiled to SQL. A graph fact survives only if a readable story supports it or it
is a known relationship touching a legacy the user is a member of, as the relationship records
hold it now (read from the store, not taken from the graph's or a cache's word: decision 0030);
a conversation fact
(docs/decisions/0018) only for the user whose conversation stated it. Any failure here fails the
request closed: nothing unfiltered is ever passed on.

What goes on to debug output is computed here too, after filtering and only from what the user
may read: the intent's matches keep only entities a readable story or allowed fact shows (the
gazetteer also knows entities of stories the user cannot read), and each traversal's `results`
counts the readable stories its hits reached (the `facts` template: the facts kept).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from uuid import UUID

from heirloom.contracts.access import KnownRelationship, ReadScope
from heirloom.contracts.context import (
    Candidate,
    ChunkResult,
    ContextRequest,
    GraphFact,
    GraphResults,
    QueryEntities,
    QueryIntent,
    TraversalStat,
)
from heirloom.contracts.records import Legacy, Role
from heirloom.domain.access import not_a_member, resolve_scope
from heirloom.errors import AccessDenied
from heirloom.ports import Chunk, StoryStore, VectorIndex

log = logging.getLogger(__name__)

#: opening chunks shown for a story that only the graph found
GRAPH_ONLY_CHUNKS = 2


def scope_for(
    store: StoryStore,
    user_id: UUID,
    legacy_id: UUID,
    *,
    legacy: Legacy | None = None,
    cross_legacy: bool = True,
    as_of: datetime | None = None,
) -> ReadScope:
    """The user's read scope on `legacy_id`; AccessDenied for a non-member, and for a legacy
    that does not exist (the same refusal: a stranger cannot tell the two apart). `legacy`: its
    row, when the caller has read it already. `cross_legacy=False` (a persona with
    `include_cross_legacy: false`): the legacy alone, no linked legacy. `as_of`: only stories
    created by then."""
    if (legacy or store.get_legacy(legacy_id)) is None:
        raise not_a_member(user_id, legacy_id)
    scope = resolve_scope(
        user_id=user_id,
        legacy_id=legacy_id,
        role=store.role_of(user_id, legacy_id),
        links=store.links_of(legacy_id) if cross_legacy else (),
        member_legacy_ids=store.member_legacy_ids(user_id) if cross_legacy else (),
    )
    return scope if as_of is None else scope.model_copy(update={"as_of": as_of})


#: who may curate a legacy and turn its switches (staging, conversation memory)
CURATORS = frozenset({Role.CREATOR, Role.ADMIN})


def curator_scope(store: StoryStore, user_id: UUID, legacy_id: UUID, *, to: str) -> ReadScope:
    """A creator's or admin's read scope; AccessDenied for any other role ("... may `to`"),
    and from `scope_for` for a non-member or a missing legacy."""
    scope = scope_for(store, user_id, legacy_id)
    if scope.role not in CURATORS:
        raise AccessDenied(f"only the legacy's creator or an admin may {to}")
    return scope


def fact_allowed(fact: GraphFact, readable: set[str], scope: ReadScope) -> bool:
    """A conversation fact: its owner's alone, whatever their role. A told fact: a readable
    story supports it. A known relationship: it touches a legacy the user is a member of."""
    if fact.owner_user_id is not None:
        return fact.owner_user_id == scope.user_id
    if any(sid in readable for sid in fact.story_ids):
        return True
    members = {str(x) for x in scope.member_legacy_ids}
    return fact.known and any(lid in members for lid in fact.legacy_ids)


def readable_facts(
    facts: Iterable[GraphFact], titles: dict[str, str], scope: ReadScope
) -> tuple[GraphFact, ...]:
    """The facts the user may see, each naming only the readable stories that support it
    (`titles`: every readable story's title, by id)."""
    readable = set(titles)
    return tuple(
        f.model_copy(
            update={
                "story_ids": (kept := tuple(s for s in f.story_ids if s in readable)),
                "titles": tuple(titles[s] for s in kept),
            }
        )
        for f in facts
        if fact_allowed(f, readable, scope)
    )


def _known_key(fact: GraphFact) -> tuple[UUID, UUID, str] | None:
    """A known fact's relationship record key (from person, to person, type); None for an id
    that is no UUID (no record can stand behind it)."""
    try:
        return UUID(fact.subject_id), UUID(fact.object_id), fact.predicate
    except ValueError:
        return None


def _stored_fact(r: KnownRelationship) -> GraphFact:
    """A stored relationship as the `facts` template reads a known edge."""
    return GraphFact(
        subject_id=str(r.from_person_id),
        subject=r.from_name,
        predicate=r.type,
        object_id=str(r.to_person_id),
        object=r.to_name,
        detail=r.detail,
        since=r.since,
        until=r.until,
        known=True,
        legacy_ids=(str(r.from_legacy_id), str(r.to_legacy_id)),
    )


def _person_ids(ids: Iterable[str]) -> list[UUID]:
    out = []
    for value in ids:
        try:
            out.append(UUID(value))
        except ValueError:
            continue  # no record can name it
    return out


def known_now(store: StoryStore, graph: GraphResults) -> tuple[tuple[GraphFact, ...], tuple[GraphFact, ...]]:
    """(facts, ambient facts) with the known relationships as the store holds them now, in one
    read: those of the persons the `facts` template asked for (`graph.known`) come from the
    records, whatever the graph or a neighbourhood cache answered, so an added one shows at once
    and a removed or retyped one is gone; merged with the told facts in the template's order and
    cut at its limit. The graph's own known facts count for nothing (its templates return told
    facts only, decision 0030): without a scope they are dropped, and an ambient known fact
    (none today: known edges join two persons) stands only if a record read for the scope backs
    it, as that record says."""
    scope = graph.known
    if scope is None:
        return _confirmed(graph.facts, {}), _confirmed(graph.ambient_facts, {})
    persons = _person_ids(scope.person_ids)
    known = store.known_relationships(persons) if persons else []
    by_key = {(r.from_person_id, r.to_person_id, r.type): r for r in known}

    def order(f: GraphFact) -> tuple[int, str, str, str, str]:
        subject_first = 0 if scope.subject_id in (f.subject_id, f.object_id) else 1
        return subject_first, f.predicate, f.object, f.object_id, f.subject_id

    told = [f for f in graph.facts if not f.known]
    facts = sorted([*told, *(_stored_fact(r) for r in known)], key=order)[: scope.limit]
    return tuple(facts), _confirmed(graph.ambient_facts, by_key)


def _confirmed(
    facts: Iterable[GraphFact], records: Mapping[tuple[UUID, UUID, str], KnownRelationship]
) -> tuple[GraphFact, ...]:
    """The told facts as they are; the known ones as their records say, dropped without one."""
    out = []
    for fact in facts:
        key = _known_key(fact) if fact.known else None
        record = records.get(key) if key is not None else None
        if not fact.known:
            out.append(fact)
        elif record is not None:
            out.append(
                fact.model_copy(
                    update={"detail": record.detail, "since": record.since, "until": record.until}
                )
            )
    return tuple(out)


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
    stats: Sequence[TraversalStat],
    candidates: Sequence[Candidate],
    facts: Sequence[GraphFact],
    ambient_facts: Sequence[GraphFact] = (),
) -> tuple[TraversalStat, ...]:
    """Each traversal's `results` recounted from what the user may read: the readable stories
    its hits reached (`facts`, `ambient`: the facts kept; a template that reaches no story: 0)."""
    kept = {"facts": len(facts), "ambient": len(ambient_facts)}
    reached: dict[str, set[UUID]] = defaultdict(set)
    for c in candidates:
        for h in c.graph_hits:
            reached[h.template].add(c.story_id)
    return tuple(
        s.model_copy(
            update={"results": kept[s.template] if s.template in kept else len(reached.get(s.template, ()))}
        )
        for s in stats
    )
