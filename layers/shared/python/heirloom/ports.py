"""The ports the domain talks through. Real and local adapters live in `heirloom.adapters`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from heirloom.contracts.access import KnownRelationship, ReadScope, StoryMeta
from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import AssembledContext, ChunkResult, ContextRequest
from heirloom.contracts.conversation import ConversationFact, ConversationMessage, ConversationSummary
from heirloom.contracts.curation import (
    CommunitySummary,
    GraphChange,
    ImpactState,
    MergeRecord,
    RebuildKind,
    StagedItem,
    StagedStatus,
    Tier,
)
from heirloom.contracts.extraction import ExtractedEntities, NamedThing
from heirloom.contracts.ingestion import RunningExecution
from heirloom.contracts.records import Legacy, Link, Member, Person, Relationship, Role, Story, User


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


class RecordWriter(Protocol):
    """Writes of the records: legacies, persons, users, members, relationships, links, stories."""

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
    def person_lock(self, person_id: UUID) -> AbstractContextManager[None]:
        """Held around a person's write and its graph node's (as `relationship_lock`)."""
        ...

    def member_lock(self, legacy_id: UUID, user_id: UUID) -> AbstractContextManager[None]:
        """Held around a membership's write and its social edge's (as `relationship_lock`)."""
        ...

    def link_lock(self, link_id: UUID) -> AbstractContextManager[None]:
        """Held around a link's write and its LINKED_TO edge's (as `relationship_lock`); keyed
        by the link's id, which keys its edge."""
        ...

    def upsert_relationship(
        self, relationship: Relationship, as_of: datetime | None = None, seq: int | None = None
    ) -> Change: ...
    def relationship_lock(
        self, from_person_id: UUID, to_person_id: UUID, type_: str
    ) -> AbstractContextManager[None]:
        """Held around a relationship's write and its graph edge's: a concurrent change of the
        same relationship waits, so the edge written last is the state stored last."""
        ...

    def remove_relationship(
        self,
        from_person_id: UUID,
        to_person_id: UUID,
        type_: str,
        as_of: datetime | None = None,
        seq: int | None = None,
    ) -> Change:
        """DELETED, UNCHANGED when there was none, SKIPPED when added again after `as_of`; with
        `as_of` the removal is remembered (a late older add or update is SKIPPED)."""
        ...

    def upsert_link(self, link: Link, as_of: datetime | None = None, seq: int | None = None) -> Change: ...
    def upsert_story(self, story: Story, content_hash: str, seq: int | None = None) -> Change: ...
    def delete_story(
        self, story_id: UUID, deleted_at: datetime | None = None, legacy_id: UUID | None = None
    ) -> Change:
        """Delete and leave a tombstone, final for the id (also for a story not stored yet when
        `legacy_id` is given: its late create must not revive it)."""
        ...


class AccessReads(Protocol):
    """Reads of the records, and of what decides who may read them (roles, memberships, links)."""

    def get_legacy(self, legacy_id: UUID) -> Legacy | None: ...
    def get_person(self, person_id: UUID) -> Person | None: ...
    def get_user(self, user_id: UUID) -> User | None: ...
    def get_story(self, story_id: UUID) -> Story | None: ...
    def get_story_hash(self, story_id: UUID) -> str | None: ...
    def story_deleted(self, story_id: UUID) -> bool:
        """Is the id deleted for good (a tombstone: no version of it is written again)?"""
        ...

    def role_of(self, user_id: UUID, legacy_id: UUID) -> Role | None: ...
    def member_legacy_ids(self, user_id: UUID) -> list[UUID]: ...
    def member_user_ids(self, legacy_id: UUID) -> list[UUID]:
        """The legacy's members' user ids, ascending."""
        ...

    def memberships_through(self, person_id: UUID) -> list[tuple[UUID, UUID]]:
        """(legacy id, user id) of each membership whose social edge ends at the person: the
        member's user has it as their person, or the legacy as its subject; ascending."""
        ...

    def links_of(self, legacy_id: UUID) -> list[Link]: ...
    def get_link(self, link_id: UUID) -> Link | None: ...
    def persons_of(self, legacy_ids: Sequence[UUID]) -> list[Person]: ...
    def relationships_of(self, person_ids: Sequence[UUID]) -> list[Relationship]: ...
    def known_relationships(self, person_ids: Sequence[UUID]) -> list[KnownRelationship]:
        """The stored relationships from or to these persons, each with its two persons' names
        and legacies, in one indexed read; ordered by (from person, to person, type)."""
        ...

    def story_meta(self, story_ids: Iterable[UUID]) -> list[StoryMeta]: ...
    def stories_of(self, legacy_id: UUID) -> list[Story]: ...
    def legacy_ids(self) -> list[UUID]:
        """Every legacy's id, ascending."""
        ...


