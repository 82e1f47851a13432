"""Graph traversal: intent + persona -> openCypher templates (seed 000 section 6) -> GraphResults.

Templates use logical labels and parameters only (and list comprehensions where Cypher has
any()/all(), which Neptune's openCypher lacks); at most 2 hops; each capped by the persona's
`max_graph_results`. Every template returns rows in the shape its reader consumes, and the
integration tests run each one against FalkorDB with a fixture graph.
"""

from __future__ import annotations

import json
import re
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
    QueryIntent,
    TraversalStat,
)
from heirloom.domain.personas import TraversalConfig
from heirloom.ports import GraphStore

SOCIAL = "FAMILY_OF|KNEW|WORKED_WITH|FRIENDS_WITH"

LEGACY_CONTEXT = """
MATCH (l:Legacy {id: $legacy_id})
OPTIONAL MATCH (l)-[k:LINKED_TO]-(o:Legacy)
WITH l, k, o
RETURN l.subject_person_id AS subject_id, l.name AS name,
       collect(DISTINCT CASE WHEN k.status = 'active' THEN o.id ELSE NULL END) AS linked_ids
"""

RELATIONAL_1HOP = f"""
MATCH (p:Person {{id: $person_id}})-[r:{SOCIAL}]-(c:Person)
WHERE size($target_ids) = 0 OR c.id IN $target_ids
OPTIONAL MATCH (s:Story)-[:MENTIONS]->(c)
WHERE s.legacy_id IN $legacy_ids
WITH c, r, collect(DISTINCT s.id) AS story_ids
RETURN c.id AS via_id, c.name AS via, r.kind AS relationship, story_ids
ORDER BY CASE r.kind WHEN 'FAMILY_OF' THEN 1 WHEN 'FRIENDS_WITH' THEN 2 WHEN 'KNEW' THEN 3 ELSE 4 END, via
LIMIT $limit
"""

#: from the subject by the id index (the WITH keeps FalkorDB's planner from starting at every
#: Person: 112 -> 2 ms at 10k), both hops in one pattern (distinct edges), the first `limit`
#: (connection, first edge, middle person) by name before stories are collected for them
RELATIONAL_2HOP = f"""
MATCH (p:Person {{id: $person_id}})
WITH p
MATCH (p)-[r1:{SOCIAL}]-(m:Person)-[:{SOCIAL}]-(c:Person)
WHERE c.id <> $person_id AND (size($target_ids) = 0 OR c.id IN $target_ids)
WITH DISTINCT c, r1, m
ORDER BY c.name, c.id, r1.kind, m.name
LIMIT $limit
OPTIONAL MATCH (s:Story)-[:MENTIONS]->(c)
WHERE s.legacy_id IN $legacy_ids
WITH c, r1, m, collect(DISTINCT s.id) AS story_ids
RETURN c.id AS via_id, c.name AS via, r1.kind AS relationship, m.name AS through, story_ids
ORDER BY via, via_id, relationship, through
"""

#: the subject's known connections with what they are to the subject ("roommate at nursing
#: school", "neighbour across the street"): a person the message describes instead of naming
DESCRIBED = f"""
MATCH (p:Person {{id: $person_id}})-[r:{SOCIAL}]-(c:Person)
RETURN DISTINCT c.id AS via_id, c.name AS via, r.kind AS relationship, r.detail AS detail
ORDER BY via_id, relationship
LIMIT $limit
"""

PERSON_MENTIONS = """
MATCH (c:Person)
WHERE c.id IN $ids
MATCH (s:Story)-[r:MENTIONS]->(c)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, c.name AS entity, r.kind AS relationship
ORDER BY story_id
LIMIT $limit
"""

ENTITY_FOCUSED = """
MATCH (e)
WHERE (e:Place OR e:Event OR e:Object) AND e.id IN $ids
MATCH (s:Story)-[r:TOOK_PLACE_AT|REFERENCES]->(e)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, e.name AS entity, r.kind AS relationship
ORDER BY story_id
LIMIT $limit
"""

SPATIAL = """
MATCH (place:Place)
WHERE place.legacy_id IN $legacy_ids
  AND (place.id IN $ids OR size([n IN $names WHERE toLower(place.name) CONTAINS n]) > 0)
OPTIONAL MATCH (s:Story)-[:TOOK_PLACE_AT]->(place)
WHERE s.legacy_id IN $legacy_ids
OPTIONAL MATCH (p:Person)-[:LIVED_IN|WORKED_AT]->(place)
RETURN place.name AS entity, place.id AS entity_id, collect(DISTINCT s.id) AS story_ids,
       collect(DISTINCT p.name) AS people
ORDER BY entity
LIMIT $limit
"""

