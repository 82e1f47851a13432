"""What an LLM intent classifier answers for one message (docs/design.md §5).

`IntentClassification` is the Bedrock tool's input schema (`intent_json_schema()`): the model
calls the tool with it, and its input is validated by this model before anything is trusted.
The prompt that goes with it is versioned next to the extraction prompt under
heirloom/config/prompts/.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from importlib import resources
from string import Template
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from heirloom.contracts.context import EntityMatch, Intent, Message
from heirloom.fencing import one_line, untag

#: Bumped when the model or the prompt change in a way a consumer would notice.
INTENT_SCHEMA_VERSION = "1"
PROMPT_RESOURCE = f"prompts/classify_intent.v{INTENT_SCHEMA_VERSION}.txt"
#: messages of the conversation shown to the model (the last 2-3 messages)
HISTORY_MESSAGES = 3
#: longest history message shown to the model, in characters
HISTORY_CHARS = 500

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Names = Annotated[tuple[Name, ...], Field(max_length=10)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntentEntities(_Model):
    people: Names = Field(default=(), description="People named or referred to, as written")
    places: Names = Field(default=(), description="Places, as written")
    time_periods: Names = Field(default=(), description="Years, decades or periods, e.g. '1970s'")
    events: Names = Field(default=(), description="Events, e.g. 'the family reunion', 'retirement'")
    objects: Names = Field(default=(), description="Physical things, e.g. 'the pocket watch'")


class IntentClassification(_Model):
    intent: Intent = Field(description="What the question is mainly about")
    entities: IntentEntities = Field(default=IntentEntities(), description="Entities the message mentions")
    confidence: float = Field(ge=0.0, le=1.0, description="0..1; below 0.5 the answer is not used")


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {k: _inline_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def intent_json_schema() -> dict[str, Any]:
    """The JSON schema of `IntentClassification`, every `$ref` inlined (a self-contained object
    schema, as a Bedrock tool `inputSchema.json` wants it)."""
    schema = IntentClassification.model_json_schema()
    defs = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline_refs(schema, defs)
    inlined["description"] = (
        f"The intent of one message about a person's life (schema version {INTENT_SCHEMA_VERSION})."
    )
    return inlined


def intent_prompt(*, subject_name: str, matches: Sequence[EntityMatch] = ()) -> str:
    """The versioned system prompt with the legacy's subject and the known-entity matches (the
    gazetteer found these names of the legacy's graph in the message) filled in."""
    text = resources.files("heirloom.config").joinpath(PROMPT_RESOURCE).read_text(encoding="utf-8")
    hints = (
        "\n".join(f"- {m.label}: {_line(m.name)} (written as {_line(m.mention)!r})" for m in matches)
        if matches
        else "(none found)"
    )
    return Template(text).substitute(subject_name=_line(subject_name) or "the person", known_entities=hints)


def intent_user_message(query: str, history: Sequence[Message]) -> str:
    """The user turn: the last messages of the conversation, then the message to classify,
    each inside tags the prompt tells the model to treat as data."""
    recent = [f"{m.role}: {' '.join(m.content.split())[:HISTORY_CHARS]}" for m in history[-HISTORY_MESSAGES:]]
    context = "\n".join(recent) if recent else "(start of the conversation)"
    return f"<conversation>\n{_untag(context)}\n</conversation>\n<message>\n{_untag(query)}\n</message>"


def _untag(text: str) -> str:
    """Keep the data from closing the tags around it, or opening any: no `<` or `>` of any case
    or look-alike (heirloom.fencing)."""
    return untag(text)


def _line(text: str) -> str:
    """A name for the system prompt: one line, no tag."""
    return untag(one_line(text))
