"""The ingestion and backfill workflows' edges."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from heirloom.contracts.extraction import ExtractedEntities


class _Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IngestRequest(_Edge):
    """Input of the ingest_story workflow and of each of its steps."""

    story_id: UUID


class ChunkEmbedResult(_Edge):
    kind: Literal["chunks"] = "chunks"
    story_id: UUID
    status: Literal["indexed", "up_to_date", "deleted"]
    content_hash: str | None = None
    chunks: int = 0


class ExtractionResult(_Edge):
    kind: Literal["entities"] = "entities"
    story_id: UUID
    status: Literal["extracted", "up_to_date", "deleted"]
    content_hash: str | None = None
    extractor_version: str = ""
    entities: ExtractedEntities = ExtractedEntities()


StepResult = Annotated[ChunkEmbedResult | ExtractionResult, Field(discriminator="kind")]


class GraphSyncInput(_Edge):
    story_id: UUID
    results: tuple[StepResult, ...] = Field(min_length=1, max_length=2)


class GraphSyncResult(_Edge):
    story_id: UUID
    status: Literal["synced", "up_to_date", "deleted", "stale"]
    entities: dict[str, int] = Field(default_factory=dict)
    mentions: int = 0
    unresolved: int = 0


#: an error name or cause as recorded: a NUL (which PostgreSQL cannot store) must not lose the record
ErrorText = Annotated[str, AfterValidator(lambda text: text.replace("\x00", "\ufffd"))]


class IngestFailure(_Edge):
    """What IngestFailed records for replay: the step's error, never story text."""

    story_id: UUID
    error: ErrorText = Field(max_length=200)
    cause: ErrorText = Field(default="", max_length=2000)


class BackfillRequest(_Edge):
    after: UUID | None = None
    page_size: int = Field(default=50, ge=1, le=500)


class BackfillPage(_Edge):
    story_ids: tuple[UUID, ...]
    next: BackfillRequest
    done: bool
