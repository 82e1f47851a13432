"""Entity graph sync: one story's extracted entities into the graph, with provenance as edges.

Neptune's openCypher has no list or map property values (AWS docs: "openCypher data model"), so
provenance is graph-native (docs/decisions/0007): a Place/Event/Object exists while at least one
Story points at it (TOOK_PLACE_AT/REFERENCES), and a person -> entity fact is one edge per
supporting story, carrying that story's id in the single-valued `story_id`. Re-syncing a story
first withdraws exactly its own edges (deleting the entities no other story points at), then
writes the new ones; deleting a story does the first half. Unresolved people stay on the Story
node as one display string `unresolved_people`, never as orphan Person nodes.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heirloom.contracts.extraction import ExtractedEntities, NamedThing
from heirloom.contracts.records import Story
from heirloom.domain.fact_resolution import FactEdge, FactState, resolve_edges
from heirloom.domain.graph_schema import DISPLAY_SEPARATOR
from heirloom.domain.names import name_key, one_of_many
from heirloom.ports import GraphStore

ENTITY_NAMESPACE = uuid.UUID("6f1c7a52-3a4e-4c0e-9d7e-2a9f3f4b8c11")
#: story -> entity edge type, by entity label
STORY_EDGE = {"Place": "TOOK_PLACE_AT", "Event": "REFERENCES", "Object": "REFERENCES"}
#: the entity label each person -> entity predicate points at
PREDICATE_TARGET = {"PARTICIPATED_IN": "Event", "LIVED_IN": "Place", "WORKED_AT": "Place", "OWNED": "Object"}

# Withdrawal runs as separate statements, each idempotent and valid openCypher on Neptune, in
# an order that an interruption at any statement leaves completable by the next withdrawal: the
# story's edges to its entities are deleted last, as they are how it finds what it contributed.
DELETE_PERSON_EDGES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
WITH DISTINCT e
MATCH (p:Person)-[r]->(e)
WHERE r.story_id = $sid
DELETE r
"""

#: entities no other story points at (their remaining person edges go with them)
DELETE_UNSUPPORTED_ENTITIES = """
MATCH (s:Story {id: $sid})-[m]->(e)
WHERE e:Place OR e:Event OR e:Object
WITH DISTINCT e
OPTIONAL MATCH (o:Story)-[k]->(e)
WHERE o.id <> $sid
WITH e, count(k) AS others
WHERE others = 0
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
SET e.name = ent.name, e.legacy_id = ent.legacy_id, e.type = ent.type, e.date = ent.date, e.years = ent.years
MERGE (s)-[r:{edge}]->(e)
SET r.kind = '{edge}', r.in_title = ent.in_title
"""

#: entities a story names by a name an admin merged into another entity (`redirects`): the
#: story's edge goes to the survivor, carrying the name the story used; the survivor keeps its
#: own properties (set only if it has to be created, e.g. while the graph is rebuilt)
UPSERT_REDIRECTED = """
MATCH (s:Story {{id: $sid}})
UNWIND $entities AS ent
MERGE (e:{label} {{id: ent.id}})
ON CREATE SET e.name = ent.name, e.legacy_id = ent.legacy_id, e.type = ent.type, e.date = ent.date, e.years = ent.years
MERGE (s)-[r:{edge}]->(e)
SET r.kind = '{edge}', r.name = ent.name, r.in_title = ent.in_title
"""

UPSERT_MENTIONS = """
MATCH (s:Story {id: $sid})
UNWIND $person_ids AS pid
MATCH (p:Person {id: pid})
MERGE (s)-[r:MENTIONS]->(p)
SET r.kind = 'MENTIONS', r.in_title = pid IN $title_ids
"""

#: one edge per (person, predicate, entity, supporting story)
UPSERT_PERSON_EDGES = """
UNWIND $edges AS edge
MATCH (p:Person {{id: edge.person_id}})
MATCH (e:{label} {{id: edge.entity_id}})
MERGE (p)-[r:{predicate} {{story_id: $sid}}]->(e)
SET r.kind = '{predicate}'
"""
#: the same to a merged entity's survivor, with the name the story used
UPSERT_NAMED_PERSON_EDGES = """
UNWIND $edges AS edge
MATCH (p:Person {{id: edge.person_id}})
MATCH (e:{label} {{id: edge.entity_id}})
MERGE (p)-[r:{predicate} {{story_id: $sid}}]->(e)
SET r.kind = '{predicate}', r.name = edge.name
"""

