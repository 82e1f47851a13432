"""Merge two entities of one legacy, and undo it exactly.

A merge moves every edge of the absorbed entity (its stories' TOOK_PLACE_AT / REFERENCES, the
person -> entity facts, one per supporting story with its `story_id`) onto the survivor, each
moved edge carrying the name its story used (`name`: facts and summaries show a user the entity
under a name some story they may read gives it, never a name only an unreadable story holds),
keeps the absorbed names as the survivor's `aliases` (one display string: no list properties on
Neptune) and deletes the absorbed node. Before touching the graph it records in PostgreSQL what
it will change: the absorbed node's properties and edges, the survivor's properties, and which
edges it creates (an edge the survivor already had is not created, so not removed on undo).
`unmerge` replays that record backwards, so the graph is as it was before the merge.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from heirloom.contracts.curation import EdgeRecord, EntityLabel, MergeChanges, MergeRecord, MergeResult
from heirloom.domain.entity_sync import graph_fingerprints, years_property
from heirloom.domain.graph_schema import DISPLAY_SEPARATOR, NODE_LABELS, RELATIONSHIP_TYPES
from heirloom.domain.names import name_key
from heirloom.errors import Conflict, InvalidRequest, NotFound
from heirloom.ports import CurationStore, GraphStore, ProcessingLedger

MERGEABLE: tuple[EntityLabel, ...] = ("Place", "Event", "Object")
#: the survivor properties a merge may change (and an unmerge restores)
TOUCHED = ("aliases", "years", "date")

NODE = "MATCH (e:{label} {{id: $id}}) RETURN e AS node"
#: every edge of the node, in either direction (`outgoing`: the node is its start)
EDGES = (
    "MATCH (e:{label} {{id: $id}})-[r]-(o) RETURN o AS other, r AS rel, startNode(r).id = e.id AS outgoing"
)
#: an edge from a to b (the entity is whichever end the direction says)
CREATE_EDGE = (
    "MATCH (a:{a_label} {{id: $a}}) MATCH (b:{b_label} {{id: $b}}) CREATE (a)-[r:{type}]->(b) SET r += $props"
)
#: an edge by its identity: a provenance edge by its story ('' for an edge without one), a fact
#: edge by its `fact_id` too (one story may state several facts between the same two nodes)
DELETE_EDGE = (
    "MATCH (a:{a_label} {{id: $a}})-[r:{type}]->(b:{b_label} {{id: $b}})"
    " WHERE coalesce(r.story_id, '') = $story_id AND coalesce(r.fact_id, '') = $fact_id DELETE r"
)
DELETE_NODE = "MATCH (e:{label} {{id: $id}}) DETACH DELETE e"
RESTORE_NODE = "MERGE (e:{label} {{id: $id}}) SET e += $props"


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if not k.startswith("_")}


def _edge_key(edge: EdgeRecord) -> tuple[str, str, str, Any, Any]:
    return (edge.type, edge.direction, edge.other_id, edge.props.get("story_id"), edge.props.get("fact_id"))


def read_node(graph: GraphStore, label: str, node_id: str) -> dict[str, Any] | None:
    rows = graph.run(NODE.format(label=label), {"id": node_id})
    return _plain(rows[0]["node"]) if rows else None


def read_edges(graph: GraphStore, label: str, node_id: str) -> list[EdgeRecord]:
    out: list[EdgeRecord] = []
    for row in graph.run(EDGES.format(label=label), {"id": node_id}):
        other, rel = row["other"], row["rel"]
        labels = [lb for lb in other.get("_labels", []) if lb in NODE_LABELS]
        rel_type = rel.get("_type")
        if not labels or rel_type not in RELATIONSHIP_TYPES:
            continue  # nothing of ours (the adapter refuses other names anyway)
        out.append(
            EdgeRecord(
                type=rel_type,
                direction="out" if row["outgoing"] else "in",
                other_id=str(other["id"]),
                other_label=labels[0],
                props=_plain(rel),
            )
        )
    return out


def _years(*values: Any) -> str:
    years = {int(y) for v in values if v for y in str(v).strip("|").split("|") if y.isdigit()}
    return years_property(years)


def merged_props(survivor: dict[str, Any], absorbed: dict[str, Any]) -> dict[str, Any]:
    """The survivor's names, years and date once `absorbed` is in it."""
    names: list[str] = []
    seen = {name_key(str(survivor.get("name", "")))}
    existing = str(survivor.get("aliases") or "").split(DISPLAY_SEPARATOR)
    more = [str(absorbed.get("name", "")), *str(absorbed.get("aliases") or "").split(DISPLAY_SEPARATOR)]
    for name in [*existing, *more]:
        if name and name_key(name) not in seen:
            seen.add(name_key(name))
            names.append(name)
    return {
        "aliases": DISPLAY_SEPARATOR.join(names),
        "years": _years(survivor.get("years"), absorbed.get("years")),
        "date": survivor.get("date") or absorbed.get("date") or "",
    }


