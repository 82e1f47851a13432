"""The in-memory vector index: chunks with their embeddings, searched by cosine within what a
`ReadScope` grants (as the PostgreSQL index's SQL does)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from heirloom.contracts.access import ReadScope, StoryMeta
from heirloom.contracts.context import ChunkResult
from heirloom.contracts.records import (
    Story,
)
from heirloom.errors import NotFound
from heirloom.ports import Chunk, EmbeddedChunk


@dataclass
class MemoryVectorIndex:
    """Chunks with their embeddings; cosine search within what a `ReadScope` grants."""

    #: the story store's stories (id -> story, content hash, seq): whose chunks a scope may read
    stories: dict[UUID, tuple[Story, str, int | None]]
    model_id: str = "memory"
    chunks: dict[UUID, list[EmbeddedChunk]] = field(default_factory=dict)
    #: story id -> (index key, model) of its chunks
    processing: dict[UUID, tuple[str, str]] = field(default_factory=dict)

    def replace_chunks(self, story_id: UUID, chunks: Sequence[EmbeddedChunk], content_hash: str) -> None:
        if story_id not in self.stories:
            raise NotFound(f"story {story_id} is not stored")
        self.chunks[story_id] = list(chunks)
        self.processing[story_id] = (content_hash, self.model_id)

    def indexed_hash(self, story_id: UUID) -> str | None:
        found = self.processing.get(story_id)
        return found[0] if found and found[1] == self.model_id else None

    def delete_chunks(self, story_id: UUID) -> None:
        self.chunks.pop(story_id, None)
        self.processing.pop(story_id, None)

    def _readable(self, scope: ReadScope) -> list[tuple[Story, EmbeddedChunk]]:
        out: list[tuple[Story, EmbeddedChunk]] = []
        for sid, chunks in self.chunks.items():
            stored = self.stories.get(sid)
            if stored is None:
                continue
            story = stored[0]
            meta = StoryMeta(
                id=story.id,
                legacy_id=story.legacy_id,
                author_user_id=story.author_user_id,
                visibility=story.visibility,
                created_at=story.created_at,
            )
            if scope.allows(meta):
                out.extend((story, chunk) for chunk in chunks)
        return out

    def search(
        self, embedding: Sequence[float], scope: ReadScope, k: int, also: Sequence[tuple[UUID, int]] = ()
    ) -> list[ChunkResult]:
        scored = [(_cosine(embedding, c.embedding), s, c) for s, c in self._readable(scope)]
        scored.sort(key=lambda x: (-x[0], str(x[1].id), x[2].index))
        wanted = set(also)
        kept = scored[:k] + [x for x in scored[k:] if (x[1].id, x[2].index) in wanted]
        return [_result(s, c, similarity) for similarity, s, c in kept]

    def search_text(self, text: str, scope: ReadScope, k: int) -> list[ChunkResult]:
        words = {w for w in text.lower().split() if len(w) > 3}
        if not words:
            return []
        scored = []
        for story, chunk in self._readable(scope):
            share = len(words & set(chunk.text.lower().split())) / len(words)
            if share > 0:
                scored.append((share, story, chunk))
        scored.sort(key=lambda x: (-x[0], str(x[1].id), x[2].index))
        return [_result(s, c, 0.0, lexical=share) for share, s, c in scored[:k]]

    def chunks_of(self, story_id: UUID) -> list[Chunk]:
        return [
            Chunk(index=c.index, text=c.text, token_count=c.token_count)
            for c in self.chunks.get(story_id, [])
        ]

    def chunks_of_many(self, story_ids: Sequence[UUID]) -> dict[UUID, list[Chunk]]:
        return {sid: self.chunks_of(sid) for sid in story_ids if sid in self.chunks}

    def count(self) -> int:
        return sum(len(c) for c in self.chunks.values())


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _result(story: Story, chunk: EmbeddedChunk, similarity: float, *, lexical: float = 0.0) -> ChunkResult:
    return ChunkResult(
        story_id=story.id,
        legacy_id=story.legacy_id,
        chunk_index=chunk.index,
        text=chunk.text,
        token_count=chunk.token_count,
        similarity=similarity,
        lexical=lexical,
    )
