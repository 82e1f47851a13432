"""ChunkEmbed: chunk the story as stored now and embed the chunks, unless the same title and
content (`story_digest`: chunks embed the title), model and chunk format are indexed already (a replayed or reordered step works on the current text)."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.ingestion import ChunkEmbedResult, IngestRequest
from heirloom.domain.chunking import story_digest
from heirloom.domain.ingestion import IngestionPorts, deleted_meanwhile
from heirloom.domain.story_index import index_story
from heirloom.services import Services


def run(data: IngestRequest, services: Services) -> ChunkEmbedResult:
    return chunk_embed_step(services.ingestion, data.story_id)


def chunk_embed_step(ports: IngestionPorts, story_id: UUID) -> ChunkEmbedResult:
    story = ports.stories.get_story(story_id)
    if story is None:
        return ChunkEmbedResult(story_id=story_id, status="deleted")
    digest = story_digest(story.title, story.content)
    try:
        indexed = index_story(ports, story, digest)
    except Exception:
        if deleted_meanwhile(ports, story_id):
            return ChunkEmbedResult(story_id=story_id, status="deleted")
        raise
    return ChunkEmbedResult(
        story_id=story_id,
        status="indexed" if indexed else "up_to_date",
        content_hash=digest,
        chunks=len(ports.vectors.chunks_of(story_id)),
    )
