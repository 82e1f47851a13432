"""The openCypher templates traversal runs, by name (logical labels and parameters only; list
comprehensions where Cypher has any()/all(), which Neptune's openCypher lacks; at most 2 hops).
The integration tests run each one against FalkorDB and the Neptune-protocol server.

A node whose label the caller does not know is anchored by one labelled, indexed match per label
(`ANCHOR_LABELS`), the branches joined by a top-level `UNION ALL` (Neptune's openCypher has no
`CALL {}`); an unlabelled `MATCH (x) WHERE x.id IN $ids` scans every node on FalkorDB (27 ms at
10k stories, against 0.6 ms). Each branch sorts and cuts as the whole query did; `finish`
re-applies the order, DISTINCT and the limit to the branches' rows (`Merge`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

SOCIAL = "FAMILY_OF|KNEW|WORKED_WITH|FRIENDS_WITH"

#: the labels a named node may have, in the order of their `UNION ALL` branches
ANCHOR_LABELS = ("Person", "Place", "Event", "Object")


def _any_label(var: str, labels: Sequence[str]) -> str:
    return "(" + " OR ".join(f"{var}:{label}" for label in labels) + ")"


def per_label(branch: str, labels: Sequence[str]) -> str:
    """`branch` once per label, joined by UNION ALL: `{label}` is the branch's label, `{first}`
    keeps out an `x` an earlier branch anchors (a node with two labels is anchored once), and
    `{earlier}` a `y` an earlier branch anchors (a fact between two named nodes is read once)."""
    parts = []
    for k, label in enumerate(labels):
        before = labels[:k]
        first = f" AND NOT {_any_label('x', before)}" if before else ""
        earlier = f" AND NOT (coalesce(y.id IN $ids, false) AND {_any_label('y', before)})" if before else ""
        parts.append(branch.format(label=label, first=first, earlier=earlier))
    return "UNION ALL".join(parts)


LEGACY_CONTEXT = """
MATCH (l:Legacy {id: $legacy_id})
OPTIONAL MATCH (l)-[k:LINKED_TO]-(o:Legacy)
WITH l, k, o
RETURN l.subject_person_id AS subject_id, l.name AS name,
       collect(DISTINCT CASE WHEN k.status = 'active' THEN o.id ELSE NULL END) AS linked_ids,
       collect(DISTINCT CASE WHEN k.status = 'active' THEN o.subject_person_id ELSE NULL END)
         AS linked_subject_ids
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

#: the WITH keeps FalkorDB's planner on the Person id index (it scanned every Story: 4 -> 1 ms);
#: the stories titled with the person first, so the limit never cuts them (topic evidence)
PERSON_MENTIONS = """
MATCH (c:Person)
WHERE c.id IN $ids
WITH c
MATCH (s:Story)-[r:MENTIONS]->(c)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, c.id AS person_id, c.name AS entity, r.kind AS relationship,
       coalesce(r.in_title, false) AS topic
ORDER BY topic DESC, story_id
LIMIT $limit
"""

#: per label (`per_label`); the stories titled with the entity first (the limit never cuts
#: them), ties on the story broken by the remaining columns
ENTITY_FOCUSED = per_label(
    """
MATCH (x:{label})
WHERE x.id IN $ids{first}
WITH x
MATCH (s:Story)-[r:TOOK_PLACE_AT|REFERENCES]->(x)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, coalesce(r.name, x.name) AS entity, x.id AS entity_id, r.kind AS relationship,
       coalesce(r.in_title, false) AS topic
ORDER BY topic DESC, story_id, entity, relationship
LIMIT $limit
""",
    ANCHOR_LABELS[1:],
)

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
#: the keys of the asked range ("|1960|" .. "|1969|"). The first part tests the years of the
#: legacies' stories only (in one WHERE FalkorDB tested them on every story it scanned: 15 -> 5
#: ms at 10k); the comprehension is a WITH column, as FalkorDB answers none when a WHERE after a
#: WITH holds one over a parameter
TEMPORAL = """
MATCH (s:Story)
WHERE s.legacy_id IN $legacy_ids
WITH s, [y IN $years WHERE coalesce(s.years, '') CONTAINS y] AS hits
WHERE size(hits) > 0
RETURN s.id AS story_id, 'TIME' AS relationship, NULL AS entity
LIMIT $limit
UNION
MATCH (e:Event)
WHERE e.legacy_id IN $legacy_ids AND size([y IN $years WHERE coalesce(e.years, '') CONTAINS y]) > 0
MATCH (s:Story)-[r:REFERENCES]->(e)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, r.kind AS relationship, coalesce(r.name, e.name) AS entity
LIMIT $limit
"""

