"""RankAssemble: rank what AccessFilter kept, deduplicate, fit the persona's token budget and
format the context with provenance, ambient memory included."""

from __future__ import annotations

from heirloom.contracts.context import AssembledContext, RankAssembleInput
from heirloom.domain.assembly import assemble
from heirloom.domain.personas import load_personas
from heirloom.services import Services


def run(data: RankAssembleInput, services: Services) -> AssembledContext:
    persona = load_personas()[data.request.persona]
    return assemble(
        data.request, data.filtered, persona, services.tokenizer, ambient=services.settings.ambient
    )
