"""RankAssemble: rank what AccessFilter kept (and rerank its top when RERANKER is on),
deduplicate, fit the persona's token budget and format the context with provenance, ambient
memory included."""

from __future__ import annotations

from heirloom.contracts.context import AssembledContext, RankAssembleInput
from heirloom.domain.assembly import assemble
from heirloom.domain.life_timeline import wants_recent
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import BridgeRule
from heirloom.services import Services


def run(data: RankAssembleInput, services: Services) -> AssembledContext:
    persona = load_personas()[data.request.persona]
    recent = wants_recent(data.request.query, data.filtered.intent, persona.traversal.temporal_range)
    retrieval = services.settings.retrieval
    rate = retrieval.recency_decay if recent else 0.0
    return assemble(
        data.request,
        data.filtered,
        persona,
        services.tokenizer,
        rerank=services.rerank,
        recency=rate,
        ambient=services.settings.ambient,
        bridge=BridgeRule(
            seeds=retrieval.bridge_seeds,
            slot=retrieval.bridge_slot,
            weight=retrieval.bridge_weight,
            graph_only=retrieval.bridge_graph_only,
            agree=retrieval.bridge_agree,
        ),
        topic_weight=retrieval.topic_weight,
    )