#: fact edges (docs/decisions/0012): person -> entity, one per telling, scalar properties only;
#: a new telling starts current, `resolve_facts` then sets its state
UPSERT_FACTS = """
UNWIND $facts AS f
MATCH (a:Person {{id: f.source_id}})
MATCH (b:{label} {{id: f.target_id}})
MERGE (a)-[r:FACT {{fact_id: f.fact_id}}]->(b)
SET r.kind = 'FACT', r.relation = f.relation, r.verb = f.verb, r.sentence = f.sentence,
    r.story_id = $sid, r.legacy_id = $legacy_id, r.narrator = $narrator, r.told_at = $told_at,
    r.confidence = f.confidence, r.negated = f.negated, r.years = f.years, r.name = f.name,
    r.valid_to = '', r.invalid_reason = '', r.superseded_by = '', r.conflicting = false
"""
#: a story's fact edges start at persons it mentions (withdrawn before its mentions are)
STORY_FACT_ENDS = """
MATCH (s:Story {id: $sid})-[m:MENTIONS]->(p:Person)-[f:FACT]->(b)
WHERE f.story_id = $sid
RETURN p.id AS source_id, b.id AS target_id
"""
DELETE_STORY_FACTS = """
MATCH (s:Story {id: $sid})-[m:MENTIONS]->(p:Person)-[f:FACT]->(b)
WHERE f.story_id = $sid
DELETE f
"""
#: every telling of a fact from these persons, with its resolution state
FACTS_FROM = """
MATCH (a:Person)-[f:FACT]->(b)
WHERE a.id IN $ids
RETURN f.fact_id AS fact_id, a.id AS source_id, b.id AS target_id, f.relation AS relation,
       f.story_id AS story_id, f.narrator AS narrator, f.told_at AS told_at, f.negated AS negated,
       f.years AS years, f.sentence AS sentence, f.valid_to AS valid_to,
       f.invalid_reason AS invalid_reason, f.superseded_by AS superseded_by, f.conflicting AS conflicting
"""
SET_FACT_STATE = """
UNWIND $rows AS row
MATCH (a:Person {id: row.source_id})-[f:FACT]->(b)
WHERE f.fact_id = row.fact_id
SET f.valid_to = row.valid_to, f.invalid_reason = row.invalid_reason,
    f.superseded_by = row.superseded_by, f.conflicting = row.conflicting
"""

SET_STORY_FACTS = """
MATCH (s:Story {id: $sid})
SET s.years = $years, s.periods = $periods, s.unresolved_people = $unresolved, s.extractor_version = $version
"""

#: what the graph holds for each story (its outgoing edges and years), for `graph_fingerprints`
STORY_PARTS = """
MATCH (s:Story)
OPTIONAL MATCH (s)-[m]->(x)
RETURN s.id AS sid, s.years AS years, collect(m.kind + '|' + x.id) AS parts
"""
#: the same, for some stories
STORY_PARTS_OF = """
MATCH (s:Story)
WHERE s.id IN $ids
OPTIONAL MATCH (s)-[m]->(x)
RETURN s.id AS sid, s.years AS years, collect(m.kind + '|' + x.id) AS parts
"""

#: the person -> entity facts, by the story each edge carries
PERSON_EDGE_PARTS = """
MATCH (p:Person)-[r:PARTICIPATED_IN|LIVED_IN|WORKED_AT|OWNED]->(e)
RETURN r.story_id AS sid, r.kind + '|' + p.id + '|' + e.id AS part
"""
PERSON_EDGE_PARTS_OF = """
MATCH (p:Person)-[r:PARTICIPATED_IN|LIVED_IN|WORKED_AT|OWNED]->(e)
WHERE r.story_id IN $ids
RETURN r.story_id AS sid, r.kind + '|' + p.id + '|' + e.id AS part
"""
#: the fact edges, by their story
FACT_PARTS = """
MATCH (p:Person)-[r:FACT]->(e)
RETURN r.story_id AS sid, 'FACT|' + r.fact_id AS part
"""
FACT_PARTS_OF = """
MATCH (p:Person)-[r:FACT]->(e)
WHERE r.story_id IN $ids
RETURN r.story_id AS sid, 'FACT|' + r.fact_id AS part
"""

