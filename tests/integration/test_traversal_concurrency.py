"""Concurrent traversal (docs/decisions/0019) on the embedded stack over the sample legacy: the
queries go out together and the result is the sequential run's, hit for hit and fact for fact."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest

from heirloom.contracts.context import ContextRequest, GraphResults, Intent
from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
from heirloom.domain.connections_graph import traverse_connections
from heirloom.domain.intent_step import GazetteerCache
from heirloom.domain.personas import load_personas
from heirloom.domain.traversal import traverse
from heirloom.steps.intent_analysis import intent_analysis_step
from tests.support.sample import SAMPLE

BUDGET_MS = 60_000.0  # what is compared is what the graph finds, not how fast


def _requests() -> list[ContextRequest]:
    rows = [json.loads(line) for line in (SAMPLE / "queries.jsonl").read_text().splitlines() if line]
    return [
        ContextRequest(legacy_id=r["legacy_id"], user_id=r["user_id"], persona=r["persona"], query=r["query"])
        for r in rows
    ]


def _what_it_found(result: GraphResults) -> tuple[Any, ...]:
    """Everything of a traversal but the latencies."""
    return (
        result.hits,
        result.facts,
        result.ambient_facts,
        result.status,
        [(t.template, t.results) for t in result.traversals],
    )


class _Overlap:
    """A GraphStore that counts the queries in flight at once (the most it saw). With `meet`, the
    second and third queries wait for each other (a barrier, not a clock): they must be in flight
    together or the barrier breaks."""

    def __init__(self, graph: Any, *, meet: bool = False):
        self.graph, self.prefix = graph, graph.prefix
        self.in_flight = self.most = self.count = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(2, timeout=30) if meet else None

    def run(self, cypher: str, params: Any = None) -> list[dict[str, Any]]:
        with self.lock:
            self.count += 1
            number = self.count
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            if self.barrier is not None and number in (2, 3):
                self.barrier.wait()
            return self.graph.run(cypher, params)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="module")
def asked(sample_ports):
    """Every sample question with the intent the rule-based analysis gives it."""
    breaker = CircuitBreaker(InMemoryBreakerStore(), failure_threshold=10**9)
    gazetteers = GazetteerCache()
    return [
        (
            request,
            intent_analysis_step(request, sample_ports.stories, sample_ports.graph, breaker, gazetteers),
        )
        for request in _requests()
    ]


def test_concurrent_traversal_finds_what_the_sequential_one_finds(sample_ports, asked):
    personas = load_personas()
    compared = found = 0
    for request, intent in asked:
        config = personas[request.persona].traversal
        # every intent's steps, not only the one the rules chose
        for kind in Intent:
            as_kind = intent.model_copy(update={"intent": kind})
            one, four = _Overlap(sample_ports.graph), _Overlap(sample_ports.graph)
            sequential = traverse(one, request, as_kind, config, budget_ms=BUDGET_MS, concurrency=1)
            concurrent = traverse(four, request, as_kind, config, budget_ms=BUDGET_MS, concurrency=4)
            assert _what_it_found(concurrent) == _what_it_found(sequential), (request.query, kind)
            # and no query more: what is prefetched is what the sequential run asks
            assert four.count == one.count, (request.query, kind)
            compared += 1
            found += bool(sequential.hits) + bool(sequential.facts) + bool(sequential.ambient_facts)
    # the comparison has something to compare: hits, facts and ambient facts in most runs
    assert compared == len(asked) * len(Intent) and found > compared


def test_concurrent_connections_find_what_the_sequential_ones_find(sample_ports, asked):
    graph = sample_ports.graph
    stories = [json.loads(line) for line in (SAMPLE / "stories.jsonl").read_text().splitlines() if line]
    config = load_personas()["family"].traversal
    request, intent = asked[0]
    seen = 0
    for story in stories:
        seeded = request.model_copy(
            update={"purpose": "connections", "linked_story_id": uuid.UUID(story["id"]),
                    "legacy_id": uuid.UUID(story["legacy_id"])}
        )  # fmt: skip
        sequential = traverse_connections(graph, seeded, intent, config, budget_ms=BUDGET_MS, concurrency=1)
        concurrent = traverse_connections(graph, seeded, intent, config, budget_ms=BUDGET_MS, concurrency=4)
        assert _what_it_found(concurrent) == _what_it_found(sequential), story["title"]
        seen += len(sequential.hits)
    assert seen > len(stories)


def test_the_independent_queries_are_in_flight_together(sample_ports, asked):
    request, intent = next((r, i) for r, i in asked if i.matches)
    config = load_personas()[request.persona].traversal
    overlap = _Overlap(sample_ports.graph, meet=True)
    traverse(overlap, request, intent.model_copy(update={"intent": Intent.GENERAL}), config,
             budget_ms=BUDGET_MS, concurrency=4)  # fmt: skip
    sequential = _Overlap(sample_ports.graph)
    traverse(sequential, request, intent, config, budget_ms=BUDGET_MS, concurrency=1)
    assert sequential.most == 1
    assert overlap.most > 1
