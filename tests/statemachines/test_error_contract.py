"""The error contract: every handler leaves with one of `ERROR_TYPES` as its errorType, and the
workflows' `ErrorEquals` name only those (plus `States.*` and `Lambda.*`). Step Functions matches
`ErrorEquals` against the errorType string, not Python's class tree (AWS docs, "Handling errors
in Step Functions workflows"), so a subclass the ASL does not name skips its Retry.

The fault matrix injects every adapter error at every Task of the three workflows, raised
through the real `error_contract` in stand-in functions, and checks the path moto's
interpreter takes: a retry that absorbs a transient failure, the Catch that records a
permanent one, the fallback of the context workflow, or a failed execution with the typed name.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from heirloom import errors
from heirloom.errors import (
    ERROR_TYPES,
    AccessDenied,
    Conflict,
    GraphProtocolError,
    GraphQueryRejected,
    GraphRequestError,
    GraphThrottled,
    GraphTimeout,
    GraphUnavailable,
    HeirloomError,
    InternalError,
    InvalidRequest,
    MalformedGraphQuery,
    MalformedModelOutput,
    ModelAccessDenied,
    ModelError,
    ModelRequestRejected,
    NotFound,
    Rejected,
    Retryable,
    StoreUnavailable,
    Throttled,
    VectorUnavailable,
    error_contract,
    reduce_error,
)
from heirloom_dev.functions import LambdaContext, function_names, load_handler
from heirloom_dev.workflow import LocalWorkflows
from tests.statemachines.test_context_assembly_routing import REQUEST, Recorder
from tests.support.faults import instant_retries

#: HEIRLOOM_LONG=1: every adapter error at every Task (by default, every one at the graph Tasks
#: and one per contract path at the others)
LONG = os.environ.get("HEIRLOOM_LONG") == "1"
STATEMACHINES = Path(__file__).parents[2] / "statemachines"
RETRIED = {"Retryable", "StoreUnavailable"}


def _request_error(kind: type[GraphRequestError], code: str, status: int) -> GraphRequestError:
    return kind(f"Neptune {code} (HTTP {status})", code=code, status=status, request_id="r-1", detail="q")


#: every error an adapter raises (and what escapes them), with the errorType it must leave as
ADAPTER_ERRORS: list[tuple[BaseException, str]] = [
    (GraphUnavailable("graph store unavailable: Connection refused"), "Retryable"),
    (GraphTimeout("Neptune did not answer within 3.0 s"), "Retryable"),
    (GraphProtocolError("Neptune answered 200 with a body that is not JSON"), "Retryable"),
    (_request_error(GraphRequestError, "InternalFailureException", 500), "Retryable"),
    (_request_error(GraphThrottled, "ThrottlingException", 429), "Retryable"),
    (_request_error(GraphThrottled, "ConcurrentModificationException", 500), "Retryable"),
    (_request_error(GraphQueryRejected, "AccessDeniedException", 403), "Rejected"),
    (_request_error(MalformedGraphQuery, "MalformedQueryException", 400), "Rejected"),
    (VectorUnavailable("pgvector down"), "Retryable"),
    (StoreUnavailable("PostgreSQL unavailable"), "StoreUnavailable"),
    (psycopg.OperationalError("server closed the connection unexpectedly"), "StoreUnavailable"),
    (psycopg.errors.DeadlockDetected("deadlock detected"), "Retryable"),
    (Throttled("ThrottlingException", code="ThrottlingException"), "Retryable"),
    (ModelError("model failed"), "Rejected"),
    (ModelRequestRejected("ValidationException", code="ValidationException"), "Rejected"),
    (ModelAccessDenied("AccessDeniedException", code="AccessDeniedException"), "Rejected"),
    (MalformedModelOutput("no tool call"), "Rejected"),
    (InvalidRequest("story.title: Field required"), "InvalidRequest"),
    (AccessDenied("not a member"), "AccessDenied"),
    (NotFound("legacy"), "NotFound"),
    (Conflict("another backfill run is under way"), "Conflict"),
    (KeyError("a bug"), "InternalError"),
]
IDS = [
    type(e).__name__ + ("" if not isinstance(e, GraphRequestError) else f"-{e.code}")
    for e, _ in ADAPTER_ERRORS
]


#: one error per path a workflow can take: retried as Retryable, retried as StoreUnavailable,
#: caught as permanent (a dependency's refusal, or a bug)
REPRESENTATIVES = ("GraphThrottled-ThrottlingException", "OperationalError", "MalformedGraphQuery-MalformedQueryException",
                   "KeyError")  # fmt: skip


def matrix(every: set[str], others: list[str]) -> list[Any]:
    """(task, error, expected) cases: every adapter error at the `every` Tasks (all Tasks with
    HEIRLOOM_LONG=1), the representatives at the `others`."""
    cases = []
    for task in sorted(every | set(others)):
        for (error, expected), name in zip(ADAPTER_ERRORS, IDS, strict=True):
            if LONG or task in every or name in REPRESENTATIVES:
                cases.append(pytest.param(task, error, expected, id=f"{task}-{name}"))
    return cases


# -- the names ----------------------------------------------------------------------------------
def _error_equals(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ErrorEquals":
                yield from value
            else:
                yield from _error_equals(value)
    elif isinstance(node, list):
        for item in node:
            yield from _error_equals(item)


def test_every_error_equals_names_a_contract_error():
    names = {
        (path.name, name)
        for path in sorted(STATEMACHINES.glob("*.json"))
        for name in _error_equals(json.loads(path.read_text()))
    }
    assert len(names) > 10
    outside = sorted(
        f"{file}: {name}"
        for file, name in names
        # StepFunctions.*: errors of a service integration (the backfill's StartExecution), not
        # of a handler
        if name not in ERROR_TYPES and not name.startswith(("States.", "Lambda.", "StepFunctions."))
    )
    assert outside == []
    # the retried names are what the ingestion workflows retry on
    assert {name for _, name in names} >= RETRIED


def test_the_contract_names_are_classes_of_errors_py():
    for name in ERROR_TYPES:
        assert issubclass(getattr(errors, name), HeirloomError)


def test_every_error_class_of_errors_py_has_a_decided_errortype():
    """A new error class in errors.py must be placed in the table above (and so in the matrix)."""
    classes = {
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, HeirloomError) and cls.__module__ == errors.__name__
    }
    covered = {type(e) for e, _ in ADAPTER_ERRORS} | {HeirloomError, Retryable, Rejected, InternalError}
    assert sorted(c.__name__ for c in classes - covered) == []


@pytest.mark.parametrize(("error", "expected"), ADAPTER_ERRORS, ids=IDS)
def test_reduce_error_gives_the_contract_name_and_keeps_the_original_class_in_the_message(error, expected):
    reduced = reduce_error(error)
    assert type(reduced).__name__ == expected and expected in ERROR_TYPES
    if type(error).__name__ != expected:
        assert str(reduced).startswith(type(error).__name__)
    if isinstance(error, GraphRequestError):
        assert error.detail not in str(reduced).split(":", 1)[1]  # the service's detail stays out


def test_an_unexpected_error_leaves_without_its_text():
    reduced = reduce_error(ValueError("story text: Ada was sick"))
    assert isinstance(reduced, InternalError) and str(reduced) == "ValueError"


def test_every_handler_is_wrapped_by_the_error_contract():
    names = function_names()
    assert len(names) == 16
    unwrapped = [n for n in names if not getattr(load_handler(n), "__heirloom_error_contract__", False)]
    assert unwrapped == []


def test_a_real_handler_raises_a_contract_name():
    """ChunkEmbed whose PostgreSQL connection drops mid-query: the Lambda errorType (the class
    name) is `StoreUnavailable`, which the workflow retries, not psycopg's `OperationalError`."""
    from types import SimpleNamespace

    from tests.support.services import services_with

    def get_story(story_id: Any) -> Any:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    ingestion = SimpleNamespace(stories=SimpleNamespace(get_story=get_story))
    handler = load_handler("chunk_embed")
    with pytest.raises(StoreUnavailable) as caught:
        handler({"story_id": STORY}, LambdaContext("ChunkEmbed"),
                services=services_with(ingestion=ingestion))  # fmt: skip
    assert type(caught.value).__name__ == "StoreUnavailable"
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)


