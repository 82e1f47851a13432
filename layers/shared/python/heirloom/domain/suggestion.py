"""One suggestion per turn (docs/design.md §9, elicitation mode): the single best connection to
suggest, and the graph suggestion directive (a versioned config file) that tells the persona to
weave in at most that one.

The candidate is the best-ranked readable story that a graph hit reached from an entity of the
current message (relevant to the current topic), that is not the story being evolved and whose
title the conversation has not already named; or none."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

from heirloom.contracts.context import ContextRequest, GraphHit, Suggestion
from heirloom.domain.ranking import ScoredCandidate
from heirloom.fencing import inline, quoted_title

DIRECTIVE_VERSION = 1
DIRECTIVE_RESOURCE = f"prompts/graph_suggestion.v{DIRECTIVE_VERSION}.txt"
SUGGESTION_HEADER = "## Suggested Connection"
DIRECTIVE_HEADER = "## Graph Suggestion Directive"


@lru_cache(maxsize=1)
def suggestion_directive() -> str:
    text = resources.files("heirloom.config").joinpath(DIRECTIVE_RESOURCE).read_text(encoding="utf-8")
    return text.strip()


def _topic_hit(hits: Sequence[GraphHit]) -> GraphHit | None:
    """A hit from an entity the message names (or describes), not a broad template's."""
    return next((h for h in hits if h.entity_match and (h.entity or h.via)), None)


def _sentence(title: str, hit: GraphHit, entity: str) -> str:
    quoted, name = f'"{quoted_title(title)}"', inline(entity)
    if hit.template in ("person_mentions", "described", "relational", "relational_2hop"):
        return f"{quoted} also involves {name}."
    if hit.relationship == "TOOK_PLACE_AT":
        return f"{quoted} also takes place at {name}."
    return f"{quoted} also tells of {name}."


def pick_suggestion(request: ContextRequest, ranked: Sequence[ScoredCandidate]) -> Suggestion | None:
    if request.mode == "vector":
        return None
    said = " ".join(m.content for m in request.history).casefold()
    for scored in ranked:
        candidate = scored.candidate
        if candidate.story_id == request.linked_story_id or candidate.title.casefold() in said:
            continue
        hit = _topic_hit(candidate.graph_hits)
        if hit is None:
            continue
        entity = hit.entity or hit.via or ""
        return Suggestion(
            story_id=candidate.story_id,
            title=candidate.title,
            legacy_id=candidate.legacy_id,
            entity=entity,
            sentence=_sentence(candidate.title, hit, entity),
        )
    return None


def elicitation_block(suggestion: Suggestion | None) -> str:
    """The marked suggestion (when there is one) and the directive, for the end of the context."""
    parts = [f"{SUGGESTION_HEADER}\n{suggestion.sentence}"] if suggestion else []
    return "\n\n".join([*parts, f"{DIRECTIVE_HEADER}\n{suggestion_directive()}"])
