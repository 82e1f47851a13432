"""The ports the domain talks through. Real and local adapters live in `heirloom.adapters`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from heirloom.contracts.ingestion import RunningExecution
from heirloom.contracts.records import Legacy, Link, Member, Person, Relationship, Role, Story, User
from heirloom.domain.access import ReadScope, StoryMeta


class Change(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    DELETED = "deleted"
    #: not applied: the stored state is newer or more restrictive, or the story is deleted
    #: (heirloom.domain.ordering)
    SKIPPED = "skipped"


class Chunk(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    text: str
    token_count: int


class EmbeddedChunk(Chunk):
    embedding: tuple[float, ...]


class ChunkHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    story_id: UUID
    legacy_id: UUID
    chunk_index: int
    text: str
    token_count: int
    similarity: float
    #: share of the query's word weight (inverse document frequency) the chunk contains, 0..1
    lexical: float = 0.0


class StoryStore(Protocol):
    """Legacies, persons, users, members, stories and links: the permission source of truth."""

    def upsert_legacy(self, legacy: Legacy) -> Change: ...
    def upsert_person(
        self, person: Person, as_of: datetime | None = None, seq: int | None = None
    ) -> Change: ...
    def upsert_user(self, user: User) -> Change: ...
    def upsert_member(self, member: Member, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) as heirloom.domain.ordering says (so are the other
        stamped writes); without `as_of`, a dataset record."""
        ...

    def remove_member(
        self, legacy_id: UUID, user_id: UUID, as_of: datetime | None = None, seq: int | None = None
    ) -> Change: ...
    def upsert_relationship(self, relationship: Relationship) -> Change: ...
    def upsert_link(self, link: Link, as_of: datetime | None = None, seq: int | None = None) -> Change: ...
    def upsert_story(self, story: Story, content_hash: str, seq: int | None = None) -> Change: ...
    def delete_story(
        self, story_id: UUID, deleted_at: datetime | None = None, legacy_id: UUID | None = None
    ) -> Change:
        """Delete and leave a tombstone, final for the id (also for a story not stored yet when
        `legacy_id` is given: its late create must not revive it)."""
        ...

    def get_legacy(self, legacy_id: UUID) -> Legacy | None: ...
    def get_person(self, person_id: UUID) -> Person | None: ...
    def get_user(self, user_id: UUID) -> User | None: ...
    def get_story(self, story_id: UUID) -> Story | None: ...
    def get_story_hash(self, story_id: UUID) -> str | None: ...
    def role_of(self, user_id: UUID, legacy_id: UUID) -> Role | None: ...
    def member_legacy_ids(self, user_id: UUID) -> list[UUID]: ...
    def links_of(self, legacy_id: UUID) -> list[Link]: ...
    def persons_of(self, legacy_ids: Sequence[UUID]) -> list[Person]: ...
    def relationships_of(self, person_ids: Sequence[UUID]) -> list[Relationship]: ...
    def story_meta(self, story_ids: Iterable[UUID]) -> list[StoryMeta]: ...
    def stories_of(self, legacy_id: UUID) -> list[Story]: ...
    def graph_synced(self, story_id: UUID) -> tuple[str, str] | None:
        """(content hash, extractor version) the graph was last built from, if any."""
        ...

    def mark_graph_synced(
        self, story_id: UUID, content_hash: str, extractor_version: str, fingerprint: str | None = None
    ) -> None:
        """`fingerprint`: what the graph holds for the story once synced (`entity_sync`)."""
        ...

    def graph_synced_count(self) -> int:
        """How many stories are marked as having their graph facts built."""
        ...

    def graph_fingerprints(self) -> dict[UUID, str | None]:
        """The stored fingerprint of every story marked as synced (None: marked before
        fingerprints were kept)."""
        ...

    def forget_graph_synced(self, story_ids: Sequence[UUID] | None = None) -> None:
        """Unmark these stories' graph facts (all stories when None: the graph store lost
        them): the next delivery of each story, a reload or a backfill rebuilds them."""
        ...

    def stories_needing_processing(
        self,
        *,
        after: UUID | None,
        limit: int,
        embedder: str,
        extractor_version: str | None,
        chunk_format: str,
    ) -> list[UUID]:
        """Story ids (ascending, after `after`) whose chunks or graph facts are behind."""
        ...

    def record_ingest_failure(self, story_id: UUID, error: str, cause: str) -> None: ...
    def counts(self) -> dict[str, int]: ...


class VectorIndex(Protocol):
    """Story chunks with embeddings; searches only what a `ReadScope` grants."""

    def replace_chunks(self, story_id: UUID, chunks: Sequence[EmbeddedChunk], content_hash: str) -> None: ...
    def indexed_hash(self, story_id: UUID) -> str | None: ...
    def delete_chunks(self, story_id: UUID) -> None: ...
    def search(
        self, embedding: Sequence[float], scope: ReadScope, k: int, *, also: Sequence[tuple[UUID, int]] = ()
    ) -> list[ChunkHit]:
        """The `k` nearest readable chunks, nearest first; then the readable chunks `also` names
        (story id, chunk index) that are not among them, with their similarity too."""
        ...

    def search_text(self, text: str, scope: ReadScope, k: int) -> list[ChunkHit]:
        """Readable chunks sharing words with `text`, by `lexical`; `similarity` left at 0 (no
        query embedding needed, so this runs while the query is embedded)."""
        ...

    def chunks_of(self, story_id: UUID) -> list[Chunk]: ...
    def chunks_of_many(self, story_ids: Sequence[UUID]) -> dict[UUID, list[Chunk]]:
        """`chunks_of` for several stories in one read; stories without chunks are left out."""
        ...

    def count(self) -> int: ...


class GraphStore(Protocol):
    """openCypher with parameters only. Callers write logical labels and relationship types
    (`:Person`, `[:FAMILY_OF]`); the adapter checks them against the whitelist and injects the
    environment prefix."""

    prefix: str

    def run(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def ensure_indexes(self) -> None: ...
    def count_nodes(self) -> dict[str, int]: ...
    def count_edges(self) -> dict[str, int]: ...


class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class Tokenizer(Protocol):
    """Counts, encodes and decodes model tokens. A token is at least one byte (byte-level
    BPE), so `count(text)` never exceeds `len(text.encode())`: assembly skips counting the
    sentences of an excerpt whose whole text fits the limit by size alone."""

    def count(self, text: str) -> int: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, tokens: Sequence[int]) -> str: ...


class BackfillRuns(Protocol):
    """The backfill workflow's executions (Step Functions ListExecutions)."""

    def running(self, state_machine_arn: str) -> Sequence[RunningExecution]: ...
