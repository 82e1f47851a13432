"""Structural graph writes (the dual-write table of seed 000 section 1), all idempotent MERGEs.

Known records (legacies, persons, relationships, links) carry `known: true`; facts that come
from stories carry `story_ids` (their provenance) and are written by entity graph sync. Every
edge stores its logical type as `kind`, so queries compare and return types without prefixes.
"""

from __future__ import annotations

from heirloom.contracts.records import Legacy, Link, Person, Relationship, Story
from heirloom.ports import GraphStore


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
        "aliases": list(person.aliases),
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


def sync_link(graph: GraphStore, link: Link) -> None:
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


def delete_story_node(graph: GraphStore, story_id: str) -> None:
    graph.run("MATCH (s:Story {id: $id}) DETACH DELETE s", {"id": story_id})
