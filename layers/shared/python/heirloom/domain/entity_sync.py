"""Entity graph sync: one story's extracted entities into the graph, with provenance.

Every entity node and every edge written for a story carries the story's id in `story_ids`.
Re-syncing a story first withdraws exactly its own contributions (removing its id, deleting
what no other story supports), then writes the new ones; deleting a story does the first half.
Unresolved people stay on the Story node as `unresolved_people`, never as orphan Person nodes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from heirloom.contracts.extraction import ExtractedEntities
from heirloom.contracts.records import Story
from heirloom.domain.extraction import name_key
from heirloom.ports import GraphStore

ENTITY_NAMESPACE = uuid.UUID("6f1c7a52-3a4e-4c0e-9d7e-2a9f3f4b8c11")
#: story -> entity edge type, by entity label
STORY_EDGE = {"Place": "TOOK_PLACE_AT", "Event": "REFERENCES", "Object": "REFERENCES"}
#: the entity label each person -> entity predicate points at
PREDICATE_TARGET = {"PARTICIPATED_IN": "Event", "LIVED_IN": "Place", "WORKED_AT": "Place", "OWNED": "Object"}

# FalkorDB silently skips a SET followed by `WITH ... WHERE ... DELETE` in one query, so the
# withdrawal runs as separate statements (each valid openCypher on Neptune too).
UNLINK_PERSON_EDGES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
WITH DISTINCT e
MATCH (p:Person)-[r]->(e)
WHERE $sid IN coalesce(r.story_ids, [])
SET r.story_ids = [x IN r.story_ids WHERE x <> $sid]
"""

DELETE_UNSUPPORTED_PERSON_EDGES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
WITH DISTINCT e
MATCH (p:Person)-[r]->(e)
WHERE size(coalesce(r.story_ids, ['unknown'])) = 0
DELETE r
"""

# The story's edges to its entities are deleted last: they are how a withdrawal finds what the
# story contributed, so a withdrawal interrupted at any statement is completed by the next one.
UNLINK_ENTITIES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
SET e.story_ids = [x IN coalesce(e.story_ids, []) WHERE x <> $sid]
RETURN DISTINCT e.id AS id, CASE WHEN e:Place THEN 'Place' WHEN e:Event THEN 'Event' ELSE 'Object' END AS label
"""

DELETE_UNSUPPORTED_ENTITIES = """
MATCH (e:{label})
WHERE e.id IN $ids AND size(coalesce(e.story_ids, [])) = 0
DETACH DELETE e
"""

DELETE_ENTITY_EDGES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
DELETE m
"""

WITHDRAW_MENTIONS = """
MATCH (s:Story {id: $sid})-[m:MENTIONS]->(:Person)
DELETE m
"""

UPSERT_ENTITIES = """
MATCH (s:Story {{id: $sid}})
UNWIND $entities AS ent
MERGE (e:{label} {{id: ent.id}})
SET e.name = ent.name, e.legacy_id = ent.legacy_id, e.type = ent.type, e.date = ent.date, e.years = ent.years,
    e.story_ids = CASE WHEN $sid IN coalesce(e.story_ids, []) THEN e.story_ids
                       ELSE coalesce(e.story_ids, []) + [$sid] END
MERGE (s)-[r:{edge}]->(e)
SET r.kind = '{edge}', r.story_ids = [$sid]
"""

UPSERT_MENTIONS = """
MATCH (s:Story {id: $sid})
UNWIND $person_ids AS pid
MATCH (p:Person {id: pid})
MERGE (s)-[r:MENTIONS]->(p)
SET r.kind = 'MENTIONS', r.story_ids = [$sid]
"""

UPSERT_PERSON_EDGES = """
UNWIND $edges AS edge
MATCH (p:Person {{id: edge.person_id}})
MATCH (e:{label} {{id: edge.entity_id}})
MERGE (p)-[r:{predicate}]->(e)
SET r.kind = '{predicate}',
    r.story_ids = CASE WHEN $sid IN coalesce(r.story_ids, []) THEN r.story_ids
                       ELSE coalesce(r.story_ids, []) + [$sid] END
