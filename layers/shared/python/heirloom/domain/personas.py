"""Persona definitions: a system prompt and a traversal block each, from config/personas.yaml."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from heirloom.contracts.context import ContextRequest, Persona
from heirloom.domain.graph_schema import SOCIAL_TYPES


class PersonaConfigError(ValueError):
    """personas.yaml is missing a persona, a prompt file or a valid traversal block."""


class TraversalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_hops: int = Field(ge=1, le=2)
    relationship_weights: dict[str, float]
    max_graph_results: int = Field(ge=1, le=100)
    include_cross_legacy: bool
    temporal_range: Literal["full", "recent", "career"]

    @field_validator("relationship_weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        if set(value) != set(SOCIAL_TYPES):
            raise ValueError(f"relationship_weights must name exactly {', '.join(SOCIAL_TYPES)}")
        if any(not 0.0 <= w <= 1.0 for w in value.values()):
            raise ValueError("relationship weights must lie in [0, 1]")
        return value

    def weight(self, rel_type: str | None) -> float:
        """Weight of a social relationship type; other edge types count fully."""
        if rel_type is None:
            return 1.0
        return self.relationship_weights.get(rel_type, 1.0)


class PersonaDefinition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Persona
    prompt: str
    traversal: TraversalConfig


def parse_personas(
    raw: object, read_prompt: Callable[[str], str] | None = None
) -> dict[Persona, PersonaDefinition]:
    if not isinstance(raw, dict):
        raise PersonaConfigError("personas.yaml must be a mapping of persona name to definition")
    missing = {p.value for p in Persona} - set(raw)
    unknown = set(raw) - {p.value for p in Persona}
    if missing or unknown:
        raise PersonaConfigError(f"personas.yaml: missing {sorted(missing)}, unknown {sorted(unknown)}")
    out: dict[Persona, PersonaDefinition] = {}
    for name, body in raw.items():
        if not isinstance(body, dict) or "prompt" not in body:
            raise PersonaConfigError(f"persona {name}: needs a prompt file and a traversal block")
        try:
            prompt = read_prompt(body["prompt"]) if read_prompt else str(body["prompt"])
            out[Persona(name)] = PersonaDefinition(
                name=Persona(name), prompt=prompt, traversal=body.get("traversal")
            )
        except (ValidationError, OSError, ValueError) as exc:
            raise PersonaConfigError(f"persona {name}: {exc}") from exc
    return out


@lru_cache(maxsize=1)
def load_personas() -> dict[Persona, PersonaDefinition]:
    config = resources.files("heirloom.config")
    raw = yaml.safe_load(config.joinpath("personas.yaml").read_text())
    return parse_personas(raw, lambda rel: config.joinpath(rel).read_text())


def reaches_links(request: ContextRequest) -> bool:
    """Whether the request's persona reads linked legacies (`include_cross_legacy`). Every
    retrieval path asks this, whatever the intent: a cross_legacy question asked as a persona
    that stays in its own legacy gets that legacy's stories only."""
    return load_personas()[request.persona].traversal.include_cross_legacy
