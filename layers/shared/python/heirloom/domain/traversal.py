"""Graph traversal: intent + persona -> openCypher templates (docs/design.md §6) -> GraphResults.

Templates use logical labels and parameters only (and list comprehensions where Cypher has
any()/all(), which Neptune's openCypher lacks); at most 2 hops; each capped by the persona's
`max_graph_results`. Every template returns rows in the shape its reader consumes, and the
integration tests run each one against FalkorDB with a fixture graph.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heirloom.contracts.context import (
    BranchStatus,
    ContextRequest,
    GraphFact,
    GraphHit,
    GraphResults,
    Intent,
    KnownScope,
    QueryIntent,
    TraversalStat,
)
from heirloom.domain.described import described_people
from heirloom.domain.graph_queries import TEMPLATES, finish
from heirloom.domain.personas import TraversalConfig
from heirloom.domain.query_pool import QueryPool, call_key
from heirloom.domain.time_phrases import date_windows
from heirloom.domain.year_keys import year_keys, year_range
from heirloom.ports import GraphStore

#: stories an open question gets from the overview template
OVERVIEW_STORIES = 3

#: a bridge entity is mentioned by at most this many stories of the legacies walked, its seed
#: story included (decision 0009's specificity cap: a path to more says little)
BRIDGE_MAX_REACH = 4

#: templates whose rows depend only on the graph around a person or legacy (docs/design.md §6:
#: "person neighbourhood"), cached per container for NeighbourhoodCache.ttl_s
NEIGHBOURHOOD_TEMPLATES = frozenset(
    {
        "legacy_context",
        "relational",
        "relational_2hop",
        "general",
        "facts",
        "described",
        "story_facts",
        "fact_neighbours",
        "fact_sentences",
    }
)


class NeighbourhoodCache:
    """Per-container cache of neighbourhood template rows, keyed by template and parameters."""

    def __init__(
        self, ttl_s: float = 300.0, clock: Callable[[], float] = time.monotonic, max_items: int = 2048
    ):
        self.ttl_s = ttl_s
        self.clock = clock
        self.max_items = max_items
        self._items: dict[str, tuple[float, list[dict[str, Any]]]] = {}

    @staticmethod
    def key(template: str, params: dict[str, Any]) -> str:
        return call_key(template, params)

    def get(self, template: str, params: dict[str, Any]) -> list[dict[str, Any]] | None:
        hit = self._items.get(self.key(template, params))
        if hit is None or self.clock() - hit[0] >= self.ttl_s:
            return None
        return hit[1]

    def put(self, template: str, params: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        if len(self._items) >= self.max_items:
            self._items.clear()
        self._items[self.key(template, params)] = (self.clock(), rows)


@dataclass
class _Run:
    pool: QueryPool
    cache: NeighbourhoodCache | None = None
    stats: list[TraversalStat] = field(default_factory=list)
    status: BranchStatus = "ok"
    #: set on the dry run that lists the queries to prefetch: every query answers no rows
    planned: list[tuple[str, str, dict[str, Any]]] | None = None

    def _cached(self, template: str, params: dict[str, Any]) -> list[dict[str, Any]] | None:
        if self.cache is None or template not in NEIGHBOURHOOD_TEMPLATES:
            return None
        return self.cache.get(template, params)

    def query(self, template: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.planned is not None:
            if self._cached(template, params) is None:
                self.planned.append((template, TEMPLATES[template], params))
            return []
        if (cached := self._cached(template, params)) is not None:
            self.stats.append(TraversalStat(template=template, results=len(cached), latency_ms=0.0))
            return cached
        answer = self.pool.answer(template, TEMPLATES[template], params)
        if answer is None:
            self.status = "timeout"
            return []
        rows, latency_ms = finish(template, answer[0], params), answer[1]
        if self.cache is not None and template in NEIGHBOURHOOD_TEMPLATES:
            self.cache.put(template, params, rows)
        self.stats.append(TraversalStat(template=template, results=len(rows), latency_ms=latency_ms))
        return rows


def _ids(intent: QueryIntent, labels: Iterable[str]) -> list[str]:
    wanted = set(labels)
    return sorted({m.node_id for m in intent.matches if m.label in wanted})


@dataclass
class _Walk:
    """One traversal: the request's ids and parameters, and the hits found so far."""

    run: _Run
    query: str
    intent: QueryIntent
    config: TraversalConfig
    legacy_id: str
    subject_id: str
    base: dict[str, Any]
    person_ids: list[str]
    entity_ids: list[str]
    described: list[str] = field(default_factory=list)
    hits: list[GraphHit] = field(default_factory=list)
    facts: list[GraphFact] = field(default_factory=list)
    ambient: list[GraphFact] = field(default_factory=list)
    bridged: list[GraphHit] = field(default_factory=list)
    known: KnownScope | None = None
    #: the subjects of the linked legacies walked: their own stories say "I", never their name
    voices: frozenset[str] = frozenset()

    @property
    def planning(self) -> bool:
        """The dry run of `_plan`: a step whose parameters come from earlier rows issues nothing."""
        return self.run.planned is not None

    def add(
        self,
        story_ids: Sequence[Any],
        template: str,
        hops: int,
        relationship: str | None,
        entity: str | None = None,
        via: str | None = None,
        entity_match: bool = False,
        topic: bool = False,
        entity_id: str | None = None,
        source: str | None = None,
    ) -> None:
        """`source`: the story whose edge the path went through, when it is not the one reached."""
        for sid in story_ids:
            if sid:
                self.hits.append(
                    GraphHit(
                        story_id=sid,
                        template=template,
                        hops=hops,
                        relationship=relationship,
                        entity=entity,
                        entity_id=entity_id,
                        via=via,
                        entity_match=entity_match,
                        topic=topic,
                        source_story_id=source,
                    )
                )