_YEAR_IN_TEXT = re.compile(r"\b(1[6-9]\d\d|20\d\d)\b")


def entity_id(legacy_id: str, label: str, name: str) -> str:
    return str(uuid.uuid5(ENTITY_NAMESPACE, f"{legacy_id}|{label}|{name_key(name)}"))


#: "<owner>'s <thing>": the owner as written, then the thing
_OWNED = re.compile(r"^(?P<owner>.+?)['’]s (?P<thing>\S.*)$")


def owned_key(name: str, resolved: Mapping[str, str]) -> str | None:
    """The key of an entity named "<owner>'s <thing>" when the story resolved the owner to a
    person: their id and the thing. "Dad's piano" in the son's story and "Relio's piano" in the
    widow's are one piano when Dad and Relio are one person; the owner's words alone say less
    ("Grandma's house" is another house in a cousin's story). None: no such owner."""
    found = _OWNED.match(name)
    if found is None:
        return None
    by_key = {name_key(mention): pid for mention, pid in resolved.items()}
    person = by_key.get(name_key(found["owner"]))
    return f"{person}'s {found['thing']}" if person else None


def in_title(title: str, names: Iterable[str]) -> bool:
    """Does `title` name one of `names` as whole words, case-insensitively ("Frannie" in
    "Frannie", "Jim" in "Uncle Jim's Boat", not "Jim" in "Jimmy")? The story is then about that
    entity (topic evidence, docs/decisions/0024), not a side mention of it."""
    text = title.casefold()
    return any(
        re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text)
        for n in (name.casefold().strip() for name in names)
        if n
    )


def years_of(periods: Sequence[str], cap: int = 20) -> list[int]:
    # imported here: the traversal module (templates, personas, context contracts) is not
    # otherwise needed by the ingestion functions
    from heirloom.domain.year_keys import year_range

    years: set[int] = set()
    for period in periods:
        span = year_range(period)
        if span and span[1] - span[0] < cap:
            years.update(range(span[0], span[1] + 1))
    return sorted(years)


def years_property(years: Iterable[int]) -> str:
    """Years as one string property, each between bars ("|1962|1965|"): a story or event is
    in year Y when it CONTAINS "|Y|" (the temporal template), no list property needed."""
    ordered = sorted(set(years))
    return "|" + "|".join(str(y) for y in ordered) + "|" if ordered else ""


@dataclass
class SyncReport:
    entities: dict[str, int] = field(default_factory=dict)
    mentions: int = 0
    person_edges: int = 0
    facts: int = 0
    unresolved: list[str] = field(default_factory=list)
    #: what the graph now holds for the story (`fingerprint`), kept with its sync mark
    fingerprint: str = ""
    #: names of animals or works the story gave or stopped giving with this sync (decision 0040)
    names_changed: tuple[NamedThing, ...] = ()


def withdraw_story(graph: GraphStore, story_id: str, *, resolve: bool = True) -> set[str]:
    """Remove every graph contribution of `story_id` (its node stays); what its facts had
    superseded is current again (`resolve_facts`, unless the caller resolves later). Returns
    the persons whose facts it touched."""
    params = {"sid": story_id}
    touched = {str(v) for row in graph.run(STORY_FACT_ENDS, params) for v in row.values() if v}
    graph.run(DELETE_STORY_FACTS, params)
    if resolve and touched:
        resolve_facts(graph, touched)
    graph.run(DELETE_PERSON_EDGES, params)
    graph.run(DELETE_UNSUPPORTED_ENTITIES, params)
    graph.run(DELETE_ENTITY_EDGES, params)
    graph.run(WITHDRAW_MENTIONS, params)
    return touched


