"""A story's chunk index: its paragraphs cut to the embedder's measure, embedded under the
story's title and stored with the key (digest and chunk format) that says when it is behind."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from heirloom.contracts.records import Story
from heirloom.domain.chunking import chunk_story
from heirloom.ports import Chunk, EmbeddedChunk, Embedder, Tokenizer, VectorIndex


class IndexPorts(Protocol):
    """What a story's chunk index needs (`ingestion.IngestionPorts` has it)."""

    @property
    def vectors(self) -> VectorIndex: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def tokenizer(self) -> Tokenizer: ...
    @property
    def chunk_max_tokens(self) -> int: ...


#: the container's model thread: a story's chunks are embedded there while the caller extracts
#: its entities (`ingestion.process_story`)
@lru_cache(maxsize=1)
def _model_calls() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="heirloom-embed")


#: how chunks are built and embedded, with the largest chunk (CHUNK_MAX_TOKENS); part of the
#: index key, so a change re-indexes on backfill ("fit": a paragraph the embedder would not read
#: whole is split, a transcript's turns are packed: decision 0038)
CHUNK_FORMAT = "para{max_tokens}-fit-turns-title1"


def chunk_format(max_tokens: int) -> str:
    return CHUNK_FORMAT.format(max_tokens=max_tokens)


def index_key(digest: str, max_tokens: int) -> str:
    """What the chunk index records for a story: its digest (`story_digest`: chunks embed the
    title) and the chunk format."""
    return f"{digest}:{chunk_format(max_tokens)}"


def embedding_text(title: str, chunk: str) -> str:
    """The text embedded for a chunk: the story title as a header, then the paragraph."""
    return f"{title}\n\n{chunk}"


def story_chunks(ports: IndexPorts, story: Story) -> list[Chunk]:
    """The story's chunks: paragraphs under the token limit, each read whole by the embedder
    under the story's title (`embedding_text`)."""
    return chunk_story(
        story.content,
        ports.tokenizer,
        ports.chunk_max_tokens,
        fits=lambda text: ports.embedder.fits(embedding_text(story.title, text)),
    )


def index_story(ports: IndexPorts, story: Story, digest: str) -> bool:
    """Chunk and embed `story` unless the index already holds this title and content (`digest`,
    `story_digest`); True if it did."""
    key = index_key(digest, ports.chunk_max_tokens)
    if ports.vectors.indexed_hash(story.id) == key:
        return False
    chunks = story_chunks(ports, story)
    _store_index(ports, story, chunks, _embed(ports, story, chunks), key)
    return True


def _embed(ports: IndexPorts, story: Story, chunks: Sequence[Chunk]) -> list[list[float]]:
    """One embedding call for all of a story's chunks."""
    return ports.embedder.embed([embedding_text(story.title, c.text) for c in chunks]) if chunks else []


def _store_index(
    ports: IndexPorts, story: Story, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]], key: str
) -> None:
    embedded = [
        EmbeddedChunk(index=c.index, text=c.text, token_count=c.token_count, embedding=tuple(v))
        for c, v in zip(chunks, vectors, strict=True)
    ]
    ports.vectors.replace_chunks(story.id, embedded, key)


@dataclass(frozen=True)
class PendingEmbedding:
    """A story's chunks, their vectors being computed in the model thread."""

    key: str
    title: str
    chunks: list[Chunk]
    vectors: Future[list[list[float]]]

    def of(self, story: Story, digest: str, max_tokens: int) -> bool:
        """Were these chunks cut from this content and embedded under this title?"""
        return self.key == index_key(digest, max_tokens) and self.title == story.title

    def store(self, ports: IndexPorts, story: Story) -> None:
        """Wait for the vectors and write the chunk index (an embedding error is raised here)."""
        _store_index(ports, story, self.chunks, self.vectors.result(), self.key)


def start_embedding(ports: IndexPorts, story: Story, digest: str) -> PendingEmbedding | None:
    """Chunk `story` and start embedding its chunks in the model thread, unless the index
    already holds this title and content (`digest`, `story_digest`)."""
    key = index_key(digest, ports.chunk_max_tokens)
    if ports.vectors.indexed_hash(story.id) == key:
        return None
    chunks = story_chunks(ports, story)
    return PendingEmbedding(key, story.title, chunks, _model_calls().submit(_embed, ports, story, chunks))