def _named(w: _Walk) -> None:
    """Entities named in the message: always looked up, they carry the entity bonus."""
    if w.person_ids:
        for row in w.run.query("person_mentions", {**w.base, "ids": w.person_ids}):
            # a linked legacy's subject is named only in others' stories about them, never in
            # their own account: such a mention is a path, not evidence (docs/evaluation.md)
            own_voice = row.get("person_id") in w.voices
            w.add(
                [row["story_id"]], "person_mentions", 1, "MENTIONS", row["entity"], entity_match=not own_voice,
                topic=bool(row.get("topic")) and not own_voice,
            )  # fmt: skip
    if w.entity_ids:
        for row in w.run.query("entity_focused", {**w.base, "ids": w.entity_ids}):
            w.add(
                [row["story_id"]], "entity_focused", 1, row["relationship"], row["entity"], entity_match=True,
                topic=bool(row.get("topic")), entity_id=row.get("entity_id"),
            )  # fmt: skip


def _described(w: _Walk) -> None:
    """Connections the message describes rather than names ("her roommate", "the neighbour")."""
    if w.intent.intent is Intent.CROSS_LEGACY:
        return
    rows = w.run.query("described", {"person_id": w.subject_id, "limit": 4 * w.config.max_graph_results})
    w.described = described_people(w.query, rows, exclude=[w.subject_id, *w.person_ids])
    if w.described:
        for row in w.run.query("person_mentions", {**w.base, "ids": w.described}):
            w.add(
                [row["story_id"]], "described", 1, "MENTIONS", row["entity"], entity_match=True,
                topic=bool(row.get("topic")),
            )  # fmt: skip


def _relational(w: _Walk) -> None:
    # the people named, else the people described: a relational question about someone is not
    # a question about every connection
    named = [p for p in w.person_ids if p != w.subject_id]
    if w.planning and not named:  # the targets are the people `_described` finds
        return
    targets = named or w.described
    params = {**w.base, "person_id": w.subject_id, "target_ids": targets}
    templates = [("relational", 1)] + ([("relational_2hop", 2)] if w.config.max_hops >= 2 else [])
    for template, hops in templates:
        for row in w.run.query(template, params):
            w.add(
                row["story_ids"],
                template,
                hops,
                row["relationship"],
                via=row["via"],
                entity_match=bool(targets),
            )


