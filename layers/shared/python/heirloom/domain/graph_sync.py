"""Structural graph writes (the dual-write table of docs/design.md §1), all idempotent MERGEs.

Known records (legacies, persons, relationships, links) carry `known: true`; facts that come
from stories have their provenance as edges and are written by entity graph sync. Every edge
stores its logical type as `kind`, so queries compare and return types without prefixes. No
property is a list or map (Neptune's openCypher data model has neither): a person's aliases are
one display string. A record that moves (a story or person to another legacy, a link between
other legacies) has its old structural edge replaced, not kept beside the new one; a relationship
whose type changed or that was removed, a revoked link and an ended membership leave no edge.
"""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Person,
    Relationship,
    RelationshipType,
    Role,
    Story,
)
from heirloom.domain.graph_schema import DISPLAY_SEPARATOR
from heirloom.ports import GraphStore

#: a story's or person's BELONGS_TO edges to any legacy but its own (left by a move)
DROP_OTHER_BELONGS_TO = """
MATCH (n:{label} {{id: $id}})-[r:BELONGS_TO]->(l:Legacy)
WHERE l.id <> $legacy_id
DELETE r
"""

#: the link's LINKED_TO edges between legacies it no longer joins. Found by the link's id on the
#: edges (an edge index; decision 0035), not by either end: a stale edge's ends may both be
#: legacies the link no longer names. Unlabelled ends (LINKED_TO joins only legacies): with
#: `:Legacy` FalkorDB scans every legacy first.
DROP_MOVED_LINK = """
MATCH (a)-[r:LINKED_TO]->(b)
WHERE r.link_id = $link_id AND (a.id <> $a OR b.id <> $b)
DELETE r
"""

#: every LINKED_TO edge of the link (revoked: it joins nothing), found as DROP_MOVED_LINK's are
DROP_LINK = "MATCH ()-[r:LINKED_TO]->() WHERE r.link_id = $link_id DELETE r"


def sync_legacy(graph: GraphStore, legacy: Legacy) -> None:
    graph.run(
        "MERGE (l:Legacy {id: $id}) SET l += $props",
        {
            "id": str(legacy.id),
            "props": {"name": legacy.name, "subject_person_id": str(legacy.subject_person_id)},
        },
    )


def sync_person(graph: GraphStore, person: Person) -> None:
    props = {
        "name": person.name,
        "aliases": DISPLAY_SEPARATOR.join(person.aliases),
        "legacy_id": str(person.legacy_id),
        "known": True,
    }
    if person.birth_year is not None:
        props["birth_year"] = person.birth_year
    if person.death_year is not None:
        props["death_year"] = person.death_year
    graph.run(
        "MERGE (l:Legacy {id: $legacy_id})"
        " MERGE (p:Person {id: $id}) SET p += $props"
        " MERGE (p)-[r:BELONGS_TO]->(l) SET r.kind = 'BELONGS_TO'",
        {"id": str(person.id), "legacy_id": str(person.legacy_id), "props": props},
    )
    graph.run(
        DROP_OTHER_BELONGS_TO.format(label="Person"),
        {"id": str(person.id), "legacy_id": str(person.legacy_id)},
    )


def sync_relationship(graph: GraphStore, rel: Relationship) -> None:
    props = {
        "kind": rel.type.value,
        "detail": rel.detail or "",
        "since": rel.since or "",
        "until": rel.until or "",
        "known": True,
    }
    # the type is a whitelisted enum value, never user text
    graph.run(
        "MATCH (a:Person {id: $from_id}) MATCH (b:Person {id: $to_id})"
        f" MERGE (a)-[r:{rel.type.value}]->(b) SET r += $props",
        {"from_id": str(rel.from_person_id), "to_id": str(rel.to_person_id), "props": props},
    )


def drop_relationship(
    graph: GraphStore, from_person_id: UUID, to_person_id: UUID, type_: RelationshipType
) -> None:
    """The known edge of that type between the two persons (a whitelisted enum value)."""
    graph.run(
        f"MATCH (a:Person {{id: $from_id}})-[r:{type_.value}]->(b:Person {{id: $to_id}}) DELETE r",
        {"from_id": str(from_person_id), "to_id": str(to_person_id)},
    )