# -- the fault matrix ---------------------------------------------------------------------------
class Flaky:
    """A stand-in function that fails `times` times with `error` (through the real error
    contract), then answers `result`."""

    def __init__(self, error: BaseException, result: Any, times: int = 1):
        self.error, self.result, self.times, self.calls = error, result, times, 0

    def __call__(self, event: Any, context: Any) -> Any:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return self.result


def contract(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return error_contract(fn)


class FailureLog:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, event: Any, context: Any) -> Any:
        self.errors.append(event["error"])
        return {"recorded": True}


@pytest.fixture(scope="module")
def started() -> Iterator[tuple[LocalWorkflows, list[float]]]:
    with instant_retries() as waits, LocalWorkflows(Recorder().functions()).start() as wf:
        yield wf, waits


@pytest.fixture
def workflows(started: tuple[LocalWorkflows, list[float]]) -> tuple[LocalWorkflows, list[float]]:
    """The three workflows (stand-in functions), with the Retry waits of this test only."""
    started[1].clear()
    return started


STORY = "00000000-0000-4000-8000-0000000000aa"
HEALTHY: dict[str, Any] = {
    "ChunkEmbed": {"story_id": STORY, "status": "indexed"},
    "ExtractEntities": {"story_id": STORY, "status": "up_to_date"},
    "GraphSync": {"story_id": STORY, "status": "synced"},
    # BackfillPage in full: the ASL's ResultSelector reads every field
    "BackfillPlan": {
        "story_ids": [STORY],
        "next": {"after": STORY, "page_size": 1},
        "done": True,
        "continue_as_new": False,
        "continuation_name": None,
    },
}