def _story_facts(w: _Walk) -> None:
    """Stories whose facts touch the named persons and things (and the subject, when a person is
    named: "who did she marry"); only a fact joining two nodes the message asks about is an
    entity match (one through a single named node counted too lost more than it found on
    dev-legacy: docs/evaluation.md). With two hops allowed, the stories of the persons those
    facts lead to."""
    named = set(w.person_ids + w.entity_ids)
    if not named:
        return
    ids = sorted({*named, w.subject_id}) if w.person_ids else sorted(named)
    for row in w.run.query("story_facts", {**w.base, "ids": ids}):
        w.add(
            [row["story_id"]], "story_facts", 1, row["relationship"], row["entity"], row["via"],
            entity_match=bool(row["linked"]),
        )  # fmt: skip
    persons = [p for p in w.person_ids if p != w.subject_id]
    if w.config.max_hops >= 2 and persons:
        for row in w.run.query("fact_neighbours", {**w.base, "ids": persons}):
            # the fact's own story is checked like the story reached (AccessFilter): a fact only
            # an unreadable story tells must not lead to anyone
            w.add([row["story_id"]], "fact_neighbours", 2, row["relationship"], via=row["via"],
                  source=row.get("source_id"))  # fmt: skip


def _temporal(w: _Walk) -> None:
    ranges = [r for r in (year_range(p) for p in w.intent.entities.time_periods) if r]
    for start, end in ranges[:3]:
        for row in w.run.query("temporal", {**w.base, "years": year_keys(start, end)}):
            w.add([row["story_id"]], "temporal", 1, row["relationship"], row.get("entity"))


def _told_in(w: _Walk) -> None:
    """Stories told within a date the message names to the month or the day ("in mid-December
    2023": the calls, diary entries or letters of those days), whatever the intent: the date is
    named as an entity is, so its hits carry the entity bonus."""
    for start, end in date_windows(w.query)[:3]:
        for row in w.run.query("told_in", {**w.base, "start": start, "end": end}):
            w.add([row["story_id"]], "told_in", 1, row["relationship"], f"{start}/{end}", entity_match=True)


def _spatial(w: _Walk) -> None:
    names = [n.lower() for n in w.intent.entities.places if len(n) >= 3]
    place_ids = _ids(w.intent, ["Place"])
    if not (names or place_ids):
        return
    for row in w.run.query("spatial", {**w.base, "ids": place_ids, "names": names}):
        place = str(row["entity"] or "")
        if row["entity_id"] in place_ids or place.lower() in names:
            w.add(row["story_ids"], "spatial", 1, "TOOK_PLACE_AT", place, entity_match=True)
        else:
            # a place whose name only contains a word of the message ("lake" in "Tamarack Lake")
            # is weaker evidence, and its path is that word's
            term = next((n for n in names if n in place.lower()), place)
            w.add(row["story_ids"], "spatial", 1, "TOOK_PLACE_AT", term, via=place)


def _cross_legacy(w: _Walk) -> None:
    if not w.config.include_cross_legacy:  # the persona stays home: the subject's own stories
        _general_if_nothing(w)
        return
    params = {**w.base, "legacy_id": w.legacy_id, "ids": w.person_ids + w.entity_ids}
    for row in w.run.query("cross_legacy", params):
        w.add(
            [row["story_id"]],
            "cross_legacy",
            1,
            "LINKED_TO",
            via=row["via"],
            entity_match=bool(row["matched"]),
        )


def _general(w: _Walk) -> None:
    for row in w.run.query("general", {**w.base, "person_id": w.subject_id}):
        if row["label"] == "Story":
            w.add([row["node_id"]], "general", 1, row["relationship"])


def _general_if_nothing(w: _Walk) -> None:
    """An entity question whose entities led nowhere falls back on the subject's own stories."""
    if not w.hits and not w.planning:
        _general(w)


def _overview(w: _Walk) -> None:
    for row in w.run.query("overview", {**w.base, "limit": OVERVIEW_STORIES}):
        w.add([row["story_id"]], "overview", 1, None)