#: `years` is a string of bar-delimited years ("|1962|1965|", `entity_sync.years_property`); `$years`
#: the keys of the asked range ("|1960|" .. "|1969|")
TEMPORAL = """
MATCH (s:Story)
WHERE s.legacy_id IN $legacy_ids AND size([y IN $years WHERE coalesce(s.years, '') CONTAINS y]) > 0
RETURN s.id AS story_id, 'TIME' AS relationship, NULL AS entity
LIMIT $limit
UNION
MATCH (e:Event)
WHERE e.legacy_id IN $legacy_ids AND size([y IN $years WHERE coalesce(e.years, '') CONTAINS y]) > 0
MATCH (s:Story)-[r:REFERENCES]->(e)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, r.kind AS relationship, e.name AS entity
LIMIT $limit
"""

CROSS_LEGACY = """
MATCH (l:Legacy {id: $legacy_id})-[k:LINKED_TO]-(linked:Legacy)
WHERE k.status = 'active'
MATCH (s:Story)-[:BELONGS_TO]->(linked)
OPTIONAL MATCH (s)-[m:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(x)
WHERE x.id IN $ids
WITH linked, s, count(m) AS matched
RETURN s.id AS story_id, linked.name AS via, matched
ORDER BY matched DESC, story_id
LIMIT $limit
"""

GENERAL = """
MATCH (p:Person {id: $person_id})-[r]-(c)
WHERE r.kind <> 'BELONGS_TO'
WITH c, r, CASE WHEN c:Story THEN 'Story' WHEN c:Person THEN 'Person' WHEN c:Place THEN 'Place'
              WHEN c:Event THEN 'Event' WHEN c:Object THEN 'Object' ELSE 'Other' END AS label
RETURN c.id AS node_id, label, coalesce(c.name, c.title) AS name, r.kind AS relationship
ORDER BY CASE label WHEN 'Story' THEN 0 ELSE 1 END, node_id
LIMIT $limit
"""

#: the legacy's broadest stories (most distinct people, places, events and objects): what an
#: open question ("tell me about her", "sum up her life") is best answered from
OVERVIEW = """
MATCH (l:Legacy)<-[:BELONGS_TO]-(s:Story)
WHERE l.id IN $legacy_ids
MATCH (s)-[r:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(e)
WITH s, count(DISTINCT e) AS breadth
RETURN s.id AS story_id, breadth
ORDER BY breadth DESC, story_id
LIMIT $limit
"""

#: from the named persons (by the id index) over edges in either direction, oriented back with
#: startNode/endNode: an OR over both ends of every edge scanned all persons (69 -> 7 ms at 10k).
#: A derived fact is one edge per supporting story (`story_id`); they are grouped back into
#: one fact with the list of its stories (a known relationship has none).
FACTS = f"""
MATCH (x:Person)
WHERE x.id IN $person_ids
MATCH (x)-[r:{SOCIAL}|LIVED_IN|WORKED_AT|PARTICIPATED_IN|OWNED]-(y)
WITH DISTINCT r, startNode(r) AS a, endNode(r) AS b
WITH a, b, r.kind AS predicate, r.detail AS detail, r.since AS since, r.until AS until, r.known AS known,
     collect(r.story_id) AS story_ids
RETURN a.id AS subject_id, a.name AS subject, predicate, b.id AS object_id, b.name AS object,
       detail, since, until, story_ids, known, a.legacy_id AS subject_legacy, b.legacy_id AS object_legacy
ORDER BY CASE WHEN a.id = $subject_id OR b.id = $subject_id THEN 0 ELSE 1 END, predicate, object, object_id, subject_id
LIMIT $limit
"""

#: every template, by name (the integration tests run each one)
TEMPLATES: dict[str, str] = {
    "legacy_context": LEGACY_CONTEXT,
    "relational": RELATIONAL_1HOP,
    "relational_2hop": RELATIONAL_2HOP,
    "described": DESCRIBED,
    "person_mentions": PERSON_MENTIONS,
    "entity_focused": ENTITY_FOCUSED,
    "spatial": SPATIAL,
    "temporal": TEMPORAL,
    "cross_legacy": CROSS_LEGACY,
    "general": GENERAL,
    "overview": OVERVIEW,
    "facts": FACTS,
}

