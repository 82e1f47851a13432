"""The IntentAnalysis step: known-entity matching against a per-legacy gazetteer cached in the
container, the rule-based classifier, and the graph breaker's state for the Choice state."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from uuid import UUID

from heirloom.contracts.context import BreakerState, ContextRequest, QueryIntent
from heirloom.domain.breaker import CircuitBreaker
from heirloom.domain.intent import Gazetteer, GazetteerEntry, classify
from heirloom.ports import GraphStore, StoryStore

log = logging.getLogger(__name__)

ENTITY_NAMES = """
MATCH (e:Place) WHERE e.legacy_id IN $ids RETURN e.id AS id, 'Place' AS label, e.name AS name, e.legacy_id AS legacy
UNION ALL
MATCH (e:Event) WHERE e.legacy_id IN $ids RETURN e.id AS id, 'Event' AS label, e.name AS name, e.legacy_id AS legacy
UNION ALL
MATCH (e:Object) WHERE e.legacy_id IN $ids RETURN e.id AS id, 'Object' AS label, e.name AS name, e.legacy_id AS legacy
"""


class GazetteerCache:
    """Per-container gazetteers by legacy, refreshed after `ttl_s` seconds."""

    def __init__(self, ttl_s: float = 300.0, clock: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.clock = clock
        self._items: dict[UUID, tuple[float, Gazetteer, str]] = {}

    def get(self, legacy_id: UUID, build: Callable[[], tuple[Gazetteer, str]]) -> tuple[Gazetteer, str]:
        hit = self._items.get(legacy_id)
        if hit and self.clock() - hit[0] < self.ttl_s:
            return hit[1], hit[2]
        gazetteer, subject = build()
        self._items[legacy_id] = (self.clock(), gazetteer, subject)
        return gazetteer, subject


def build_gazetteer(legacy_id: UUID, stories: StoryStore, graph: GraphStore | None) -> tuple[Gazetteer, str]:
    """Names of the legacy's (and actively linked legacies') persons and graph entities."""
    legacy = stories.get_legacy(legacy_id)
    ids = [legacy_id] + [
        link.legacy_b_id if link.legacy_a_id == legacy_id else link.legacy_a_id
        for link in stories.links_of(legacy_id)
        if link.status == "active"
    ]
    persons = stories.persons_of(ids)
    linked_subjects = {lg.subject_person_id for lg in (stories.get_legacy(i) for i in ids[1:]) if lg}
    entries = [
        GazetteerEntry(
            str(p.id),
            "Person",
            p.name,
            tuple(p.aliases),
            str(p.legacy_id),
            linked_subject=p.id in linked_subjects,
        )
        for p in persons
    ]
    if graph is not None:
        try:
            rows = graph.run(ENTITY_NAMES, {"ids": [str(i) for i in ids]})
            entries += [
                GazetteerEntry(str(r["id"]), r["label"], str(r["name"]), (), str(r.get("legacy") or ""))
                for r in rows
                if r.get("name")
            ]
        except Exception as exc:  # the graph is optional here; persons still match
            log.warning("gazetteer_graph_unavailable: %s", type(exc).__name__)
    subject = stories.get_person(legacy.subject_person_id) if legacy else None
    return Gazetteer.build(entries), subject.name if subject else ""


def intent_analysis_step(
    request: ContextRequest,
    stories: StoryStore,
    graph: GraphStore | None,
    breaker: CircuitBreaker,
    cache: GazetteerCache,
) -> QueryIntent:
    started = time.monotonic()
    gazetteer, subject = cache.get(
        request.legacy_id, lambda: build_gazetteer(request.legacy_id, stories, graph)
    )
    intent = classify(request.query, request.history, gazetteer, subject, str(request.legacy_id))
    state: BreakerState
    try:
        state = breaker.state()
    except Exception as exc:  # an unreadable breaker must not fail the request
        log.warning("breaker_unreadable: %s", type(exc).__name__)
        state = "unknown"
    return intent.model_copy(
        update={"breaker_state": state, "latency_ms": round((time.monotonic() - started) * 1000, 2)}
    )