def resolve_facts(graph: GraphStore, person_ids: Iterable[str]) -> int:
    """Recompute the state of every fact told from `person_ids` (heirloom.domain.fact_resolution)
    and write the states that changed; returns how many changed."""
    ids = sorted(set(person_ids))
    if not ids:
        return 0
    rows = graph.run(FACTS_FROM, {"ids": ids})
    edges = [
        FactEdge(
            fact_id=str(r["fact_id"]),
            source_id=str(r["source_id"]),
            target_id=str(r["target_id"]),
            relation=str(r["relation"]),
            story_id=str(r["story_id"]),
            narrator=str(r.get("narrator") or ""),
            told_at=str(r.get("told_at") or ""),
            negated=bool(r.get("negated")),
            years=str(r.get("years") or ""),
            sentence=str(r.get("sentence") or ""),
        )
        for r in rows
    ]
    states = resolve_edges(edges)
    changed = []
    for r in rows:
        state = states[str(r["fact_id"])]
        have = FactState(
            valid_to=str(r.get("valid_to") or ""),
            invalid_reason=str(r.get("invalid_reason") or ""),
            superseded_by=str(r.get("superseded_by") or ""),
            conflicting=bool(r.get("conflicting")),
        )
        if have != state:
            changed.append({"fact_id": str(r["fact_id"]), "source_id": str(r["source_id"]), **vars(state)})
    if changed:
        graph.run(SET_FACT_STATE, {"rows": changed})
    return len(changed)


def sync_story_entities(
    graph: GraphStore,
    story: Story,
    entities: ExtractedEntities,
    resolved: dict[str, str],
    unresolved: Sequence[str],
    redirects: Mapping[str, str] | None = None,
) -> SyncReport:
    """Replace `story`'s contributions with `entities`; `resolved` maps person mentions to ids;
    `redirects` maps merged-away entity ids to their survivors (heirloom.domain.entity_merge)."""
    plan = plan_story_entities(story, entities, resolved, unresolved, redirects)
    sid = plan.sid
    touched = withdraw_story(graph, sid, resolve=False)
    report = SyncReport(unresolved=list(unresolved), fingerprint=plan.fingerprint(str(story.legacy_id)))
    for label, rows in plan.by_label.items():
        if rows:
            edge = STORY_EDGE[label]
            graph.run(UPSERT_ENTITIES.format(label=label, edge=edge), {"sid": sid, "entities": rows})
            report.entities[label] = len(rows)
    for label, rows in plan.redirected.items():
        if rows:
            query = UPSERT_REDIRECTED.format(label=label, edge=STORY_EDGE[label])
            graph.run(query, {"sid": sid, "entities": rows})
            report.entities[label] = report.entities.get(label, 0) + len(rows)
    if plan.person_ids:
        graph.run(
            UPSERT_MENTIONS, {"sid": sid, "person_ids": plan.person_ids, "title_ids": plan.title_person_ids}
        )
        report.mentions = len(plan.person_ids)
    for (predicate, label), edges in plan.person_edges.items():
        plain = [e for e in edges if "name" not in e]
        named = [e for e in edges if "name" in e]
        for query, batch in ((UPSERT_PERSON_EDGES, plain), (UPSERT_NAMED_PERSON_EDGES, named)):
            if batch:
                graph.run(query.format(predicate=predicate, label=label), {"sid": sid, "edges": batch})
        report.person_edges += len(edges)
    for label, rows in plan.fact_edges.items():
        if rows:
            graph.run(
                UPSERT_FACTS.format(label=label),
                {
                    "sid": sid,
                    "facts": rows,
                    "legacy_id": str(story.legacy_id),
                    "narrator": str(story.author_user_id),
                    "told_at": story.created_at.isoformat(),
                },
            )
            report.facts += len(rows)
            touched |= {r["source_id"] for r in rows} | {r["target_id"] for r in rows if label == "Person"}
    resolve_facts(graph, touched)
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
    #: rows of entities merged into another one: their survivor's id, the name the story used
    redirected: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: fact edges by the label of their target (docs/decisions/0012)
    fact_edges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: the mentioned persons the story's title names (their MENTIONS edge's `in_title`)
    title_person_ids: list[str] = field(default_factory=list)

    def fingerprint(self, legacy_id: str) -> str:
        """The hash `graph_fingerprints` gives this story once the plan is written."""
        parts = {f"BELONGS_TO|{legacy_id}"}
        parts |= {
            f"{STORY_EDGE[label]}|{row['id']}"
            for by_label in (self.by_label, self.redirected)
            for label, rows in by_label.items()
            for row in rows
        }
        parts |= {f"MENTIONS|{pid}" for pid in self.person_ids}
        parts |= {
            f"{predicate}|{edge['person_id']}|{edge['entity_id']}"
            for (predicate, _), edges in self.person_edges.items()
            for edge in edges
        }
        parts |= {f"FACT|{row['fact_id']}" for rows in self.fact_edges.values() for row in rows}
        return fingerprint(str(self.facts["years"]), parts)


