"""The ingestion workflow's steps (chunk + embed, extract, graph sync) and backfill planning.

Each step reads the story from PostgreSQL by id, so a replayed or reordered step works on the
current content, and skips work already done for the same content hash / model / extractor.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID, uuid4

from heirloom.contracts.ingestion import (
    CONTINUATION_PREFIX,
    BackfillPage,
    BackfillRequest,
    ChunkEmbedResult,
    ExecutionRef,
    ExtractionResult,
    GraphSyncInput,
    GraphSyncResult,
    RunningExecution,
)
from heirloom.domain.chunking import content_hash
from heirloom.domain.ingestion import (
    CHUNK_FORMAT,
    IngestionPorts,
    deleted_meanwhile,
    extract_story,
    index_story,
    sync_entities,
)
from heirloom.errors import Conflict
from heirloom.ports import BackfillRuns


def chunk_embed_step(ports: IngestionPorts, story_id: UUID) -> ChunkEmbedResult:
    story = ports.stories.get_story(story_id)
    if story is None:
        return ChunkEmbedResult(story_id=story_id, status="deleted")
    digest = content_hash(story.content)
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


def extract_step(ports: IngestionPorts, story_id: UUID) -> ExtractionResult:
    story = ports.stories.get_story(story_id)
    if story is None:
        return ExtractionResult(story_id=story_id, status="deleted")
    digest = content_hash(story.content)
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


def graph_sync_step(ports: IngestionPorts, data: GraphSyncInput) -> GraphSyncResult:
    extraction = next((r for r in data.results if isinstance(r, ExtractionResult)), None)
    story = ports.stories.get_story(data.story_id)
    if story is None:
        return GraphSyncResult(story_id=data.story_id, status="deleted")
    if extraction is None or extraction.status != "extracted":
        return GraphSyncResult(story_id=data.story_id, status="up_to_date")
    digest = content_hash(story.content)
    if extraction.content_hash != digest:  # the story changed since extraction: a newer run syncs it
        return GraphSyncResult(story_id=data.story_id, status="stale")
    try:
        report = sync_entities(ports, story, extraction.entities, digest)
    except Exception:
        if deleted_meanwhile(ports, data.story_id):
            return GraphSyncResult(story_id=data.story_id, status="deleted")
        raise
    if deleted_meanwhile(ports, data.story_id):
        return GraphSyncResult(story_id=data.story_id, status="deleted")
    return GraphSyncResult(
        story_id=data.story_id,
        status="synced",
        entities=report.entities,
        mentions=report.mentions,
        unresolved=len(report.unresolved),
    )


def rival_backfill(me: ExecutionRef, running: Iterable[RunningExecution]) -> RunningExecution | None:
    """The running execution a freshly started backfill must yield to, if any.

    A continuation (named `CONTINUATION_PREFIX...`) carries a run in progress and never yields;
    a fresh start yields to every continuation and to every fresh start older than itself, so
    of two runs started together the older goes on and of a chain and a new run the chain does.
    """
    for other in running:
        if other.arn == me.id:
            continue
        if other.name.startswith(CONTINUATION_PREFIX) or (other.start_time, other.name) < (
            me.start_time,
            me.name,
        ):
            return other
    return None


def plan_backfill(
    ports: IngestionPorts,
    request: BackfillRequest,
    *,
    execution: ExecutionRef | None = None,
    runs: BackfillRuns | None = None,
) -> BackfillPage:
    """The next page of stories whose index or graph is behind their content, model or extractor.

    A fresh execution (`continued_from` unset, nothing planned yet) first checks that no other
    backfill runs (`rival_backfill`). Once the execution has planned `stories_per_execution`
    stories, the page says to continue as a new execution with the cursor.
    """
    if execution is not None and runs is not None and request.planned == 0 and not request.continued_from:
        rival = rival_backfill(execution, runs.running(execution.state_machine))
        if rival is not None:
            raise Conflict(
                f"backfill execution {rival.name} (started {rival.start_time.isoformat()}) is running;"
                f" {execution.name} stops without planning"
            )
    ids = ports.stories.stories_needing_processing(
        after=request.after,
        limit=request.page_size,
        embedder=ports.embedder.model_id,
        extractor_version=ports.extractor_version if ports.extractor is not None else None,
        chunk_format=CHUNK_FORMAT,
    )
    done = len(ids) < request.page_size
    planned = request.planned + len(ids)
    handover = execution is not None and not done and planned >= request.stories_per_execution
    cursor = request.model_copy(update={"after": ids[-1] if ids else request.after})
    return BackfillPage(
        story_ids=tuple(ids),
        next=cursor.model_copy(update={"planned": 0, "continued_from": execution.id})
        if handover and execution is not None
        else cursor.model_copy(update={"planned": planned}),
        done=done,
        continue_as_new=handover,
        continuation_name=f"{CONTINUATION_PREFIX}{uuid4()}" if handover else None,
    )