def _ends(label: str, node_id: str, edge: EdgeRecord) -> dict[str, str]:
    """The edge's start and end (labels and ids), with the entity at the end its direction says."""
    entity, other = (label, node_id), (edge.other_label, edge.other_id)
    (a_label, a), (b_label, b) = (other, entity) if edge.direction == "in" else (entity, other)
    return {"a_label": a_label, "a": a, "b_label": b_label, "b": b}


def _write_edge(graph: GraphStore, label: str, node_id: str, edge: EdgeRecord) -> None:
    ends = _ends(label, node_id, edge)
    query = CREATE_EDGE.format(a_label=ends["a_label"], b_label=ends["b_label"], type=edge.type)
    graph.run(query, {"a": ends["a"], "b": ends["b"], "props": edge.props})


def _delete_edge(graph: GraphStore, label: str, node_id: str, edge: EdgeRecord) -> None:
    ends = _ends(label, node_id, edge)
    query = DELETE_EDGE.format(a_label=ends["a_label"], b_label=ends["b_label"], type=edge.type)
    graph.run(
        query,
        {
            "a": ends["a"],
            "b": ends["b"],
            "story_id": str(edge.props.get("story_id") or ""),
            "fact_id": str(edge.props.get("fact_id") or ""),
        },
    )


@dataclass(frozen=True)
class MergePorts:
    graph: GraphStore
    curation: CurationStore
    ledger: ProcessingLedger


def find_entity(graph: GraphStore, legacy_id: UUID, entity_id: str) -> tuple[EntityLabel, dict[str, Any]]:
    for label in MERGEABLE:
        node = read_node(graph, label, entity_id)
        if node is not None and node.get("legacy_id") == str(legacy_id):
            return label, node
    raise NotFound(f"no place, event or object {entity_id} in legacy {legacy_id}")


def entity_story_ids(graph: GraphStore, label: str, entity_id: str) -> set[str]:
    """The stories whose edges name the entity (mentions, and facts by their `story_id`)."""
    return _stories_of(read_edges(graph, label, entity_id))


def merge_story_ids(
    graph: GraphStore, record: MergeRecord, active: Sequence[MergeRecord]
) -> tuple[set[str], set[str]]:
    """The stories that name each end of a merge, as its own (survivor, absorbed): the
    survivor's edges but those the merge added (now, or as the later merge of `active` that
    absorbed it found them), the absorbed one's as the merge found them."""
    if read_node(graph, record.label, record.survivor_id) is not None:
        edges = read_edges(graph, record.label, record.survivor_id)
    else:
        later = next((m for m in active if m.absorbed_id == record.survivor_id), None)
        edges = list(later.changes.absorbed_edges) if later else []
    added = {_edge_key(e) for e in record.changes.added_edges}
    own = [e for e in edges if _edge_key(e) not in added]
    return _stories_of(own), _stories_of(record.changes.absorbed_edges)


#: of a set of story ids, those the caller may read
Readable = Callable[[set[str]], set[str]]


def visible_count(edges: Iterable[EdgeRecord], readable: Readable | None) -> int:
    """How many of `edges` the caller may know of: each edge whose stories (it names none, or
    every one) `readable` keeps; all of them without `readable`."""
    edges = list(edges)
    if readable is None:
        return len(edges)
    kept = readable(_stories_of(edges))
    return sum(1 for e in edges if _stories_of([e]) <= kept)


def merge(
    ports: MergePorts,
    legacy_id: UUID,
    survivor_id: str,
    absorbed_id: str,
    user_id: UUID,
    readable: Readable | None = None,
) -> MergeResult:
    """Merge `absorbed_id` into `survivor_id` (same legacy, same label), recorded first.
    `moved_edges` counts only the moved edges of stories `readable` keeps."""
    if survivor_id == absorbed_id:
        raise InvalidRequest("an entity cannot be merged into itself")
    graph = ports.graph
    label, survivor = find_entity(graph, legacy_id, survivor_id)
    absorbed_label, absorbed = find_entity(graph, legacy_id, absorbed_id)
    if absorbed_label != label:
        raise InvalidRequest(f"a {absorbed_label} cannot be merged into a {label}")
    absorbed_edges = read_edges(graph, label, absorbed_id)
    have = {_edge_key(e) for e in read_edges(graph, label, survivor_id)}
    added = tuple(
        _named(e, str(absorbed.get("name", "")))
        for e in absorbed_edges
        if _edge_key(e) not in have and e.other_id not in (survivor_id, absorbed_id)
    )
    changes = MergeChanges(
        absorbed_label=label,
        absorbed_props=absorbed,
        survivor_props_before={k: survivor[k] for k in TOUCHED if k in survivor},
        absorbed_edges=tuple(absorbed_edges),
        added_edges=added,
    )
    record = MergeRecord(
        id=uuid.uuid4(),
        legacy_id=legacy_id,
        label=label,
        survivor_id=survivor_id,
        absorbed_id=absorbed_id,
        changes=changes,
        merged_by=user_id,
    )
    ports.curation.record_merge(record)
    for edge in added:
        _write_edge(graph, label, survivor_id, edge)
    graph.run(
        f"MATCH (e:{label} {{id: $id}}) SET e += $props",
        {"id": survivor_id, "props": merged_props(survivor, absorbed)},
    )
    graph.run(DELETE_NODE.format(label=label), {"id": absorbed_id})
    _refresh_fingerprints(ports, _stories_of(absorbed_edges))
    ports.curation.record_impact(legacy_id, len(absorbed_edges) + 1)
    return MergeResult(
        merge_id=record.id,
        survivor_id=survivor_id,
        absorbed_id=absorbed_id,
        moved_edges=visible_count(added, readable),
    )