"""

SET_STORY_FACTS = """
MATCH (s:Story {id: $sid})
SET s.years = $years, s.periods = $periods, s.unresolved_people = $unresolved, s.extractor_version = $version
"""


def entity_id(legacy_id: str, label: str, name: str) -> str:
    return str(uuid.uuid5(ENTITY_NAMESPACE, f"{legacy_id}|{label}|{name_key(name)}"))


def years_of(periods: Sequence[str], cap: int = 20) -> list[int]:
    # imported here: the traversal module (templates, personas, context contracts) is not
    # otherwise needed by the ingestion functions
    from heirloom.domain.traversal import year_range

    years: set[int] = set()
    for period in periods:
        span = year_range(period)
        if span and span[1] - span[0] < cap:
            years.update(range(span[0], span[1] + 1))
    return sorted(years)


@dataclass
class SyncReport:
    entities: dict[str, int] = field(default_factory=dict)
    mentions: int = 0
    person_edges: int = 0
    unresolved: list[str] = field(default_factory=list)


def withdraw_story(graph: GraphStore, story_id: str) -> None:
    """Remove every graph contribution of `story_id` (its node stays)."""
    params = {"sid": story_id}
    graph.run(UNLINK_PERSON_EDGES, params)
    graph.run(DELETE_UNSUPPORTED_PERSON_EDGES, params)
    touched: dict[str, list[str]] = {}
    for row in graph.run(UNLINK_ENTITIES, params):
        touched.setdefault(str(row["label"]), []).append(str(row["id"]))
    for label, ids in sorted(touched.items()):
        graph.run(DELETE_UNSUPPORTED_ENTITIES.format(label=label), {"ids": ids})
    graph.run(DELETE_ENTITY_EDGES, params)
    graph.run(WITHDRAW_MENTIONS, params)


def sync_story_entities(
    graph: GraphStore,
    story: Story,
    entities: ExtractedEntities,
    resolved: dict[str, str],
    unresolved: Sequence[str],
) -> SyncReport:
    """Replace `story`'s contributions with `entities`; `resolved` maps person mentions to ids."""
    plan = plan_story_entities(story, entities, resolved, unresolved)
    sid = plan.sid
    withdraw_story(graph, sid)
    report = SyncReport(unresolved=list(unresolved))
    for label, rows in plan.by_label.items():
        if rows:
            edge = STORY_EDGE[label]
            graph.run(UPSERT_ENTITIES.format(label=label, edge=edge), {"sid": sid, "entities": rows})
            report.entities[label] = len(rows)
    if plan.person_ids:
        graph.run(UPSERT_MENTIONS, {"sid": sid, "person_ids": plan.person_ids})
        report.mentions = len(plan.person_ids)
    for (predicate, label), edges in plan.person_edges.items():
        graph.run(UPSERT_PERSON_EDGES.format(predicate=predicate, label=label), {"sid": sid, "edges": edges})
        report.person_edges += len(edges)
    graph.run(SET_STORY_FACTS, {"sid": sid, **plan.facts})
    return report


@dataclass
class EntityPlan:
    """What one story contributes to the graph: entity rows by label, the persons it mentions,
    person -> entity edges by (predicate, label), and the facts set on its Story node."""

    sid: str
    by_label: dict[str, list[dict[str, Any]]]
    person_ids: list[str]
    person_edges: dict[tuple[str, str], list[dict[str, str]]]
    facts: dict[str, Any]


def plan_story_entities(
    story: Story, entities: ExtractedEntities, resolved: dict[str, str], unresolved: Sequence[str]
) -> EntityPlan:
    """The graph writes of `sync_story_entities` for `story`, as data (no I/O)."""
    legacy = str(story.legacy_id)
    by_label: dict[str, list[dict[str, Any]]] = {"Place": [], "Event": [], "Object": []}
    ids_by_name: dict[tuple[str, str], str] = {}
    for label, items in (
        ("Place", entities.places),
        ("Event", entities.events),
        ("Object", entities.objects),
    ):
        for item in items:
            eid = entity_id(legacy, label, item.name)
            date = getattr(item, "date", None) or ""
            ids_by_name[(label, name_key(item.name))] = eid
            by_label[label].append(
                {
                    "id": eid,
                    "name": item.name,
                    "legacy_id": legacy,
                    "type": item.type,
                    "date": date,
                    "years": years_of([date]) if date else [],
                }
            )
    grouped: dict[tuple[str, str], list[dict[str, str]]] = {}
    for rel in entities.relationships:
        target_label = PREDICATE_TARGET.get(rel.predicate)
        person = resolved.get(rel.subject)
        target = ids_by_name.get((target_label, name_key(rel.object))) if target_label else None
        if target_label and person and target:
            grouped.setdefault((rel.predicate, target_label), []).append(
                {"person_id": person, "entity_id": target}
            )
    periods = [t.period for t in entities.time_references]
    return EntityPlan(
        sid=str(story.id),
        by_label=by_label,
        person_ids=sorted(set(resolved.values())),
        person_edges=grouped,
        facts={
            "years": years_of(periods + [e.date or "" for e in entities.events]),
            "periods": periods,
            "unresolved": list(unresolved),
            "version": entities.extractor_version,
        },
    )