#: stories told within a date window the question names (a call, a diary entry, a letter:
#: `created_at` as written, its local date first, compared as ISO text; $start <= date < $end)
TOLD_IN = """
MATCH (s:Story)
WHERE s.legacy_id IN $legacy_ids AND s.created_at >= $start AND s.created_at < $end
RETURN s.id AS story_id, 'TOLD_IN' AS relationship, NULL AS entity
ORDER BY story_id
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
WHERE r.kind <> 'BELONGS_TO' AND r.kind <> 'REMEMBERS'
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
#: one fact with the list of its stories. Known relationships are left out: AccessFilter reads
#: them from the store (decision 0030). An edge a merge moved
#: carries the name its story used (`name`): the fact reads with that name, grouped apart, so a
#: user never sees a merged entity under a name only a story they may not read gives it.
FACTS = f"""
MATCH (x:Person)
WHERE x.id IN $person_ids
MATCH (x)-[r:{SOCIAL}|LIVED_IN|WORKED_AT|PARTICIPATED_IN|OWNED]-(y)
WHERE r.known IS NULL OR r.known = false
WITH DISTINCT r, startNode(r) AS a, endNode(r) AS b
WITH a, b, r.kind AS predicate, r.detail AS detail, r.since AS since, r.until AS until, r.known AS known,
     coalesce(r.name, b.name) AS object, collect(r.story_id) AS story_ids
RETURN a.id AS subject_id, a.name AS subject, predicate, b.id AS object_id, object,
       detail, since, until, story_ids, known, a.legacy_id AS subject_legacy, b.legacy_id AS object_legacy
ORDER BY CASE WHEN a.id = $subject_id OR b.id = $subject_id THEN 0 ELSE 1 END, predicate, object, object_id, subject_id
LIMIT $limit
"""

#: stories whose current facts (docs/decisions/0012) touch the named persons or things: "who gave
#: her the ring", "the friend he worked with"; `linked` says the fact joins two named nodes
#: per label (`per_label`); ties are broken by the remaining columns
STORY_FACTS = per_label(
    """
MATCH (x:{label})
WHERE x.id IN $ids{first}
MATCH (x)-[f:FACT]-(y)
WHERE f.valid_to = '' AND f.legacy_id IN $legacy_ids
RETURN DISTINCT f.story_id AS story_id, f.relation AS relationship, x.id AS entity_id, x.name AS entity,
       y.name AS via, y.id IN $ids AS linked
ORDER BY linked DESC, story_id, relationship, via, entity_id, entity
LIMIT $limit
""",
    ANCHOR_LABELS,
)

#: persons the named ones have current facts with, and the stories that mention them (the
#: second hop of a multi-hop question: "the man she married ... his brother"); `source_id` is
#: the story that told the fact, which AccessFilter checks like the story reached
FACT_NEIGHBOURS = """
MATCH (x:Person)
WHERE x.id IN $ids
MATCH (x)-[f:FACT]-(y:Person)
WHERE f.valid_to = '' AND f.legacy_id IN $legacy_ids AND NOT y.id IN $ids
WITH DISTINCT y, f.relation AS relationship, f.story_id AS source_id
ORDER BY y.name, y.id, relationship, source_id
LIMIT $limit
MATCH (s:Story)-[:MENTIONS]->(y)
WHERE s.legacy_id IN $legacy_ids
RETURN s.id AS story_id, relationship, y.name AS via, source_id
ORDER BY story_id, relationship, source_id
LIMIT $limit
"""

#: the current facts of the named persons and things, each with its sentence and its story (for
#: the known-connections block; the access filter keeps only those whose story the user may read)
#: per label (`per_label`): a fact between two named nodes is read by the branch of the first
#: one's label only (`{earlier}`: the other end is no earlier branch's anchor)
FACT_SENTENCES = per_label(
    """
MATCH (x:{label})
WHERE x.id IN $ids{first}
MATCH (x)-[f:FACT]-(y)
WHERE f.valid_to = '' AND f.legacy_id IN $legacy_ids{earlier}
WITH DISTINCT f, startNode(f) AS a, endNode(f) AS b
MATCH (s:Story {{id: f.story_id}})
RETURN a.id AS subject_id, a.name AS subject, f.relation AS predicate, b.id AS object_id,
       CASE WHEN b:Person THEN b.name ELSE coalesce(f.name, b.name) END AS object, f.verb AS verb,
       f.sentence AS sentence, f.story_id AS story_id, s.title AS title, f.conflicting AS conflicting,
       f.narrator AS narrator, f.years AS years, f.negated AS negated,
       a.legacy_id AS subject_legacy, b.legacy_id AS object_legacy
ORDER BY CASE WHEN a.id = $subject_id OR b.id = $subject_id THEN 0 ELSE 1 END, predicate, object, story_id,
         subject_id, object_id, sentence
