"""The ingestion and backfill workflows' edges."""

from __future__ import annotations

from datetime import datetime
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
    #: the story's `story_digest` (title and content) the chunks were built from
    content_hash: str | None = None
    chunks: int = 0


class ExtractionResult(_Edge):
    kind: Literal["entities"] = "entities"
    story_id: UUID
    status: Literal["extracted", "up_to_date", "deleted"]
    #: the story's `story_digest` (title and content) the entities were extracted from
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


class IngestFailureRecorded(_Edge):
    """IngestFailed's answer: the failure is in the ledger, to be replayed."""

    story_id: UUID
    recorded: bool = True


class ImportResult(_Edge):
    """One S3 object of an import: stored (`change` says how), rejected or gone (`reason`)."""

    key: str
    status: Literal["imported", "rejected", "missing"]
    change: str | None = None
    reason: str | None = None


class ImportResults(_Edge):
    results: tuple[ImportResult, ...]


class StoryEventApplied(_Edge):
    """StoryEvents' answer: what applying the event changed in the records."""

    detail_type: str
    change: str


#: a STANDARD execution stops at 25,000 history events (AWS: "Step Functions service quotas"); a
#: story costs ~20 in the backfill, ~27 with the page overhead of 2-story pages
#: (tests/statemachines/test_backfill_continuation.py measures it), and each retry a few more:
#: 600 x 27 keeps a third of the limit spare
MAX_STORIES_PER_EXECUTION = 600
#: name prefix of the executions a backfill starts to continue itself (`BackfillPage`)
CONTINUATION_PREFIX = "continued-"


class BackfillRequest(_Edge):
    """The backfill's cursor. An execution plans at most `stories_per_execution` stories, then
    starts a new execution with the cursor (`continued_from` names the one it continues) and
    ends, so no execution nears the history limit however many stories are behind."""

    after: UUID | None = None
    page_size: int = Field(default=50, ge=1, le=500)
    stories_per_execution: int = Field(default=500, ge=1, le=MAX_STORIES_PER_EXECUTION)
    #: stories this execution has planned so far
    planned: int = Field(default=0, ge=0)
    #: execution ARN this one continues; None for a run started by the schedule or by hand
    continued_from: str | None = Field(default=None, max_length=2048)


class ExecutionRef(_Edge):
    """The running execution, from the Step Functions context object (`$$.Execution`)."""

    id: str = Field(min_length=1, max_length=2048)
    name: str = Field(min_length=1, max_length=80)
    start_time: datetime
    state_machine: str = Field(min_length=1, max_length=2048)


class BackfillPlanInput(_Edge):
    request: BackfillRequest = BackfillRequest()
    #: absent when the function is invoked on its own (no run-at-a-time check, no continuation)
    execution: ExecutionRef | None = None


class RunningExecution(_Edge):
    arn: str
    name: str
    start_time: datetime


class BackfillPage(_Edge):
    story_ids: tuple[UUID, ...]
    next: BackfillRequest
    done: bool
    #: this execution has planned its share: after this page it starts a new execution with
    #: `next` (named `continuation_name`) and ends
    continue_as_new: bool = False
    continuation_name: str | None = None