class ProcessingLedger(Protocol):
    """What is indexed and graph-synced, for which content, model and extractor."""

    def graph_synced(self, story_id: UUID) -> tuple[str, str] | None:
        """(story digest, extractor version) the graph was last built from, if any: the digest
        covers title and content (`domain.chunking.story_digest`)."""
        ...

    def mark_graph_synced(
        self, story_id: UUID, content_hash: str, extractor_version: str, fingerprint: str | None = None
    ) -> None:
        """`fingerprint`: what the graph holds for the story once synced (`entity_sync`)."""
        ...

    def set_named_things(self, story_id: UUID, things: Sequence[NamedThing]) -> None:
        """The names the story itself gives an animal or a work, as of its last graph sync
        (decision 0040); they go with the story."""
        ...

    def named_things_of(self, legacy_id: UUID) -> dict[UUID, tuple[NamedThing, ...]]:
        """The named things of each story of the legacy that gives any: story id -> its names."""
        ...

    def story_graph_lock(self, story_id: UUID) -> AbstractContextManager[None]:
        """Held while the story's graph contributions are written or withdrawn: another writer
        of the same story (a second delivery, a re-link, a delete) waits, so two syncs never
        interleave (decision 0020). Writes made inside it commit on their own, as without it."""
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
        """Story ids (ascending, after `after`) whose chunks or graph facts are behind: their
        recorded digest is not the stored title's and content's `story_digest`."""
        ...

    def counts(self) -> dict[str, int]:
        """How many records of each kind are stored."""
        ...


class FailureLog(Protocol):
    """Stories whose ingestion failed for good, with the error (never story text)."""

    def record_ingest_failure(self, story_id: UUID, error: str, cause: str) -> None: ...


class StoryStore(RecordWriter, AccessReads, ProcessingLedger, FailureLog, Protocol):
    """The permission source of truth, all four parts (PostgreSQL implements them together)."""


class CurationStore(Protocol):
    """Curation's records (PostgreSQL): merges with what they changed, kept-apart pairs, graph
    impact since the last community build, and the community summaries per tier."""

    def record_merge(self, merge: MergeRecord) -> None: ...
    def get_merge(self, merge_id: UUID) -> MergeRecord | None: ...
    def active_merges(self, legacy_id: UUID) -> list[MergeRecord]:
        """Merges not undone, oldest first."""
        ...

    def mark_unmerged(self, merge_id: UUID, user_id: UUID) -> bool:
        """False when the merge was already undone."""
        ...

    def keep_apart(self, legacy_id: UUID, a: str, b: str, user_id: UUID) -> None: ...
    def kept_apart(self, legacy_id: UUID) -> set[frozenset[str]]: ...
    def record_impact(self, legacy_id: UUID, changes: int) -> None: ...
    def impact(self, legacy_id: UUID) -> ImpactState: ...
    def spend_impact(self, legacy_id: UUID, spent: int, build: RebuildKind) -> None:
        """A build read `spent` impact and ran: subtract it (what came in meanwhile stays)."""
        ...

    def save_communities(self, legacy_id: UUID, tier: Tier, communities: Sequence[CommunitySummary]) -> None:
        """Replace the tier's communities."""
        ...

    def communities(self, legacy_id: UUID, tier: Tier) -> list[CommunitySummary]: ...

    # -- staging (docs/architecture.md#staging) --
    def staging_enabled(self, legacy_id: UUID) -> bool: ...
    def set_staging(self, legacy_id: UUID, enabled: bool) -> None: ...
    def save_extraction(self, story_id: UUID, digest: str, version: str, entities: ExtractedEntities) -> None:
        """The extraction a staged story's graph is re-synced from when a curator decides."""
        ...

    def extraction(self, story_id: UUID) -> tuple[str, str, ExtractedEntities] | None:
        """(content hash, extractor version, entities) saved for the story."""
        ...

    def stage(self, story_id: UUID, digest: str, items: Sequence[StagedItem]) -> None:
        """Stage the story's items for its text `digest`: add those not staged yet (by id); a new
        item whose story approved the same label and name under an earlier text enters approved,
        with that edit. Items of the story's earlier texts still pending are dropped (nobody
        decided them; the new text's items stand for them); decided ones stay (history,
        rejections keyed on their text)."""
        ...

    def staged_of_story(self, story_id: UUID, digest: str) -> list[StagedItem]: ...
    def staged(self, legacy_id: UUID, status: StagedStatus | None = None) -> list[StagedItem]:
        """Oldest first."""
        ...

    def get_staged(self, item_id: UUID) -> StagedItem | None: ...
    def decide(self, item: StagedItem) -> None:
        """Store the item's status, edit and decider."""
        ...

    # -- changelog --
    def record_change(self, change: GraphChange) -> None: ...
    def changes(self, legacy_id: UUID, *, before: int | None = None, limit: int = 50) -> list[GraphChange]:
        """Newest first; with `before`, those with a smaller id."""
        ...


