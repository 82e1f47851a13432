"""BackfillPlan: the next page of stories whose index or graph is behind (continued as a new
execution every `stories_per_execution` stories; one backfill runs at a time)."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import uuid4

from heirloom.contracts.ingestion import (
    CONTINUATION_PREFIX,
    BackfillPage,
    BackfillPlanInput,
    BackfillRequest,
    ExecutionRef,
    RunningExecution,
)
from heirloom.domain.ingestion import IngestionPorts
from heirloom.domain.story_index import chunk_format
from heirloom.errors import Conflict
from heirloom.ports import BackfillRuns
from heirloom.services import Services


def run(data: BackfillPlanInput, services: Services) -> BackfillPage:
    return plan_backfill(
        services.ingestion, data.request, execution=data.execution, runs=services.backfill_runs
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
        chunk_format=chunk_format(ports.chunk_max_tokens),
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
