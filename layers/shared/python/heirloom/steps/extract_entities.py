"""ExtractEntities: the people, places, events and objects of the story as stored now, unless
the same title and content (`story_digest`) were already extracted by the same extractor version."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.ingestion import ExtractionResult, IngestRequest
from heirloom.domain.chunking import story_digest
from heirloom.domain.ingestion import IngestionPorts
from heirloom.domain.story_graph import extract_story
from heirloom.services import Services


def run(data: IngestRequest, services: Services) -> ExtractionResult:
    return extract_step(services.ingestion, data.story_id)


def extract_step(ports: IngestionPorts, story_id: UUID) -> ExtractionResult:
    story = ports.stories.get_story(story_id)
    if story is None:
        return ExtractionResult(story_id=story_id, status="deleted")
    digest = story_digest(story.title, story.content)
    if ports.extractor is None or ports.stories.graph_synced(story_id) == (digest, ports.extractor_version):
        return ExtractionResult(story_id=story_id, status="up_to_date", content_hash=digest)
    entities = extract_story(ports, story)
    return ExtractionResult(
        story_id=story_id,
        status="extracted",
        content_hash=digest,
        extractor_version=entities.extractor_version or ports.extractor_version,
        entities=entities,
    )