class VectorIndex(Protocol):
    """Story chunks with embeddings; searches only what a `ReadScope` grants."""

    def replace_chunks(self, story_id: UUID, chunks: Sequence[EmbeddedChunk], content_hash: str) -> None: ...
    def indexed_hash(self, story_id: UUID) -> str | None: ...
    def delete_chunks(self, story_id: UUID) -> None: ...
    def search(
        self, embedding: Sequence[float], scope: ReadScope, k: int, *, also: Sequence[tuple[UUID, int]] = ()
    ) -> list[ChunkResult]:
        """The `k` nearest readable chunks, nearest first; then the readable chunks `also` names
        (story id, chunk index) that are not among them, with their similarity too."""
        ...

    def search_text(self, text: str, scope: ReadScope, k: int) -> list[ChunkResult]:
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

    def fits(self, text: str) -> bool:
        """Does the model read all of `text` (rather than cut off or refuse the rest)?"""
        ...


class Reranker(Protocol):
    """Scores documents against a query again (a cross-encoder, Bedrock's Rerank API, or term
    overlap). `weight` is how much its relevance counts beside ranking's score
    (heirloom.domain.rerank)."""

    name: str
    weight: float

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Each document's relevance to `query`, 0..1, in the documents' order."""
        ...


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


class ConversationStore(Protocol):
    """Conversation memory (PostgreSQL; docs/decisions/0018): the per-legacy switch, each
    conversation's messages and the facts extracted from its owner's messages."""

    def memory_enabled(self, legacy_id: UUID) -> bool: ...
    def set_memory(self, legacy_id: UUID, enabled: bool) -> None: ...
    def messages(self, conversation_id: UUID, last: int | None = None) -> list[ConversationMessage]:
        """The conversation's messages in order (`last`: only the last so many)."""
        ...

    def add_message(self, message: ConversationMessage, facts: Sequence[ConversationFact]) -> bool:
        """Store the message and its facts together; False (nothing stored) when the
        conversation already has a message at `message.seq`, or was deleted."""
        ...

    def deleted_owner(self, conversation_id: UUID) -> tuple[UUID, UUID] | None:
        """(legacy, user) of a deleted conversation: its id stays deleted; None if it never was."""
        ...

    def facts_of(self, legacy_id: UUID, user_id: UUID, limit: int) -> list[ConversationFact]:
        """The user's own conversation facts in the legacy, newest first."""
        ...

    def conversations_of(
        self,
        legacy_id: UUID,
        user_id: UUID,
        limit: int | None = None,
        after: tuple[datetime, UUID] | None = None,
    ) -> list[ConversationSummary]:
        """The user's own conversations in the legacy, by (last message time, id) descending:
        at most `limit`, those after `after` in that order."""
        ...

    def facts_in(
        self,
        legacy_id: UUID,
        user_id: UUID,
        conversation_id: UUID,
        limit: int | None = None,
        after: tuple[int, UUID] | None = None,
    ) -> list[ConversationFact]:
        """The facts of the conversation when it is the user's in the legacy (else none), by
        (message seq, id): at most `limit`, those after `after`."""
        ...

    def delete_conversation(self, legacy_id: UUID, user_id: UUID, conversation_id: UUID) -> tuple[int, int]:
        """Remove the conversation's messages and facts together when it is the user's in the
        legacy, leaving its id deleted for good; (messages, facts) removed, (0, 0) when it is not
        theirs or unknown."""
        ...

    def delete_fact(self, legacy_id: UUID, user_id: UUID, fact_id: UUID) -> ConversationFact | None:
        """Remove one of the user's facts in the legacy; None (nothing removed) when not theirs."""
        ...

    def forget_member(self, legacy_id: UUID, user_id: UUID) -> int:
        """Remove every conversation of the user in the legacy (their messages and facts; their
        ids stay deleted); how many messages went."""
        ...


class EntityExtractor(Protocol):
    """Extracts entities from one story. Returns raw candidates with confidences; callers apply
    `postprocess` (or use `extract_entities`, which does)."""

    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities: ...


class ObjectStore(Protocol):
    def size(self, bucket: str, key: str) -> int: ...
    def read(self, bucket: str, key: str) -> bytes: ...
    def tag(self, bucket: str, key: str, tags: dict[str, str]) -> None: ...


class ContextWorkflow(Protocol):
    """Runs the context-assembly workflow synchronously; raises the typed errors of
    heirloom.errors (InvalidRequest, AccessDenied, NotFound, StoreUnavailable) or WorkflowFailed."""

    def run(self, request: ContextRequest) -> AssembledContext: ...


class ConnectionsWorkflow(Protocol):
    """Runs the story_connections workflow synchronously; raises as ContextWorkflow does."""

    def run(self, request: ConnectionsRequest) -> StoryConnections: ...


State = Literal["closed", "open", "half_open"]


class BreakerRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    state: State = "closed"
    failures: int = 0
    opened_at: float = 0.0
    version: int = 0


class BreakerStore(Protocol):
    def load(self, name: str) -> BreakerRecord: ...

    def save(self, name: str, record: BreakerRecord, expected_version: int) -> bool:
        """Write `record` if the stored version is still `expected_version`; False if not."""
        ...
