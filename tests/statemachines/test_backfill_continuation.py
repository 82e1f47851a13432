"""The backfill at any size, in moto's interpreter with the real handlers on the embedded engines:
an execution plans at most `stories_per_execution` stories, then continues as a new execution
with the cursor; the chain ingests every story exactly once; a second fresh run started while one
is going stops without work."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from heirloom.contracts.ingestion import CONTINUATION_PREFIX, MAX_STORIES_PER_EXECUTION, BackfillRequest
from heirloom_dev.functions import load_handler
from heirloom_dev.workflow import LocalWorkflows
from tests.statemachines.test_ingestion_workflows import store_unprocessed
from tests.support.services import services_with

#: Step Functions' history limit of a STANDARD execution
HISTORY_LIMIT = 25_000
EXTRA_STORIES = 9


@pytest.fixture
def behind(ports, tmp_path):
    """13 stories in PostgreSQL and the structural graph, none indexed or extracted yet."""
    return store_unprocessed(ports, tmp_path / "ds", extra_stories=EXTRA_STORIES)


def recording(folder: str, services: Any, seen: list[str], gate: threading.Event | None = None) -> Any:
    """The real handler of `folder`, noting each story id it is called with (and waiting for
    `gate` first, when given)."""
    handler = load_handler(folder)

    def dispatch(event: Any, context: Any) -> Any:
        seen.append(event["story_id"])
        if gate is not None:
            assert gate.wait(60)
        return handler(event, context, services=services)

    return dispatch


def test_backfill_continues_as_new_executions_and_ingests_every_story_once(behind):
    ports, stories = behind
    services = services_with(ingestion=ports, stories=ports.stories)
    embedded: list[str] = []
    synced: list[str] = []
    overrides = {
        "ChunkEmbed": recording("chunk_embed", services, embedded),
        "GraphSync": recording("graph_sync", services, synced),
    }
    # 2 stories a page, a new execution once 3 are planned: 4 + 4 + 4 + 1
    payload = {"next": {"after": None, "page_size": 2, "stories_per_execution": 3}, "pace_seconds": 0}
    with LocalWorkflows(overrides, services=services).start() as wf:
        chain = wf.run_chain("backfill", payload, timeout_s=120)
        listed = wf.executions("backfill")

        assert [e.status for e in chain] == ["SUCCEEDED"] * 4, [e.cause for e in chain]
        assert all(e.output["continued_as"] for e in chain[:-1])
        assert "continued_as" not in chain[-1].output
        # the first execution was started by hand, the others by their predecessor
        names = sorted(e["name"] for e in listed)
        assert len(listed) == 4 and sum(n.startswith(CONTINUATION_PREFIX) for n in names) == 3

        expected = sorted(str(s.id) for s in stories)
        assert sorted(embedded) == expected and max(Counter(embedded).values()) == 1
        assert sorted(synced) == expected and max(Counter(synced).values()) == 1
        assert all(ports.stories.graph_synced(s.id) for s in stories)
        assert all(ports.vectors.chunks_of(s.id) for s in stories)

        # a second run finds nothing behind: one empty page, one execution
        before = len(wf.invocations)
        again = wf.run_chain("backfill", payload, timeout_s=60)
        assert [e.status for e in again] == ["SUCCEEDED"]
        assert wf.invocations[before:] == ["BackfillPlan"]

    # history per story, page overhead included (2-story pages: the most overhead per story)
    per_story = max(len(e.history) / 4 for e in chain[:-1])
    assert BackfillRequest().stories_per_execution * per_story < HISTORY_LIMIT * 0.6, per_story
    assert MAX_STORIES_PER_EXECUTION * per_story < HISTORY_LIMIT, per_story


def test_a_fresh_backfill_started_while_one_runs_stops_without_work(behind):
    ports, stories = behind
    services = services_with(ingestion=ports, stories=ports.stories)
    gate = threading.Event()
    embedded: list[str] = []
    overrides = {"ChunkEmbed": recording("chunk_embed", services, embedded, gate)}
    payload = {"next": {"after": None, "page_size": 50}, "pace_seconds": 0}
    with LocalWorkflows(overrides, services=services).start() as wf:
        first = wf.start_execution("backfill", payload)
        try:
            while not embedded:  # the first run is ingesting its page
                threading.Event().wait(0.02)
            second = wf.run("backfill", payload, timeout_s=60)
        finally:
            gate.set()
        done = wf.wait(first, timeout_s=120)

    assert second.status == "SUCCEEDED"
    assert second.output["skipped"]["Error"] == "Conflict"
    assert "is running" in second.output["skipped"]["Cause"]
    assert "IngestPage" not in second.states_entered()
    assert done.status == "SUCCEEDED", done.cause
    assert sorted(embedded) == sorted(str(s.id) for s in stories)


def test_a_retried_hand_over_that_already_happened_ends_the_execution_cleanly():
    """StartExecution with the continuation's name after that execution closed (a retry whose
    first response was lost) answers ExecutionAlreadyExists: the hand-over happened."""
    cursor = {"after": None, "page_size": 2, "stories_per_execution": 2, "planned": 0, "continued_from": None}

    def plan(event, context):
        if event["request"].get("continued_from"):  # the continuation: nothing left
            return {"story_ids": [], "next": event["request"], "done": True, "continue_as_new": False,
                    "continuation_name": None}  # fmt: skip
        return {"story_ids": [], "next": {**cursor, "continued_from": event["execution"]["id"]},
                "done": False, "continue_as_new": True, "continuation_name": "continued-fixed"}  # fmt: skip

    with LocalWorkflows({"BackfillPlan": plan}, machines=["backfill"]).start() as wf:
        first = wf.run_chain("backfill", {"next": cursor, "pace_seconds": 0}, timeout_s=60)
        assert [e.status for e in first] == ["SUCCEEDED", "SUCCEEDED"]  # continued-fixed ran and closed
        again = wf.run("backfill", {"next": cursor, "pace_seconds": 0}, timeout_s=60)
    assert again.status == "SUCCEEDED", (again.error, again.cause)
    assert "AlreadyHandedOver" in again.states_entered()