def _arm(wf: LocalWorkflows, task: str, error: BaseException) -> tuple[Flaky, FailureLog]:
    """Every ingestion function healthy but `task`, which fails once with `error`."""
    flaky = Flaky(error, HEALTHY[task])
    log = FailureLog()
    wf.overrides.clear()
    wf.overrides.update(
        {name: contract(Flaky(KeyError(), result, times=0)) for name, result in HEALTHY.items()}
    )
    wf.overrides.update({task: contract(flaky), "IngestFailed": log})
    return flaky, log


@pytest.mark.parametrize(
    ("task", "error", "expected"), matrix({"GraphSync"}, ["ChunkEmbed", "ExtractEntities"])
)
def test_ingest_story_retries_transient_errors_and_records_the_others(workflows, task, error, expected):
    wf, waits = workflows
    flaky, log = _arm(wf, task, error)
    ex = wf.run("ingest_story", {"story_id": STORY}, history=False)
    if expected in RETRIED:  # one failure, absorbed by the Retry: nothing recorded
        assert ex.status == "SUCCEEDED" and flaky.calls == 2 and log.errors == []
        assert len(waits) == 1 and 0 <= waits[0] <= 2
    else:  # straight to the Catch: recorded for replay under its contract name
        assert ex.status == "FAILED" and ex.error == "IngestionFailed"
        assert flaky.calls == 1 and log.errors == [expected] and waits == []


@pytest.mark.parametrize(
    ("task", "error", "expected"), matrix({"GraphSync"}, ["BackfillPlan", "ChunkEmbed", "ExtractEntities"])
)
def test_backfill_retries_transient_errors_and_records_or_fails_on_the_others(
    workflows, task, error, expected
):
    wf, _ = workflows
    flaky, log = _arm(wf, task, error)
    ex = wf.run("backfill", {"next": {"after": None, "page_size": 1}, "pace_seconds": 0}, history=False)
    if expected in RETRIED:
        assert ex.status == "SUCCEEDED" and flaky.calls == 2 and log.errors == []
    elif task == "BackfillPlan":  # no Catch around the planner: the execution fails, typed
        assert ex.status == "FAILED" and ex.error == expected and flaky.calls == 1
    else:  # the page goes on; the story's failure is recorded
        assert ex.status == "SUCCEEDED" and flaky.calls == 1 and log.errors == [expected]


def test_a_retryable_error_that_persists_exhausts_the_retries_then_is_recorded(workflows):
    wf, waits = workflows
    flaky, log = _arm(wf, "GraphSync", _request_error(GraphThrottled, "ThrottlingException", 429))
    flaky.times = 100
    ex = wf.run("ingest_story", {"story_id": STORY}, history=False)
    assert ex.status == "FAILED" and flaky.calls == 5 and log.errors == ["Retryable"]
    assert len(waits) == 4 and all(0 <= w <= cap for w, cap in zip(waits, (2, 4, 8, 16), strict=True))


#: the context workflow's Task -> the state its failure leads to (None: the execution fails)
CONTEXT_PATHS = {
    "IntentAnalysis": "IntentFallback",
    "VectorSearch": "VectorFailed",
    "GraphTraversal": "GraphFailed",
    "AccessFilter": None,
    "RankAssemble": None,
}


@pytest.mark.parametrize(
    ("task", "error", "expected"),
    matrix({"GraphTraversal", "AccessFilter"}, ["IntentAnalysis", "VectorSearch", "RankAssemble"]),
)
def test_context_assembly_falls_back_or_fails_with_the_contract_name(workflows, task, error, expected):
    wf, waits = workflows
    recorder = Recorder(**{task: error})
    wf.overrides.clear()
    wf.overrides.update(recorder.functions())
    wf.overrides[task] = contract(wf.overrides[task])
    ex = wf.run("context_assembly", {"request": REQUEST})
    assert len(recorder.calls[task]) == 1 and waits == []  # never retried: the request has a budget
    fallback = CONTEXT_PATHS[task]
    if fallback is not None:
        assert ex.status == "SUCCEEDED" and fallback in ex.states_entered()
    else:
        assert ex.status == "FAILED" and ex.error == expected and ex.output is None


def test_the_api_maps_only_contract_names():
    """The context API turns a failed execution's error name into a status: only names a
    handler can raise (or Step Functions' own) have a mapping; the rest are a 500."""
    from heirloom.domain.context_api import ERROR_TYPES as API_ERRORS

    assert {n for n in API_ERRORS if not n.startswith("States.")} <= ERROR_TYPES