_DECADE_WORDS = {
    "twenties": 1920,
    "thirties": 1930,
    "forties": 1940,
    "fifties": 1950,
    "sixties": 1960,
    "seventies": 1970,
    "eighties": 1980,
    "nineties": 1990,
}


def year_range(period: str) -> tuple[int, int] | None:
    """'1962' -> (1962, 1962); '1970s' / 'the seventies' -> (1970, 1979); else None."""
    text = period.lower()
    if m := re.search(r"\b(1[89]\d|20\d)0s\b", text):
        start = int(m.group(1)) * 10
        return start, start + 9
    if m := re.search(r"\b'?(\d)0s\b", text):
        start = 1900 + int(m.group(1)) * 10
        return start, start + 9
    for word, start in _DECADE_WORDS.items():
        if word in text:
            return start, start + 9
    years = [int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", text)]
    if years:
        return min(years), max(years)
    return None


#: the most years one temporal query asks for (a longer range is cut at its start + this)
MAX_TEMPORAL_YEARS = 120


def year_keys(start: int, end: int) -> list[str]:
    """The `years` keys of a range: (1960, 1962) -> ["|1960|", "|1961|", "|1962|"]."""
    return [f"|{y}|" for y in range(start, min(end, start + MAX_TEMPORAL_YEARS - 1) + 1)]


#: stories an open question gets from the overview template
OVERVIEW_STORIES = 3

#: templates whose rows depend only on the graph around a person or legacy (seed 000's
#: "person neighbourhood"), cached per container for NeighbourhoodCache.ttl_s
NEIGHBOURHOOD_TEMPLATES = frozenset(
    {"legacy_context", "relational", "relational_2hop", "general", "facts", "described"}
)

_DESCRIPTION_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "with",
        "by",
        "as",
        "is",
        "was",
        "were",
        "be",
        "been",
        "are",
        "am",
        "it",
        "its",
        "he",
        "she",
        "him",
        "her",
        "his",
        "hers",
        "they",
        "them",
        "their",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "do",
        "did",
        "does",
        "not",
        "no",
        "yes",
        "so",
        "if",
        "then",
        "than",
        "since",
        "until",
        "about",
        "after",
        "before",
        "during",
        "into",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "all",
        "any",
        "some",
        "each",
        "every",
        "both",
        "few",
        "more",
        "most",
        "other",
        "such",
        "only",
        "own",
        "same",
        "too",
        "very",
        "can",
        "could",
        "would",
        "should",
        "will",
        "just",
        "also",
        "ever",
        "never",
        "still",
        "one",
        "two",
        "first",
        "last",
        "old",
        "new",
        "like",
        "ever",
        "get",
        "got",
        "have",
        "had",
        "has",
        "know",
        "knew",
        "tell",
        "told",
        "say",
        "said",
        "best",
        "good",
        "great",
        "little",
        "big",
        "whole",
        "dear",
        "late",
        "young",
        "younger",
        "older",
        "elder",
    ]
)
#: the words a relationship type is described by, besides its detail (already word keys)
_KIND_WORDS: dict[str, frozenset[str]] = {
    "FRIENDS_WITH": frozenset({"friend", "friendship", "pal", "buddy"}),
    "WORKED_WITH": frozenset({"colleague", "coworker", "workmate", "worked", "work", "job"}),
    "KNEW": frozenset({"acquaintance"}),
}
#: a described person is a noun after a determiner or possessive ("the neighbour", "her
#: roommate", "one of Nell's old nurses"), with at most one word between them
_DESCRIPTION = re.compile(
    r"\b(?:the|her|his|my|their|your|our|whose|[A-Za-z]+['’]s?)\s+(?:[a-z]+\s+)?([a-z][a-z-]+)",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A rough word key: lower case, possessive and plural dropped, British -our as -or."""
    word = word.lower().replace("’", "'").removesuffix("'s").strip("'")
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    if word.endswith("our") and len(word) > 5:
        word = word[:-3] + "or"
    return word


def description_words(text: str) -> set[str]:
    return {
        _stem(w) for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", text) if w.lower() not in _DESCRIPTION_STOPWORDS
    } - {""}


def described_nouns(text: str) -> set[str]:
    """Nouns the message uses to describe someone: "the friend who", "her old roommate"."""
    out = set()
    for m in _DESCRIPTION.finditer(text):
        for word in m.group(0).split()[1:]:
            if word.lower() not in _DESCRIPTION_STOPWORDS:
                out.add(_stem(word))
    return out


def described_people(query: str, rows: Sequence[dict[str, Any]], exclude: Iterable[str] = ()) -> list[str]:
    """Ids of the connections whose relationship detail (or type) shares the most words with
    the message, at least one: "her roommate at Hollis" -> the one described as "roommate at
    Hollis Memorial". People the message names are left out (`exclude`)."""
    wanted = described_nouns(query)
    skip = set(exclude)
    scores: dict[str, int] = {}
    for row in rows:
        person = str(row.get("via_id") or "")
        if not person or person in skip:
            continue
        words = description_words(str(row.get("detail") or "")) | _KIND_WORDS.get(
            str(row.get("relationship") or ""), frozenset()
        )
        overlap = len(wanted & words)
        scores[person] = max(scores.get(person, 0), overlap)
    best = max(scores.values(), default=0)
    return sorted(p for p, n in scores.items() if n == best) if best else []


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
        return template + "|" + json.dumps(params, sort_keys=True, default=str)

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
    graph: GraphStore
    deadline: float
    clock: Callable[[], float]
    cache: NeighbourhoodCache | None = None
    stats: list[TraversalStat] = field(default_factory=list)
    status: BranchStatus = "ok"

    def query(self, template: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        cacheable = self.cache is not None and template in NEIGHBOURHOOD_TEMPLATES
        if cacheable and self.cache is not None and (cached := self.cache.get(template, params)) is not None:
            self.stats.append(TraversalStat(template=template, results=len(cached), latency_ms=0.0))
            return cached
        if self.clock() >= self.deadline:
            self.status = "timeout"
            return []
        started = self.clock()
        rows = self.graph.run(TEMPLATES[template], params)
        if cacheable and self.cache is not None:
            self.cache.put(template, params, rows)
        self.stats.append(
            TraversalStat(
                template=template, results=len(rows), latency_ms=round((self.clock() - started) * 1000, 2)
            )
        )
        return rows


def _ids(intent: QueryIntent, labels: Iterable[str]) -> list[str]:
    wanted = set(labels)
    return sorted({m.node_id for m in intent.matches if m.label in wanted})


def traverse(
    graph: GraphStore,
    request: ContextRequest,
    intent: QueryIntent,
    config: TraversalConfig,
    *,
    budget_ms: float = 300.0,
    clock: Callable[[], float] = time.monotonic,
    cache: NeighbourhoodCache | None = None,
) -> GraphResults:
    """Run the templates the intent calls for; stop issuing queries once the budget is spent."""
    started = clock()
    run = _Run(graph=graph, deadline=started + budget_ms / 1000.0, clock=clock, cache=cache)
    limit = config.max_graph_results
    legacy_id = str(request.legacy_id)
    ctx_rows = run.query("legacy_context", {"legacy_id": legacy_id})
    if not ctx_rows or ctx_rows[0].get("subject_id") is None:
        return GraphResults(traversals=tuple(run.stats), status=run.status)
    subject_id = str(ctx_rows[0]["subject_id"])
    linked = [str(x) for x in ctx_rows[0].get("linked_ids") or [] if x]
    cross = config.include_cross_legacy or intent.intent is Intent.CROSS_LEGACY
    legacy_ids = [legacy_id, *(linked if cross else [])]
    base = {"legacy_ids": legacy_ids, "limit": limit}

    hits: list[GraphHit] = []
    person_ids = _ids(intent, ["Person"])
    entity_ids = _ids(intent, ["Place", "Event", "Object"])

    def add(
        story_ids: Sequence[Any],
        template: str,
        hops: int,
        relationship: str | None,
        entity: str | None = None,
        via: str | None = None,
        entity_match: bool = False,
    ) -> None:
        for sid in story_ids:
            if sid:
                hits.append(
                    GraphHit(
                        story_id=sid,
                        template=template,
                        hops=hops,
                        relationship=relationship,
                        entity=entity,
                        via=via,
                        entity_match=entity_match,
                    )
                )

    # entities named in the message: always looked up, they carry the entity bonus
    if person_ids:
        for row in run.query("person_mentions", {**base, "ids": person_ids}):
            add([row["story_id"]], "person_mentions", 1, "MENTIONS", row["entity"], entity_match=True)
    if entity_ids:
        for row in run.query("entity_focused", {**base, "ids": entity_ids}):
            add([row["story_id"]], "entity_focused", 1, row["relationship"], row["entity"], entity_match=True)

    # connections the message describes rather than names ("her roommate", "the neighbour")
    described: list[str] = []
    if intent.intent is not Intent.CROSS_LEGACY:
        rows = run.query("described", {"person_id": subject_id, "limit": 4 * limit})
        described = described_people(request.query, rows, exclude=[subject_id, *person_ids])
        if described:
            for row in run.query("person_mentions", {**base, "ids": described}):
                add([row["story_id"]], "described", 1, "MENTIONS", row["entity"], entity_match=True)

    kind = intent.intent
    if kind is Intent.RELATIONAL:
        # the people named, else the people described: a relational question about someone
        # is not a question about every connection
        targets = [p for p in person_ids if p != subject_id] or described
        params = {**base, "person_id": subject_id, "target_ids": targets}
        for row in run.query("relational", params):
            add(
                row["story_ids"],
                "relational",
                1,
                row["relationship"],
                via=row["via"],
                entity_match=bool(targets),
            )
        if config.max_hops >= 2:
            for row in run.query("relational_2hop", params):
                add(
                    row["story_ids"],
                    "relational_2hop",
                    2,
                    row["relationship"],
                    via=row["via"],
                    entity_match=bool(targets),
                )
    elif kind is Intent.TEMPORAL:
        ranges = [r for r in (year_range(p) for p in intent.entities.time_periods) if r]
        for start, end in ranges[:3]:
            for row in run.query("temporal", {**base, "years": year_keys(start, end)}):
                add([row["story_id"]], "temporal", 1, row["relationship"], row.get("entity"))
    elif kind is Intent.SPATIAL:
        names = [n.lower() for n in intent.entities.places if len(n) >= 3]
        place_ids = _ids(intent, ["Place"])
        if names or place_ids:
            for row in run.query("spatial", {**base, "ids": place_ids, "names": names}):
                place = str(row["entity"] or "")
                if row["entity_id"] in place_ids or place.lower() in names:
                    add(row["story_ids"], "spatial", 1, "TOOK_PLACE_AT", place, entity_match=True)
                else:
                    # a place whose name only contains a word of the message ("lake" in
                    # "Tamarack Lake") is weaker evidence, and its path is that word's
                    term = next((n for n in names if n in place.lower()), place)
                    add(row["story_ids"], "spatial", 1, "TOOK_PLACE_AT", term, via=place)
    elif kind is Intent.CROSS_LEGACY and cross:
        for row in run.query(
            "cross_legacy", {**base, "legacy_id": legacy_id, "ids": person_ids + entity_ids}
        ):
            add(
                [row["story_id"]],
                "cross_legacy",
                1,
                "LINKED_TO",
                via=row["via"],
                entity_match=bool(row["matched"]),
            )
    elif kind is Intent.GENERAL or not hits:
        for row in run.query("general", {**base, "person_id": subject_id}):
            if row["label"] == "Story":
                add([row["node_id"]], "general", 1, row["relationship"])
    if kind is Intent.GENERAL:
        for row in run.query("overview", {**base, "limit": OVERVIEW_STORIES}):
            add([row["story_id"]], "overview", 1, None)

    facts_rows = run.query(
        "facts",
        {"person_ids": sorted({subject_id, *person_ids}), "subject_id": subject_id, "limit": 2 * limit},
    )
    facts = tuple(
        GraphFact(
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
        for r in facts_rows
        if r.get("subject") and r.get("object")
    )
    return GraphResults(
        hits=tuple(_dedupe(hits)[: limit * 2]),
        facts=facts,
        traversals=tuple(run.stats),
        status=run.status,
        latency_ms=round((clock() - started) * 1000, 2),
    )


def _dedupe(hits: list[GraphHit]) -> list[GraphHit]:
    """One hit per (story, template, relationship), keeping the first (best-ordered)."""
    seen: set[tuple[str, str, str | None]] = set()
    out = []
    for hit in hits:
        key = (str(hit.story_id), hit.template, hit.relationship)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out