def fingerprint(years: str, parts: Iterable[str]) -> str:
    """A story's graph contribution as one hash: its years and its edges, order-free."""
    text = "\n".join([years, *sorted(set(parts))])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def graph_fingerprints(graph: GraphStore, story_ids: Sequence[str] | None = None) -> dict[str, str]:
    """Story id -> `fingerprint` of what the graph holds for it (its edges to its legacy,
    entities and persons, the person -> entity edges it supports, its years): compared with the
    fingerprint stored at sync time, a story whose facts a crash rolled back (or lost) shows.
    With `story_ids`, only those stories."""
    parts: dict[str, set[str]] = {}
    years: dict[str, str] = {}
    only = story_ids is not None
    params = {"ids": list(story_ids or ())}
    for row in graph.run(STORY_PARTS_OF if only else STORY_PARTS, params if only else None):
        sid = str(row["sid"])
        years[sid] = str(row.get("years") or "")
        parts.setdefault(sid, set()).update(str(x) for x in row.get("parts") or () if x)
    for row in graph.run(PERSON_EDGE_PARTS_OF if only else PERSON_EDGE_PARTS, params if only else None):
        if row.get("sid") and str(row["sid"]) in parts:
            parts[str(row["sid"])].add(str(row["part"]))
    for row in graph.run(FACT_PARTS_OF if only else FACT_PARTS, params if only else None):
        if row.get("sid") and str(row["sid"]) in parts:
            parts[str(row["sid"])].add(str(row["part"]))
    return {sid: fingerprint(years[sid], found) for sid, found in parts.items()}


def _survivor(redirects: Mapping[str, str], eid: str) -> str | None:
    """The entity `eid` was merged into, following merges of merges."""
    seen: set[str] = set()
    target = redirects.get(eid)
    while target is not None and target in redirects and target not in seen:
        seen.add(target)
        target = redirects[target]
    return target