def _bridge(w: _Walk) -> None:
    """Bridge hits (docs/decisions/0022): from the stories reached so far (the seeds), the
    specific entities each mentions that the question does not name, to the other stories that
    mention them; each hit keeps its seed (`source_story_id`) so ranking can count it only when
    that seed is a readable top story. Its parameters are earlier rows: never prefetched."""
    seeds = list(dict.fromkeys(str(h.story_id) for h in w.hits))[: w.config.max_graph_results]
    if not seeds:
        return
    params = {
        **w.base,
        "seed_ids": seeds,
        "ids": sorted({w.subject_id, *w.person_ids, *w.entity_ids, *w.described}),
        "max_reach": BRIDGE_MAX_REACH,
        "limit": 4 * w.config.max_graph_results,
    }
    for row in w.run.query("bridge", params):
        for sid in row["story_ids"]:
            if sid and sid != row["source_id"]:
                w.bridged.append(
                    GraphHit(
                        story_id=sid,
                        template="bridge",
                        hops=2,
                        relationship=row["relationship"],
                        entity=row["entity"],
                        entity_id=row["entity_id"],
                        source_story_id=row["source_id"],
                    )
                )


#: intent -> what runs after the named and described entities are looked up
INTENT_STEPS: dict[Intent, tuple[Callable[[_Walk], None], ...]] = {
    Intent.RELATIONAL: (_relational, _story_facts),
    Intent.TEMPORAL: (_temporal,),
    Intent.SPATIAL: (_spatial,),
    Intent.CROSS_LEGACY: (_cross_legacy,),
    Intent.ENTITY_FOCUSED: (_story_facts, _general_if_nothing),
    Intent.GENERAL: (_general, _overview),
}


def _facts(w: _Walk) -> None:
    """The facts of the subject and the named persons, the told facts (with their sentences) of
    every named node, and ambient memory of the named places, events and objects."""
    limit = w.config.max_graph_results
    persons = sorted({w.subject_id, *w.person_ids})
    facts_rows = w.run.query("facts", {"person_ids": persons, "subject_id": w.subject_id, "limit": 2 * limit})
    w.known = KnownScope(person_ids=tuple(persons), subject_id=w.subject_id, limit=2 * limit)
    told_rows = w.run.query(
        "fact_sentences",
        {**w.base, "ids": sorted({*persons, *w.entity_ids}), "subject_id": w.subject_id},
    )
    ambient_rows = w.run.query("ambient", {"node_ids": w.entity_ids, "limit": limit}) if w.entity_ids else []
    w.facts = [_fact(r) for r in facts_rows if r.get("subject") and r.get("object")]
    w.facts += [
        _told_fact(r) for r in told_rows if r.get("subject") and r.get("object") and r.get("story_id")
    ]
    w.ambient = [_fact(r) for r in ambient_rows if r.get("subject") and r.get("object")]