def unmerge(
    ports: MergePorts, legacy_id: UUID, merge_id: UUID, user_id: UUID, readable: Readable | None = None
) -> MergeResult:
    """Undo a merge: the absorbed node and its edges back, the edges the merge created and the
    survivor's changed properties as they were. A later merge involving the survivor must be
    undone first. `moved_edges` as for `merge`."""
    record = ports.curation.get_merge(merge_id)
    if record is None or record.legacy_id != legacy_id:
        raise NotFound(f"no merge {merge_id} in legacy {legacy_id}")
    if record.unmerged_at is not None:
        raise Conflict(f"merge {merge_id} was already undone")
    active = ports.curation.active_merges(legacy_id)  # oldest first
    after = active[next((i for i, m in enumerate(active) if m.id == record.id), len(active)) + 1 :]
    later = [m for m in after if record.survivor_id in (m.survivor_id, m.absorbed_id)]
    if later:
        raise Conflict(f"undo merge {later[-1].id} first: it changed the same entity since")
    graph, label, changes = ports.graph, record.label, record.changes
    if read_node(graph, label, record.survivor_id) is None:
        raise Conflict(f"entity {record.survivor_id} no longer exists")
    graph.run(RESTORE_NODE.format(label=label), {"id": record.absorbed_id, "props": changes.absorbed_props})
    for edge in changes.added_edges:
        _delete_edge(graph, label, record.survivor_id, edge)
    for edge in changes.absorbed_edges:
        if not any(_edge_key(e) == _edge_key(edge) for e in read_edges(graph, label, record.absorbed_id)):
            _write_edge(graph, label, record.absorbed_id, edge)
    before = changes.survivor_props_before
    kept = {k: before[k] for k in TOUCHED if k in before}
    graph.run(f"MATCH (e:{label} {{id: $id}}) SET e += $props", {"id": record.survivor_id, "props": kept})
    for key in TOUCHED:
        if key not in before:
            graph.run(f"MATCH (e:{label} {{id: $id}}) REMOVE e.{key}", {"id": record.survivor_id})
    if not ports.curation.mark_unmerged(merge_id, user_id):
        raise Conflict(f"merge {merge_id} was already undone")
    _refresh_fingerprints(ports, _stories_of(changes.absorbed_edges))
    ports.curation.record_impact(legacy_id, len(changes.absorbed_edges) + 1)
    return MergeResult(
        merge_id=merge_id,
        survivor_id=record.survivor_id,
        absorbed_id=record.absorbed_id,
        moved_edges=visible_count(changes.added_edges, readable),
        unmerged=True,
    )


def _named(edge: EdgeRecord, name: str) -> EdgeRecord:
    """A moved edge keeps the name its story used (`name`, unless an earlier merge set it), so a
    reader is shown the entity under a name a story they may read gives it."""
    if edge.direction != "in" or "name" in edge.props or not name:
        return edge
    return edge.model_copy(update={"props": {**edge.props, "name": name}})


def _stories_of(edges: Iterable[EdgeRecord]) -> set[str]:
    return {e.other_id for e in edges if e.other_label == "Story"} | {
        str(e.props["story_id"]) for e in edges if e.props.get("story_id")
    }


def _refresh_fingerprints(ports: MergePorts, story_ids: set[str]) -> None:
    """The stories whose edges moved keep their sync marks, with what the graph now holds (else
    the writing commands would take the merge for a lost graph and re-extract them)."""
    if not story_ids:
        return
    held = graph_fingerprints(ports.graph, story_ids=sorted(story_ids))
    for sid, fingerprint in held.items():
        synced = ports.ledger.graph_synced(UUID(sid))
        if synced is not None:
            ports.ledger.mark_graph_synced(UUID(sid), synced[0], synced[1], fingerprint)