def plan_story_entities(
    story: Story,
    entities: ExtractedEntities,
    resolved: dict[str, str],
    unresolved: Sequence[str],
    redirects: Mapping[str, str] | None = None,
) -> EntityPlan:
    """The graph writes of `sync_story_entities` for `story`, as data (no I/O)."""
    legacy = str(story.legacy_id)
    by_label: dict[str, list[dict[str, Any]]] = {"Place": [], "Event": [], "Object": []}
    redirected: dict[str, list[dict[str, Any]]] = {"Place": [], "Event": [], "Object": []}
    ids_by_name: dict[tuple[str, str], tuple[str, str | None]] = {}
    for label, items in (
        ("Place", entities.places),
        ("Event", entities.events),
        ("Object", entities.objects),
    ):
        for item in items:
            by_name, owned = entity_id(legacy, label, item.name), owned_key(item.name, resolved)
            eid = entity_id(legacy, label, owned) if owned else by_name
            if one_of_many(label, item.name):  # "the wedding": this story's (decision 0041)
                eid = entity_id(legacy, label, f"{story.id}|{item.name}")
            # merged away (by its owner's key or, merged before owners counted, by its name); an
            # owned entity is shared like a survivor: each story's edge keeps the story's words
            survivor = (
                _survivor(redirects or {}, eid)
                or _survivor(redirects or {}, by_name)
                or (eid if owned else None)
            )
            date = getattr(item, "date", None) or ""
            row = {
                "id": survivor or eid,
                "name": item.name,
                "legacy_id": legacy,
                "type": item.type,
                "date": date,
                "years": years_property(years_of([date])) if date else "",
                "in_title": in_title(story.title, [item.name]),
            }
            ids_by_name[(label, name_key(item.name))] = (str(row["id"]), item.name if survivor else None)
            (redirected if survivor else by_label)[label].append(row)
    for label, rows in redirected.items():  # a story that names the survivor too keeps that edge
        own = {r["id"] for r in by_label[label]}
        redirected[label] = [r for r in rows if r["id"] not in own]
    grouped: dict[tuple[str, str], list[dict[str, str]]] = {}
    for rel in entities.relationships:
        target_label = PREDICATE_TARGET.get(rel.predicate)
        person = resolved.get(rel.subject)
        target = ids_by_name.get((target_label, name_key(rel.object))) if target_label else None
        if target_label and person and target:
            edge = {"person_id": person, "entity_id": target[0]}
            if target[1] is not None:
                edge["name"] = target[1]
            grouped.setdefault((rel.predicate, target_label), []).append(edge)
    for key, edges in grouped.items():  # a fact the story states of the survivor itself wins
        plain = {(e["person_id"], e["entity_id"]) for e in edges if "name" not in e}
        grouped[key] = [e for e in edges if "name" not in e or (e["person_id"], e["entity_id"]) not in plain]
    periods = [t.period for t in entities.time_references]
    fact_edges = _fact_rows(str(story.id), entities, resolved, ids_by_name)
    return EntityPlan(
        sid=str(story.id),
        by_label=by_label,
        person_ids=sorted(set(resolved.values())),
        person_edges=grouped,
        facts={
            "years": years_property(years_of(periods + [e.date or "" for e in entities.events])),
            "periods": DISPLAY_SEPARATOR.join(periods),
            "unresolved": DISPLAY_SEPARATOR.join(unresolved),
            "version": entities.extractor_version,
        },
        redirected=redirected,
        fact_edges=fact_edges,
        title_person_ids=sorted(
            {pid for written, pid in resolved.items() if in_title(story.title, [written])}
        ),
    )


def fact_id(story_id: str, source_id: str, relation: str, target_id: str, negated: bool) -> str:
    return str(uuid.uuid5(ENTITY_NAMESPACE, f"fact|{story_id}|{source_id}|{relation}|{target_id}|{negated}"))


def _fact_rows(
    sid: str,
    entities: ExtractedEntities,
    resolved: Mapping[str, str],
    ids_by_name: Mapping[tuple[str, str], tuple[str, str | None]],
) -> dict[str, list[dict[str, Any]]]:
    """A story's facts as edge rows by target label: the source a resolved person, the target a
    resolved person or an entity the story names (its survivor if merged away)."""
    out: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for fact in entities.facts:
        source = resolved.get(fact.source)
        if source is None:
            continue
        target: tuple[str, str] | None = None
        if fact.target in resolved:
            target = ("Person", resolved[fact.target])
        else:
            for label in ("Object", "Event", "Place"):
                found = ids_by_name.get((label, name_key(fact.target)))
                if found is not None:
                    target = (label, found[0])
                    break
        if target is None or target[1] == source:
            continue
        fid = fact_id(sid, source, fact.relation, target[1], fact.negated)
        if fid in seen:
            continue
        seen.add(fid)
        years = years_property(int(y) for y in _YEAR_IN_TEXT.findall(fact.sentence))
        out.setdefault(target[0], []).append(
            {
                "fact_id": fid,
                "source_id": source,
                "target_id": target[1],
                "relation": fact.relation,
                "verb": fact.verb,
                "sentence": fact.sentence,
                "confidence": fact.confidence,
                "negated": fact.negated,
                "years": years,
                "name": fact.target,
            }
        )
    return out
