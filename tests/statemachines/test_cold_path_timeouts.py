"""Every Task's TimeoutSeconds covers the measured cold path of its function (docs/cold-path.json,
written by `heirloom bench --cold-path`) with the stated margin; a cold AccessFilter or
RankAssemble gets one retry on States.Timeout; the context workflow's own timeout holds the worst
case of all of it."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from cdk.naming import lambda_tasks, workflow_files
from heirloom_dev.coldpath import (
    CONTEXT_FUNCTIONS,
    INGESTION_FUNCTIONS,
    NOT_MEASURED,
    TIMEOUT_MARGIN,
    merge_section,
    section_of,
)
from heirloom_dev.functions import state_name
from heirloom_dev.workflow import LocalWorkflows
from tests.statemachines.test_context_assembly_routing import Recorder

ROOT = Path(__file__).parents[2]
ASL = json.loads((ROOT / "statemachines" / "context_assembly.asl.json").read_text())
COLD = json.loads((ROOT / "docs" / "cold-path.json").read_text())
RETRIED = ("AccessFilter", "RankAssemble")


def tasks() -> dict[str, dict]:
    out = {name: state for name, state in ASL["States"].items() if state["Type"] == "Task"}
    for branch in ASL["States"]["Retrieve"]["Branches"]:
        out.update({n: s for n, s in branch["States"].items() if s["Type"] == "Task"})
    return out


def timeout_retry(state: dict) -> dict | None:
    return next((r for r in state.get("Retry", []) if r["ErrorEquals"] == ["States.Timeout"]), None)


def worst_s(name: str) -> int:
    """A Task's longest run made of timeouts: every attempt of its States.Timeout retry."""
    state = tasks()[name]
    retry = timeout_retry(state)
    attempts = 1 + (retry["MaxAttempts"] if retry else 0)
    return state["TimeoutSeconds"] * attempts + (retry["IntervalSeconds"] if retry else 0)


#: (workflow file, Task state, function construct id, TimeoutSeconds) of every Lambda Task
ALL_TASKS = [
    (path.name, t.state, t.construct_id, t.timeout_s)
    for path in workflow_files()
    for t in lambda_tasks(json.loads(path.read_text()))
]
MEASURED = {state_name(f): f for f in COLD["functions"]}


def test_the_measurements_cover_every_task_function_but_the_named_ones():
    assert sorted(COLD["functions"]) == sorted((*CONTEXT_FUNCTIONS, *INGESTION_FUNCTIONS))
    assert {state_name(f) for f in CONTEXT_FUNCTIONS} == set(tasks())
    called = {cid for _, _, cid, _ in ALL_TASKS}
    assert called == set(MEASURED) | {state_name(f) for f in NOT_MEASURED}
    assert COLD["runs"] >= 5


@pytest.mark.parametrize(("workflow", "state", "construct_id", "timeout_s"), ALL_TASKS)
def test_each_task_timeout_covers_the_cold_p95_with_the_margin(workflow, state, construct_id, timeout_s):
    if construct_id not in MEASURED:
        pytest.skip(NOT_MEASURED[next(f for f in NOT_MEASURED if state_name(f) == construct_id)])
    p95_ms = COLD["precompiled"][MEASURED[construct_id]]["total_ms"]["p95"]
    assert timeout_s * 1000 >= p95_ms * TIMEOUT_MARGIN, (workflow, state, p95_ms, timeout_s)


def test_the_cold_access_filter_and_rank_assemble_get_one_retry_on_timeout():
    for name, state in tasks().items():
        retry = timeout_retry(state)
        if name in RETRIED:
            assert retry is not None and retry["MaxAttempts"] == 1, name
        else:
            assert retry is None, name  # the retrieval branches fall back instead


def test_the_workflow_timeout_holds_the_worst_case():
    graph_branch = worst_s("IntentAnalysis") + worst_s("GraphTraversal")
    retrieve = max(graph_branch, worst_s("VectorSearch"))
    worst = retrieve + worst_s("AccessFilter") + worst_s("RankAssemble")
    assert ASL["TimeoutSeconds"] >= worst
    assert ASL["TimeoutSeconds"] <= math.ceil(worst * 1.25)  # and not far above it


def test_the_docs_section_is_kept_by_a_full_bench_run():
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    section = section_of(docs)
    assert section is not None and "| access_filter | precompiled |" in section
    assert section_of(merge_section("# Benchmarks\n\nfull run\n", section)) == section


@pytest.mark.slow
@pytest.mark.parametrize("name", RETRIED)
def test_a_timed_out_first_attempt_is_retried_and_the_request_answers(name):
    timeout = tasks()[name]["TimeoutSeconds"]
    attempts = []

    def cold_then_warm(event):
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            time.sleep(timeout + 0.4)  # a cold start past the Task's timeout
        return {"stage": "filtered"} if name == "AccessFilter" else {"stage": "assembled"}

    rec = Recorder(**{name: cold_then_warm})
    with LocalWorkflows(rec.functions()).start() as wf:
        ex = wf.run("context_assembly", {"request": {
            "legacy_id": "00000000-0000-4000-8000-000000000001", "user_id": "00000000-0000-4000-8000-000000000002",
            "persona": "family", "query": "Who was her brother?"}}, timeout_s=60)  # fmt: skip
    assert ex.status == "SUCCEEDED", (ex.error, ex.cause)
    assert len(attempts) == 2
    assert any(e["type"] == "TaskTimedOut" for e in ex.history)