#: a membership's REMEMBERS edges but the one it keeps (from `keep_from` to `keep_to`; "" keeps
#: none): left by the user's earlier person, the legacy's earlier subject or the membership's
#: end; and the member's person's edges for the legacy written before edges carried the user.
#: Found by the legacy's id on the edges (an edge index; decision 0035), not by either end: a
#: stale edge's ends may both be persons the legacy and user no longer name. Unlabelled ends
#: (REMEMBERS joins only persons): with `:Person` FalkorDB scans every person first.
DROP_STALE_REMEMBERS = """
MATCH (a)-[r:REMEMBERS]->(b)
WHERE r.legacy_id = $legacy_id
  AND (r.user_id = $user_id AND (a.id <> $keep_from OR b.id <> $keep_to)
       OR r.user_id IS NULL AND a.id = $person_id)
DELETE r
"""


def sync_membership(
    graph: GraphStore, legacy: Legacy, user_id: UUID, member_person_id: UUID | None, role: Role | None
) -> None:
    """The member's person REMEMBERS the legacy's subject: one edge per membership, keyed by
    legacy and user, its role a scalar; any other edge of the membership is dropped. No role
    (not or no longer a member), a user without a person, or the subject itself as member: none.
    Nor is one written before both persons are in the graph (the person's write syncs it)."""
    keep = role is not None and member_person_id is not None and member_person_id != legacy.subject_person_id
    ends = {
        "legacy_id": str(legacy.id),
        "user_id": str(user_id),
        "person_id": str(member_person_id or ""),
        "keep_from": str(member_person_id) if keep else "",
        "keep_to": str(legacy.subject_person_id) if keep else "",
    }
    graph.run(DROP_STALE_REMEMBERS, ends)
    if not keep or role is None:
        return
    graph.run(
        "MATCH (p:Person {id: $keep_from}) MATCH (s:Person {id: $keep_to})"
        " MERGE (p)-[r:REMEMBERS {legacy_id: $legacy_id, user_id: $user_id}]->(s)"
        " SET r.kind = 'REMEMBERS', r.role = $role",
        {**ends, "role": role.value},
    )


def sync_link(graph: GraphStore, link: Link) -> None:
    """A revoked link's edge is dropped (it joins nothing any more)."""
    ends = {"link_id": str(link.id), "a": str(link.legacy_a_id), "b": str(link.legacy_b_id)}
    graph.run(DROP_MOVED_LINK, ends)
    if link.status is LinkStatus.REVOKED:
        graph.run(DROP_LINK, ends)
        return
    graph.run(
        "MATCH (a:Legacy {id: $a}) MATCH (b:Legacy {id: $b})"
        " MERGE (a)-[r:LINKED_TO {link_id: $link_id}]->(b)"
        " SET r.kind = 'LINKED_TO', r.status = $status, r.share_mode = $share_mode",
        {
            "a": str(link.legacy_a_id),
            "b": str(link.legacy_b_id),
            "link_id": str(link.id),
            "status": link.status.value,
            "share_mode": link.share_mode.value,
        },
    )


def sync_story(graph: GraphStore, story: Story) -> None:
    graph.run(
        "MERGE (l:Legacy {id: $legacy_id})"
        " MERGE (s:Story {id: $id}) SET s += $props"
        " MERGE (s)-[r:BELONGS_TO]->(l) SET r.kind = 'BELONGS_TO'",
        {
            "id": str(story.id),
            "legacy_id": str(story.legacy_id),
            "props": {
                "title": story.title,
                "legacy_id": str(story.legacy_id),
                "author_user_id": str(story.author_user_id),
                "created_at": story.created_at.isoformat(),
                "updated_at": story.updated_at.isoformat(),
                "year": story.created_at.year,
            },
        },
    )
    graph.run(
        DROP_OTHER_BELONGS_TO.format(label="Story"), {"id": str(story.id), "legacy_id": str(story.legacy_id)}
    )


def delete_story_node(graph: GraphStore, story_id: str) -> None:
    graph.run("MATCH (s:Story {id: $id}) DETACH DELETE s", {"id": story_id})
