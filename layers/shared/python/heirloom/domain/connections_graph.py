"""The graph side of story connections (docs/design.md §9): every person, place, event and object
a story or a conversation names, and the stories that share each; the periods (decades) a story's
years fall in, and the stories set in them.

Hits are unfiltered: AccessFilter keeps only the stories the caller may read. Each hit's
`template` says what connects it (`connected_person`, ...) and `entity` names it. The legacy's
subject is left out: every story of the legacy is his. Neptune-compatible openCypher only."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from heirloom.contracts.context import (
    BranchStatus,
    ContextRequest,
    GraphHit,
    GraphResults,
    QueryIntent,
    TraversalStat,
)
from heirloom.domain.graph_queries import ANCHOR_LABELS, LEGACY_CONTEXT, Merge, ascending, per_label
from heirloom.domain.personas import TraversalConfig
from heirloom.domain.query_pool import QueryPool
from heirloom.domain.year_keys import year_keys, year_range
from heirloom.ports import GraphStore

_LABEL = """CASE WHEN e:Person THEN 'Person' WHEN e:Place THEN 'Place' WHEN e:Event THEN 'Event'
            ELSE 'Object' END"""

#: the entities a story's extraction linked it to
STORY_ENTITIES = f"""
MATCH (s:Story {{id: $story_id}})-[:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(e)
WHERE e:Person OR e:Place OR e:Event OR e:Object
RETURN DISTINCT e.id AS entity_id, e.name AS entity, {_LABEL} AS label
ORDER BY entity_id
LIMIT $limit
"""

STORY_YEARS = """
MATCH (s:Story {id: $story_id})
RETURN s.years AS years
"""

#: every story linked to one of the entities (the seed story too: it shows what it mentions), with
#: the name that story's edge gives it (an owned or merged thing's words per story, decision
#: 0039); per label, by its id index (`per_label`), the branches merged by `CONNECTED_MERGE`
CONNECTED_STORIES = per_label(
    """
MATCH (x:{label})
WHERE x.id IN $ids{first}
WITH x
MATCH (s:Story)-[r:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(x)
WHERE s.legacy_id IN $legacy_ids
RETURN DISTINCT s.id AS story_id, x.id AS entity_id,
       CASE WHEN x:Person THEN x.name ELSE coalesce(r.name, x.name) END AS entity, '{label}' AS label
ORDER BY entity_id, story_id, entity, label
LIMIT $limit
""",
    ANCHOR_LABELS,
)
CONNECTED_MERGE = Merge(ascending("entity_id", "story_id", "entity", "label"), distinct=True)

#: stories whose years fall in a period (`$years`: "|1970|" .. "|1979|"); the years of the
#: legacies' stories only, as in graph_queries.TEMPORAL
PERIOD_STORIES = """
MATCH (s:Story)
WHERE s.legacy_id IN $legacy_ids
WITH s, [y IN $years WHERE coalesce(s.years, '') CONTAINS y] AS hits
WHERE size(hits) > 0
RETURN s.id AS story_id
ORDER BY story_id
LIMIT $limit
"""

CONNECTION_TEMPLATES: dict[str, str] = {
    "story_entities": STORY_ENTITIES,
    "story_years": STORY_YEARS,
    "connected_stories": CONNECTED_STORIES,
    "period_stories": PERIOD_STORIES,
}

#: rows per entity a connections query may return, and the most in all
ROWS_PER_ENTITY = 40
MAX_ROWS = 1000
#: the periods a story is placed in: its decades with the most years named
MAX_PERIODS = 3


class _Queries:
    def __init__(self, pool: QueryPool):
        self.pool = pool
        self.stats: list[TraversalStat] = []
        self.timed_out = False

    def prefetch(self, *calls: tuple[str, str, dict[str, Any]]) -> None:
        self.pool.prefetch(calls)

    def run(self, name: str, cypher: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        answer = self.pool.answer(name, cypher, params)
        if answer is None:
            self.timed_out = True
            return []
        rows, latency = answer
        self.stats.append(TraversalStat(template=name, results=len(rows), latency_ms=latency))
        return rows


def decades(years: str | None) -> list[tuple[int, int]]:
    """The decades of a `years` property ("|1962|1965|1974|"), most years first, then oldest."""
    counts = Counter(int(y) // 10 * 10 for y in (years or "").split("|") if y.isdigit())
    ranked = sorted(counts, key=lambda d: (-counts[d], d))[:MAX_PERIODS]
    return [(d, d + 9) for d in ranked]


def period_name(start: int, end: int) -> str:
    if start == end:
        return str(start)
    return f"the {start}s" if end == start + 9 and start % 10 == 0 else f"{start}-{end}"


def traverse_connections(
    graph: GraphStore,
    request: ContextRequest,
    intent: QueryIntent,
    config: TraversalConfig,
    *,
    budget_ms: float = 300.0,
    clock: Callable[[], float] = time.monotonic,
    concurrency: int = 1,
) -> GraphResults:
    """The seed story's entities (`request.linked_story_id`) and those the intent matched, each
    traversed to the stories that share it; the seed's decades (or the periods the query names)
    to the stories set in them. With `concurrency` > 1 the queries that do not read each other's
    rows go out together (docs/decisions/0019); the result is the sequential run's."""
    started = clock()
    pool = QueryPool(graph, started + budget_ms / 1000.0, clock, concurrency=concurrency)
    try:
        q = _Queries(pool)
        hits = _connections(q, request, intent, config)
    finally:
        pool.close()
    status: BranchStatus = "timeout" if q.timed_out else "ok"
    if hits is None:  # no such legacy (or its context came too late)
        return GraphResults(traversals=tuple(q.stats), status=status)
    return GraphResults(
        hits=tuple(h for h in hits if h.entity),
        traversals=tuple(q.stats),
        status=status,
        latency_ms=round((clock() - started) * 1000, 2),
    )


def _connections(
    q: _Queries, request: ContextRequest, intent: QueryIntent, config: TraversalConfig
) -> list[GraphHit] | None:
    legacy = str(request.legacy_id)
    ctx = q.run("legacy_context", LEGACY_CONTEXT, {"legacy_id": legacy})
    if not ctx or ctx[0].get("subject_id") is None:
        return None
    subject = str(ctx[0]["subject_id"])
    linked = [str(x) for x in ctx[0].get("linked_ids") or [] if x]
    legacy_ids = [legacy, *(linked if config.include_cross_legacy else [])]
    seed = str(request.linked_story_id) if request.linked_story_id else ""

    ids = {m.node_id for m in intent.matches}
    periods = [r for r in (year_range(p) for p in intent.entities.time_periods) if r]
    if seed:
        entities = ("story_entities", STORY_ENTITIES, {"story_id": seed, "limit": MAX_ROWS})
        years_of = ("story_years", STORY_YEARS, {"story_id": seed})
        q.prefetch(entities, years_of)  # both read the seed only
        rows = q.run(*entities)
        ids |= {str(r["entity_id"]) for r in rows if r.get("entity_id")}
        years = q.run(*years_of)
        periods = decades(years[0].get("years") if years else None) or periods
    ids.discard(subject)

    # the stories of the entities and of each period: none reads another's rows
    calls: list[tuple[str, str, dict[str, Any]]] = []
    if ids:
        params = {
            "ids": sorted(ids),
            "legacy_ids": legacy_ids,
            "limit": min(MAX_ROWS, ROWS_PER_ENTITY * len(ids)),
        }
        calls.append(("connected_stories", CONNECTED_STORIES, params))
    spans = periods[:MAX_PERIODS]
    for start, end in spans:
        params = {"legacy_ids": legacy_ids, "years": year_keys(start, end), "limit": ROWS_PER_ENTITY}
        calls.append(("period_stories", PERIOD_STORIES, params))
    q.prefetch(*calls)
    hits: list[GraphHit] = []
    if ids:
        for row in CONNECTED_MERGE.apply(q.run(*calls[0]), calls[0][2]):
            kind = str(row["label"]).lower()
            hits.append(_hit(row["story_id"], f"connected_{kind}", row["entity"], row["entity_id"]))
    for (start, end), call in zip(spans, calls[1 if ids else 0 :], strict=True):
        for row in q.run(*call):
            hits.append(_hit(row["story_id"], "connected_period", period_name(start, end)))
    return hits


def _hit(story_id: Any, template: str, entity: Any, entity_id: Any = None) -> GraphHit:
    return GraphHit(
        story_id=story_id,
        template=template,
        hops=1,
        relationship="TIME" if template == "connected_period" else "MENTIONS",
        entity=str(entity or ""),
        entity_id=str(entity_id) if entity_id else None,
        entity_match=True,
    )
