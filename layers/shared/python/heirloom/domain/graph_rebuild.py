"""Rebuild a deployment's graph from PostgreSQL: drop it, write the structure again from the
records, and the entities of every story by extracting them again (the extraction is not
stored). Idempotent: a second rebuild writes the same graph. Each record is read again and
written under its lock, as story events write it (decision 0020), so a delivery that changes a
record during the rebuild is never overwritten by the rebuild's older read of it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from heirloom.domain import graph_sync
from heirloom.domain.chunking import story_digest
from heirloom.domain.graph_schema import NODE_LABELS
from heirloom.domain.ingestion import IngestionPorts, resync_memberships, sync_relationship_edge
from heirloom.domain.story_graph import enrich_story
from heirloom.ports import GraphStore


@dataclass(frozen=True)
class RebuildReport:
    legacies: int
    persons: int
    relationships: int
    links: int
    stories: int
    #: stories whose entities were extracted and written (0 without an extractor)
    enriched: int


def drop_graph(graph: GraphStore) -> None:
    """Delete every node (and so every edge) of the store's prefix."""
    for label in sorted(NODE_LABELS):
        graph.run(f"MATCH (n:{label}) DETACH DELETE n")


def rebuild_graph(ports: IngestionPorts, legacy_ids: Sequence[UUID]) -> RebuildReport:
    """Drop the graph and write it again from PostgreSQL's records of `legacy_ids` (every
    legacy: the graph holds nothing else). The sync marks are cleared first, so a rebuild
    interrupted at any point is finished by running it again."""
    stories = ports.stories
    stories.forget_graph_synced()
    drop_graph(ports.graph)
    legacies = [lg for lg in (stories.get_legacy(i) for i in legacy_ids) if lg is not None]
    for legacy in legacies:
        graph_sync.sync_legacy(ports.graph, legacy)
    persons = stories.persons_of([lg.id for lg in legacies])
    for person in persons:
        with stories.person_lock(person.id):
            graph_sync.sync_person(ports.graph, stories.get_person(person.id) or person)
    resync_memberships(
        ports, [(lg.id, user_id) for lg in legacies for user_id in stories.member_user_ids(lg.id)]
    )
    relationships = stories.relationships_of([p.id for p in persons])
    for rel in relationships:
        with stories.relationship_lock(rel.from_person_id, rel.to_person_id, rel.type.value):
            sync_relationship_edge(ports, rel.from_person_id, rel.to_person_id, rel.type)
    links = {link.id: link for lg in legacies for link in stories.links_of(lg.id)}
    for link in links.values():
        with stories.link_lock(link.id):
            graph_sync.sync_link(ports.graph, stories.get_link(link.id) or link)
    all_stories = [s for lg in legacies for s in stories.stories_of(lg.id)]
    for story in all_stories:
        with stories.story_graph_lock(story.id):
            current = stories.get_story(story.id)
            if current is not None:  # deleted meanwhile: its delete withdrew it
                graph_sync.sync_story(ports.graph, current)
    enriched = sum(
        enrich_story(ports, story, story_digest(story.title, story.content)) for story in all_stories
    )
    return RebuildReport(
        legacies=len(legacies),
        persons=len(persons),
        relationships=len(relationships),
        links=len(links),
        stories=len(all_stories),
        enriched=enriched,
    )
