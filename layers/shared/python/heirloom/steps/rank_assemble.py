"""RankAssemble: rank what AccessFilter kept (and rerank its top when RERANKER is on),
deduplicate, fit the persona's token budget and format the context with provenance, ambient
memory included."""

from __future__ import annotations

from typing import Any

from heirloom.contracts.context import AssembledContext, RankAssembleInput
from heirloom.domain.assembly import assemble, rank
from heirloom.domain.life_timeline import wants_recent
from heirloom.domain.personas import PersonaDefinition, load_personas
from heirloom.domain.ranking import BridgeRule, ScoredCandidate
from heirloom.services import Services


def run(data: RankAssembleInput, services: Services) -> AssembledContext:
    persona = load_personas()[data.request.persona]
    return assemble(
        data.request,
        data.filtered,
        persona,
        services.tokenizer,
        ambient=services.settings.ambient,
        **_ranking_options(data, services, persona),
    )


def ranking(data: RankAssembleInput, services: Services) -> list[ScoredCandidate]:
    """The order `run` cuts the context from: every candidate scored, before the token budget
    (for `heirloom eval --per-query`; the context itself carries only what fit)."""
    persona = load_personas()[data.request.persona]
    ranked, _ = rank(data.request, data.filtered, persona, **_ranking_options(data, services, persona))
    return ranked


def _ranking_options(
    data: RankAssembleInput, services: Services, persona: PersonaDefinition
) -> dict[str, Any]:
    recent = wants_recent(data.request.query, data.filtered.intent, persona.traversal.temporal_range)
    retrieval = services.settings.retrieval
    return {
        "rerank": services.rerank,
        "recency": retrieval.recency_decay if recent else 0.0,
        "bridge": BridgeRule(
            seeds=retrieval.bridge_seeds,
            slot=retrieval.bridge_slot,
            weight=retrieval.bridge_weight,
            graph_only=retrieval.bridge_graph_only,
            agree=retrieval.bridge_agree,
        ),
        "topic_weight": retrieval.topic_weight,
    }