def _plan(walk: _Walk, steps: Sequence[Callable[[_Walk], None]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The queries of `steps` whose parameters no other query's rows decide (docs/decisions/0019):
    the steps run once against a run that answers every query with no rows and writes down what
    it was asked; the steps that read earlier rows (`_Walk.planning`) ask nothing."""
    dry = dataclasses.replace(
        walk, run=dataclasses.replace(walk.run, planned=[], stats=[]), described=[], hits=[]
    )
    for step in steps:
        step(dry)
    return dry.run.planned or []


def _fact(r: dict[str, Any]) -> GraphFact:
    return GraphFact(
        subject_id=str(r["subject_id"]),
        subject=str(r["subject"]),
        predicate=str(r["predicate"]),
        object_id=str(r["object_id"]),
        object=str(r["object"]),
        detail=r.get("detail") or None,
        since=r.get("since") or None,
        until=r.get("until") or None,
        story_ids=tuple(r.get("story_ids") or ()),
        known=bool(r.get("known")),
        legacy_ids=tuple(x for x in (r.get("subject_legacy"), r.get("object_legacy")) if x),
    )


def _told_fact(r: dict[str, Any]) -> GraphFact:
    return GraphFact(
        subject_id=str(r["subject_id"]),
        subject=str(r["subject"]),
        predicate=str(r["predicate"]),
        object_id=str(r["object_id"]),
        object=str(r["object"]),
        detail=str(r.get("verb") or "") or None,
        story_ids=(str(r["story_id"]),),
        legacy_ids=tuple(x for x in (r.get("subject_legacy"), r.get("object_legacy")) if x),
        sentence=str(r.get("sentence") or "") or None,
        source_title=str(r.get("title") or "") or None,
        conflicting=bool(r.get("conflicting")),
        narrator_id=str(r.get("narrator") or "") or None,
        years=str(r.get("years") or ""),
        negated=bool(r.get("negated")),
    )


def traverse(
    graph: GraphStore,
    request: ContextRequest,
    intent: QueryIntent,
    config: TraversalConfig,
    *,
    budget_ms: float = 300.0,
    clock: Callable[[], float] = time.monotonic,
    cache: NeighbourhoodCache | None = None,
    concurrency: int = 1,
    bridge: bool = False,
) -> GraphResults:
    """Run the templates the intent calls for (`INTENT_STEPS`), and with `bridge` the bridge
    template from the stories they reached; stop issuing queries once the budget is spent. With `concurrency` > 1 the queries no other query's rows decide go out
    together first, up to that many at a time; the result is the sequential run's."""
    started = clock()
    pool = QueryPool(graph, started + budget_ms / 1000.0, clock, concurrency=concurrency)
    run = _Run(pool=pool, cache=cache)
    try:
        walk = _start(run, request, intent, config)
        if walk is None:
            return GraphResults(traversals=tuple(run.stats), status=run.status)
        steps = (
            _named,
            _described,
            *INTENT_STEPS[intent.intent],
            _told_in,  # after the intent's own hits: a month of entries never crowds them out
            *((_bridge,) if bridge else ()),
            _facts,
        )
        pool.prefetch(_plan(walk, steps) if pool.concurrency > 1 else ())
        for step in steps:
            step(walk)
    finally:
        pool.close()
    limit = config.max_graph_results
    return GraphResults(
        hits=(*_dedupe(walk.hits)[: limit * 2], *_dedupe(walk.bridged)[: limit * 4]),
        facts=tuple(walk.facts),
        known=walk.known,
        ambient_facts=tuple(walk.ambient),
        traversals=tuple(run.stats),
        status=run.status,
        latency_ms=round((clock() - started) * 1000, 2),
    )


def _start(run: _Run, request: ContextRequest, intent: QueryIntent, config: TraversalConfig) -> _Walk | None:
    """The legacy's context (its subject and linked legacies): every other query needs it."""
    legacy_id = str(request.legacy_id)
    ctx_rows = run.query("legacy_context", {"legacy_id": legacy_id})
    if not ctx_rows or ctx_rows[0].get("subject_id") is None:
        return None
    linked = [str(x) for x in ctx_rows[0].get("linked_ids") or [] if x]
    # the persona decides, not the intent: a cross_legacy question asked as a colleague stays home
    cross = config.include_cross_legacy
    return _Walk(
        run=run,
        query=request.query,
        intent=intent,
        config=config,
        legacy_id=legacy_id,
        subject_id=str(ctx_rows[0]["subject_id"]),
        base={"legacy_ids": [legacy_id, *(linked if cross else [])], "limit": config.max_graph_results},
        person_ids=_ids(intent, ["Person"]),
        entity_ids=_ids(intent, ["Place", "Event", "Object"]),
        voices=_voices(ctx_rows[0]) if cross else frozenset(),
    )


def _voices(ctx: dict[str, Any]) -> frozenset[str]:
    """The subjects of the legacies actively linked to the request's, other than its own."""
    return frozenset(str(x) for x in ctx.get("linked_subject_ids") or [] if x) - {str(ctx["subject_id"])}


def _dedupe(hits: list[GraphHit]) -> list[GraphHit]:
    """One hit per (story, template, relationship, bridge seed), keeping the first (best-ordered)
    unless a later one is a topic hit (the story's title names its entity) and the first is not."""
    kept: dict[tuple[str, str, str | None, str], int] = {}
    out: list[GraphHit] = []
    for hit in hits:
        key = (str(hit.story_id), hit.template, hit.relationship, str(hit.source_story_id or ""))
        if key not in kept:
            kept[key] = len(out)
            out.append(hit)
        elif hit.topic and not out[kept[key]].topic:
            out[kept[key]] = hit
    return out