LIMIT $limit
""",
    ANCHOR_LABELS,
)


#: bridge entities (docs/decisions/0022): the persons, places, events and objects the stories
#: the traversal reached (`$seed_ids`) mention, other than those the question names (`$ids`),
#: that few stories mention (at most `$max_reach`, the seed included), with those stories; one
#: row per (seed, entity), with the seed's edge to it; the name is the one the seed story uses
BRIDGE = """
MATCH (a:Story)
WHERE a.id IN $seed_ids
MATCH (a)-[ra:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(e)
WHERE NOT e.id IN $ids
WITH DISTINCT a, e, ra.kind AS relationship,
     CASE WHEN e:Person THEN e.name ELSE coalesce(ra.name, e.name) END AS entity
MATCH (b:Story)-[:MENTIONS|TOOK_PLACE_AT|REFERENCES]->(e)
WHERE b.legacy_id IN $legacy_ids
WITH a, e, relationship, entity, collect(DISTINCT b.id) AS story_ids
WHERE size(story_ids) > 1 AND size(story_ids) <= $max_reach
RETURN a.id AS source_id, e.id AS entity_id, entity, relationship, story_ids
ORDER BY source_id, entity_id
LIMIT $limit
"""


#: ambient memory: the facts about the places, events and objects the message names (persons'
#: come from FACTS), each entity by its label's id index, grouped per fact like FACTS
def _ambient() -> str:
    part = """
MATCH (e:{label})
WHERE e.id IN $node_ids
MATCH (a:Person)-[r:{types}]->(e)
WITH a, e, r.kind AS predicate, r.detail AS detail, r.since AS since, r.until AS until, r.known AS known,
     coalesce(r.name, e.name) AS object, collect(r.story_id) AS story_ids
RETURN a.id AS subject_id, a.name AS subject, predicate, e.id AS object_id, object,
       detail, since, until, story_ids, known, a.legacy_id AS subject_legacy, e.legacy_id AS object_legacy
ORDER BY predicate, object, object_id, subject_id
LIMIT $limit
"""
    labels = (("Place", "LIVED_IN|WORKED_AT"), ("Event", "PARTICIPATED_IN"), ("Object", "OWNED"))
    return "UNION".join(part.format(label=label, types=types) for label, types in labels)


AMBIENT = _ambient()

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
    "told_in": TOLD_IN,
    "cross_legacy": CROSS_LEGACY,
    "general": GENERAL,
    "overview": OVERVIEW,
    "facts": FACTS,
    "story_facts": STORY_FACTS,
    "fact_neighbours": FACT_NEIGHBOURS,
    "fact_sentences": FACT_SENTENCES,
    "ambient": AMBIENT,
    "bridge": BRIDGE,
}

#: an ORDER BY item: a returned column, or a function of the row and the parameters
OrderKey = str | Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Merge:
    """How the rows of a per-label union become the rows of one query: its ORDER BY (each item
    with `True` for DESC), its DISTINCT, and `LIMIT $limit`."""

    order: tuple[tuple[OrderKey, bool], ...]
    distinct: bool = False

    def apply(self, rows: list[dict[str, Any]], params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Each branch is sorted and cut already: the rows in one order and cut (a stable sort
        keeps a tie in branch order), duplicates first dropped under DISTINCT."""
        if self.distinct:
            seen: set[str] = set()
            unique = []
            for row in rows:
                if (key := repr(sorted(row.items()))) not in seen:
                    seen.add(key)
                    unique.append(row)
            rows = unique
        for item, descending in reversed(self.order):  # stable: each pass keeps the later items' order
            rows = sorted(rows, key=partial(_sort_key, item, params), reverse=descending)
        return rows[: int(params["limit"])]


def _subject_first(row: Mapping[str, Any], params: Mapping[str, Any]) -> int:
    """`CASE WHEN a.id = $subject_id OR b.id = $subject_id THEN 0 ELSE 1 END`"""
    subject = params.get("subject_id")
    return 0 if subject is not None and subject in (row["subject_id"], row["object_id"]) else 1


def ascending(*columns: str) -> tuple[tuple[OrderKey, bool], ...]:
    return tuple((column, False) for column in columns)


#: the per-label templates, by name
MERGED: dict[str, Merge] = {
    "entity_focused": Merge((("topic", True), *ascending("story_id", "entity", "relationship"))),
    "story_facts": Merge(
        (("linked", True), *ascending("story_id", "relationship", "via", "entity_id", "entity")),
        distinct=True,
    ),
    "fact_sentences": Merge(
        (
            (_subject_first, False),
            *ascending("predicate", "object", "story_id", "subject_id", "object_id", "sentence"),
        )
    ),
}


def _orderable(value: Any) -> tuple[int, Any]:
    """openCypher's ascending order: strings, then booleans, then numbers, null last."""
    if value is None:
        return (3, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (0, value)
    return (-1, repr(value))


def _sort_key(key: OrderKey, params: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[int, Any]:
    return _orderable(key(row, params) if callable(key) else row[key])


def finish(name: str, rows: list[dict[str, Any]], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A template's rows as one query gives them (a per-label union's merged, others as they are)."""
    merge = MERGED.get(name)
    return rows if merge is None else merge.apply(rows, params)
