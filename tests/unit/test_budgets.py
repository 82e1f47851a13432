"""Hard deadlines: a call that hangs is abandoned at its budget; the graph step reports a timeout
(and counts it against the breaker) instead of waiting for a query that never returns."""

import threading
import time
from uuid import UUID

import pytest

from heirloom.contracts.context import ContextRequest, GraphTraversalInput, Intent, QueryIntent
from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.domain.deadline import DeadlineExceeded, call_within
from heirloom.domain.gazetteer import Gazetteer
from heirloom.domain.intent_step import IntentRequest, analyse_intent
from heirloom.steps.graph_traversal import graph_traversal_step


def test_call_within_returns_the_value_or_raises_the_calls_own_error():
    assert call_within(1.0, lambda: 42) == 42
    with pytest.raises(KeyError, match="boom"):
        call_within(1.0, lambda: {}["boom"])


def test_call_within_abandons_a_call_that_does_not_return_in_time():
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        call_within(0.05, lambda: release.wait(5))
    assert time.monotonic() - started < 1.0
    release.set()


class HangingGraph:
    prefix = "t"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def run(self, cypher, params=None):
        self.calls += 1
        self.release.wait(2)  # a query that hangs (until the test ends)
        return []


def test_a_hanging_graph_query_is_cut_off_at_the_traversal_budget():
    graph = HangingGraph()
    store = InMemoryBreakerStore()
    request = ContextRequest(legacy_id=UUID(int=1), user_id=UUID(int=2), persona="family", query="Who?")
    started = time.monotonic()
    try:
        branch = graph_traversal_step(
            GraphTraversalInput(request=request, intent=QueryIntent()),
            graph,
            CircuitBreaker(store),
            budget_ms=100,
        )
    finally:
        graph.release.set()
    elapsed_ms = (time.monotonic() - started) * 1000
    assert branch.graph.status == "timeout" and branch.graph.hits == () and graph.calls == 1
    assert elapsed_ms < 100 * 1.2 + 200, elapsed_ms  # budget + grace + scheduling slack
    assert store.load("graph").failures == 1


class SlowModel:
    """An intent model that answers confidently after `delay_s`, with the budget it was given."""

    def __init__(self, budget_s: float, delay_s: float) -> None:
        self.budget_s = budget_s
        self.delay_s = delay_s
        self.release = threading.Event()

    def classify(self, request):
        self.release.wait(self.delay_s)
        return QueryIntent(intent=Intent.TEMPORAL, confidence=0.95, source="llm")


def _ask(model: SlowModel) -> QueryIntent:
    gazetteer = Gazetteer.build([("p0", "Person", "Edith Marlowe", [])])
    try:
        return analyse_intent(IntentRequest("Tell me about her", (), gazetteer, "Edith Marlowe", "l"), model)
    finally:
        model.release.set()


def test_the_intent_model_is_cut_at_its_own_budget_not_a_fixed_half_second():
    """INTENT_BUDGET_MS reaches the model call (it used to be cut at a hard-coded 0.5 s)."""
    assert _ask(SlowModel(budget_s=3.0, delay_s=0.8)).source == "llm"
    assert _ask(SlowModel(budget_s=0.05, delay_s=2.0)).source == "rules"


def test_call_within_hands_a_late_value_to_its_late_callback():
    release, arrived = threading.Event(), threading.Event()
    got: list[int] = []
    with pytest.raises(DeadlineExceeded):
        call_within(0.05, lambda: release.wait(5) and 7, late=lambda v: (got.append(v), arrived.set()))
    release.set()
    assert arrived.wait(5) and got == [7]
    assert call_within(1.0, lambda: 8, late=got.append) == 8 and got == [7]  # on time: returned only


class SlowNamesGraph:
    """A graph whose entity-name query answers only when released."""

    prefix = "t"

    def __init__(self) -> None:
        self.release, self.answered = threading.Event(), threading.Event()
        self.calls = 0

    def run(self, cypher, params=None):
        self.calls += 1
        self.release.wait(5)
        self.answered.set()
        return [
            {
                "id": "p1",
                "label": "Place",
                "name": "Heron Lake",
                "legacy": str(params["ids"][0]),
                "alias": False,
            }
        ]


def test_entity_names_over_their_budget_are_the_next_builds_and_never_asked_twice_at_once(monkeypatch):
    from heirloom.adapters.memory import MemoryStoryStore
    from heirloom.contracts.records import Legacy
    from heirloom.domain import intent_step
    from heirloom.domain.intent_step import GazetteerCache, build_gazetteer

    monkeypatch.setattr(intent_step, "GRAPH_NAMES_BUDGET_S", 0.05)
    store, graph, cache = MemoryStoryStore(), SlowNamesGraph(), GazetteerCache()
    legacy = Legacy(id=UUID(int=1), name="L", subject_person_id=UUID(int=2))
    store.upsert_legacy(legacy)

    def build() -> tuple[list[str], list[str]]:
        degraded: list[str] = []
        gazetteer, _ = build_gazetteer(legacy.id, store, graph, degraded=degraded, late=cache.late_names)
        return [e.name for e in gazetteer.entries if e.label == "Place"], degraded

    assert build() == ([], ["DeadlineExceeded"])  # over its budget: persons only
    assert build() == ([], ["DeadlineExceeded"]) and graph.calls == 1  # still running: not sent again
    graph.release.set()
    assert graph.answered.wait(5)
    waited = time.monotonic() + 5  # the late rows are kept just after the query returns
    while not cache.late_names._arrived and time.monotonic() < waited:
        time.sleep(0.01)
    assert build() == (["Heron Lake"], []) and graph.calls == 1  # the late rows, not a new query
    assert build() == (["Heron Lake"], []) and graph.calls == 2  # kept once: the next build asks
