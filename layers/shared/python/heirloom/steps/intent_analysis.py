"""IntentAnalysis: the question's intent and the legacy's names it mentions, from the rules and
(when configured) a model, with the local answer as the fallback."""

from __future__ import annotations

import logging
import time

from heirloom.contracts.context import BreakerState, ContextRequest, IntentAnalysisInput, QueryIntent
from heirloom.domain.asker import AskerKin, asker_kin, with_asker_kin
from heirloom.domain.breaker import CircuitBreaker
from heirloom.domain.intent_step import (
    RULES,
    EmbeddingIntentClassifier,
    GazetteerCache,
    IntentClassifier,
    IntentRequest,
    analyse_intent,
    build_gazetteer,
)
from heirloom.domain.life_timeline import with_life
from heirloom.domain.linked_subjects import linked_subjects, names_linked_subject
from heirloom.domain.personas import load_personas, reaches_links
from heirloom.ports import GraphStore, StoryStore
from heirloom.services import Services

log = logging.getLogger(__name__)


def run(data: IntentAnalysisInput, services: Services) -> QueryIntent:
    graph = services.graph if services.settings.graph.augmentation_enabled else None
    return intent_analysis_step(
        data.request,
        services.stories,
        graph,
        services.breaker,
        services.gazetteers,
        services.intent_classifier,
        services.local_intent_classifier,
    )


def intent_analysis_step(
    request: ContextRequest,
    stories: StoryStore,
    graph: GraphStore | None,
    breaker: CircuitBreaker,
    cache: GazetteerCache,
    classifier: IntentClassifier = RULES,
    local: IntentClassifier | None = None,
) -> QueryIntent:
    """`local` defaults to `classifier` when that is a local one, else to the rule-based one."""
    started = time.monotonic()
    if local is None:
        local = classifier if isinstance(classifier, EmbeddingIntentClassifier) else RULES
    state: BreakerState
    try:
        state = breaker.state()
    except Exception as exc:  # an unreadable breaker must not fail the request
        log.warning("breaker_unreadable: %s", type(exc).__name__)
        state = "unknown"
    # behind an open breaker the graph is not asked for names either; a gazetteer built
    # without them is not cached, so the names are back as soon as the graph is
    names_from = graph if state != "open" else None
    degraded: list[str] = []
    gazetteer, subject = cache.get(
        request.legacy_id,
        lambda: build_gazetteer(
            request.legacy_id, stories, names_from, degraded=degraded, late=cache.late_names
        ),
        keep=lambda: not degraded and (names_from is not None or graph is None),
    )
    connections = request.purpose == "connections"
    cross = reaches_links(request)
    kin: list[AskerKin] = []
    try:
        kin = asker_kin(request.query, request.user_id, request.legacy_id, stories, cross_legacy=cross)
    except Exception as exc:  # the asker's relatives help; their absence must not fail the request
        log.warning("asker_kin_unavailable: %s", type(exc).__name__)
    linked_kin = False
    try:  # "my mother" names a linked legacy's subject (only when a kin word resolved)
        linked_kin = bool(kin) and names_linked_subject(
            [k.person for k in kin], linked_subjects(stories, request.legacy_id)
        )
    except Exception as exc:  # evidence, not a requirement
        log.warning("linked_subjects_unavailable: %s", type(exc).__name__)
    intent = analyse_intent(
        IntentRequest(
            request.query,
            request.history,
            gazetteer,
            subject,
            str(request.legacy_id),
            linked_kin=linked_kin,
        ),
        local if connections else classifier,  # connections need the names, not a model's intent
        local,
    )
    intent = with_asker_kin(intent, kin)
    if not connections:  # "in her twenties", "after he retired": the subject's years
        try:
            persona = load_personas()[request.persona].traversal
            intent = with_life(intent, request, stories, names_from, persona.temporal_range)
        except Exception as exc:  # the timeline helps; its absence must not fail the request
            log.warning("life_timeline_unavailable: %s", type(exc).__name__)
    if connections:  # every message's names: the story's text or the whole conversation
        seen = {m.node_id for m in intent.matches}
        more = [m for msg in request.history for m in gazetteer.match(msg.content)]
        extra = tuple({m.node_id: m for m in more if m.node_id not in seen}.values())
        intent = intent.model_copy(update={"matches": intent.matches + extra})
    return intent.model_copy(
        update={"breaker_state": state, "latency_ms": round((time.monotonic() - started) * 1000, 2)}
    )
