"""GraphSync: write the extracted entities and the story's edges to the graph, unless the story
changed or went away since extraction."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from heirloom.contracts.ingestion import ExtractionResult, GraphSyncInput, GraphSyncResult
from heirloom.domain.chunking import story_digest
from heirloom.domain.ingestion import IngestionPorts, deleted_meanwhile
from heirloom.domain.story_graph import relink_named, sync_entities
from heirloom.services import Services


def run(data: GraphSyncInput, services: Services) -> GraphSyncResult:
    return graph_sync_step(services.ingestion, data, services.start_ingestion)


def graph_sync_step(
    ports: IngestionPorts, data: GraphSyncInput, start_ingestion: Callable[[UUID], None] | None = None
) -> GraphSyncResult:
    """`start_ingestion`: how the stories that write a name this sync gave (or stopped giving)
    an animal or a work are re-linked (decision 0040); inline without it."""
    extraction = next((r for r in data.results if isinstance(r, ExtractionResult)), None)
    story = ports.stories.get_story(data.story_id)
    if story is None:
        return GraphSyncResult(story_id=data.story_id, status="deleted")
    if extraction is None or extraction.status != "extracted":
        return GraphSyncResult(story_id=data.story_id, status="up_to_date")
    digest = story_digest(story.title, story.content)
    if extraction.content_hash != digest:  # title or content changed since extraction: a newer run syncs it
        return GraphSyncResult(story_id=data.story_id, status="stale")
    try:
        report = sync_entities(ports, story, extraction.entities, digest)
    except Exception:
        if deleted_meanwhile(ports, data.story_id):
            return GraphSyncResult(story_id=data.story_id, status="deleted")
        raise
    if deleted_meanwhile(ports, data.story_id):
        return GraphSyncResult(story_id=data.story_id, status="deleted")
    relink_named(ports, story, report.names_changed, start_ingestion)
    return GraphSyncResult(
        story_id=data.story_id,
        status="synced",
        entities=report.entities,
        mentions=report.mentions,
        unresolved=len(report.unresolved),
    )
