"""What an entity extractor returns for one story (docs/design.md §2).

The same models are the Bedrock tool input schema (`extraction_json_schema()`), the output of the
local spaCy extractor and the input of the shared post-processing rules in
`heirloom.domain.extraction`. Unknown `type` strings are coerced to "other" rather than refused:
one odd label from a model must not cost the whole story's extraction.
"""

from __future__ import annotations

import copy
from importlib import resources
from string import Template
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema

from heirloom.contracts.records import Text
from heirloom.fencing import one_line, untag

#: Bumped when the models or the prompt change in a way a consumer would notice.
#: 2: `facts` between entities (docs/decisions/0012); 3: named animals, works by title
EXTRACTION_SCHEMA_VERSION = "3"
#: The prompt that goes with this schema version (package resource under heirloom/config).
PROMPT_RESOURCE = f"prompts/extract_entities.v{EXTRACTION_SCHEMA_VERSION}.txt"

PlaceType = Literal[
    "residence",  # a home: house, cabin, farm the family lived on
    "locality",  # city, town, county, state, country, region
    "street",
    "water",  # lake, river, creek, bay, coast
    "building",  # mill, barn, store, hall, hospital
    "workplace",
    "worship",  # church, chapel, synagogue, temple
    "school",
    "cemetery",
    "landmark",  # park, mountain, bridge, island
    "other",
]
EventType = Literal[
    "family_gathering",  # reunion, party, picnic, holiday dinner
    "wedding",
    "funeral",
    "birth",
    "religious",  # christening, baptism, confirmation, bar mitzvah
    "education",  # graduation, first day of school
    "work",  # retirement, strike, layoff, promotion
    "disaster",  # flood, fire, storm, accident
    "war",
    "travel",  # trip, move, emigration
    "celebration",  # birthday, anniversary, fair, parade
    "other",
]
ObjectType = Literal[
    "heirloom",
    "jewelry",
    "timepiece",
    "textile",
    "instrument",
    "furniture",
    "document",  # letter, diary, bible, deed
    "photograph",
    "recipe",
    "kitchenware",
    "tool",
    "vehicle",
    "military",  # medal, uniform, dog tags
    "animal",  # a pet or farm animal the family names ("our cat Biscuit")
    "work",  # a song, hymn, book or film by its title ("Danny Boy")
    "other",
]
Predicate = Literal["PARTICIPATED_IN", "LIVED_IN", "WORKED_AT", "OWNED", "TOOK_PLACE_AT"]

#: The controlled vocabulary of facts (docs/decisions/0012); the verb as written rides along.
FactRelation = Literal[
    # person -> person
    "MARRIED",  # married, wed
    "SIBLING_OF",  # brother/sister of
    "PARENT_OF",  # raised, had (a child)
    "FRIEND_OF",  # befriended, was friends with
    "WORKED_WITH",  # worked/farmed/served alongside
    "TAUGHT",  # taught, trained, showed how to
    "MET",  # met, courted
    # person -> person or thing
    "GAVE",  # gave, handed down, left (to), passed down
    "MADE",  # made, built, carved, sewed, wrote
    "KEPT",  # kept, owned, carried, wore, played
    "RECEIVED",  # got, inherited, was given
]

PLACE_TYPES: frozenset[str] = frozenset(get_args(PlaceType))
EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))
OBJECT_TYPES: frozenset[str] = frozenset(get_args(ObjectType))
PREDICATES: frozenset[str] = frozenset(get_args(Predicate))
FACT_RELATIONS: frozenset[str] = frozenset(get_args(FactRelation))

EntityName = Annotated[Text, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ShortText = Annotated[Text, StringConstraints(strip_whitespace=True, max_length=300)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0, description="0..1; below 0.7 is discarded")]


def _coerce_type(value: object, allowed: frozenset[str]) -> str:
    """'Family Gathering' -> 'family_gathering'; anything outside the vocabulary -> 'other'."""
    if not isinstance(value, str):
        return "other"
    key = "_".join(value.strip().lower().replace("-", " ").split())
    return key if key in allowed else "other"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtractedPerson(_Model):
    name: EntityName = Field(description="As written, e.g. 'Uncle Jim', 'Edith Marlowe', 'my father'")
    context: ShortText = Field(default="", description='Who they are to the story, e.g. "mother\'s brother"')
    confidence: Confidence


class ExtractedPlace(_Model):
    name: EntityName = Field(description="e.g. 'Lake Michigan cabin', 'Duluth', 'St. Mary's Church'")
    type: PlaceType = "other"
    location: ShortText | None = Field(default=None, description="Enclosing town/state/country, if stated")
    confidence: Confidence

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: object) -> str:
        return _coerce_type(value, PLACE_TYPES)


class ExtractedEvent(_Model):
    name: EntityName = Field(description="e.g. 'Summer reunion 1985', 'the 1962 flood'")
    type: EventType = "other"
    date: ShortText | None = Field(default=None, description="Year, decade or date as stated, e.g. '1985'")
    confidence: Confidence

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: object) -> str:
        return _coerce_type(value, EVENT_TYPES)


class ExtractedObject(_Model):
    name: EntityName = Field(description="e.g. \"grandfather's pocket watch\", 'the recipe box'")
    type: ObjectType = "other"
    confidence: Confidence

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: object) -> str:
        return _coerce_type(value, OBJECT_TYPES)


class NamedThing(_Model):
    """A name a story itself gives an animal or a work ("our cat Biscuit", 'sang "Danny Boy"'):
    the legacy's other stories that write the name alone link the same thing (decision 0040)."""

    name: EntityName
    type: ObjectType


class TimeReference(_Model):
    period: EntityName = Field(description="Normalised period: '1962', '1970s', 'summer after the flood'")
    context: ShortText = Field(default="", description="What the period frames, e.g. 'childhood summers'")


class ExtractedRelationship(_Model):
    """`subject` and `object` are names from the lists above: PARTICIPATED_IN person->event,
    LIVED_IN and WORKED_AT person->place, OWNED person->object, TOOK_PLACE_AT event->place."""

    subject: EntityName
    predicate: Predicate
    object: EntityName
    confidence: Confidence


class ExtractedFact(_Model):
    """A fact the story states between two names from the lists above (the source a person, the
    target a person, place, event or object), typed by `relation` and kept with its words."""

    source: EntityName = Field(description="The person the fact is about, e.g. 'Grandma Rose'")
    relation: FactRelation
    target: EntityName = Field(description="The other person or the thing, e.g. 'Anna', 'the ring'")
    verb: Annotated[Text, StringConstraints(strip_whitespace=True, min_length=1, max_length=60)] = Field(
        description="The verb as written, e.g. 'handed down'"
    )
    sentence: Annotated[Text, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)] = Field(
        description="The story's sentence that states the fact, verbatim"
    )
    negated: bool = Field(default=False, description="True when the sentence denies it ('never married')")
    confidence: Confidence


class ExtractedEntities(_Model):
    people: tuple[ExtractedPerson, ...] = ()
    places: tuple[ExtractedPlace, ...] = ()
    events: tuple[ExtractedEvent, ...] = ()
    objects: tuple[ExtractedObject, ...] = ()
    time_references: tuple[TimeReference, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    #: set by the extractor (e.g. "spacy-en_core_web_sm-3.8.0/rules-1"), never by the model
    extractor_version: SkipJsonSchema[str] = ""

    @field_validator("facts", mode="before")
    @classmethod
    def _known_relations(cls, value: object) -> object:
        """A fact typed outside the vocabulary is dropped, not the whole story's extraction."""
        if not isinstance(value, list | tuple):
            return value
        out = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("relation"), str):
                relation = "_".join(item["relation"].strip().upper().replace("-", " ").split())
                if relation not in FACT_RELATIONS:
                    continue
                out.append({**item, "relation": relation})
            else:
                out.append(item)
        return tuple(out)


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline_refs(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]), defs)
        return {k: _inline_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def extraction_json_schema() -> dict[str, Any]:
    """The JSON schema of `ExtractedEntities` without `extractor_version`, every `$ref` inlined
    (a self-contained object schema, as a Bedrock tool `inputSchema.json` wants it)."""
    schema = ExtractedEntities.model_json_schema()
    defs = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline_refs(schema, defs)
    inlined["description"] = (
        f"Entities mentioned in one family story (schema version {EXTRACTION_SCHEMA_VERSION})."
    )
    return inlined


def extraction_prompt(
    *,
    known_names: tuple[str, ...] | list[str] = (),
    max_people: int = 20,
    max_places: int = 15,
    max_events: int = 15,
    max_objects: int = 15,
) -> str:
    """The versioned system prompt, with the limits and the legacy's known names filled in."""
    text = resources.files("heirloom.config").joinpath(PROMPT_RESOURCE).read_text(encoding="utf-8")
    # one line each, no tag: a name (written by a user, or found in a story) stays data
    names = ", ".join(untag(one_line(n)) for n in known_names if n.strip()) or "(none given)"
    return Template(text).substitute(
        known_names=names,
        max_people=max_people,
        max_places=max_places,
        max_events=max_events,
        max_objects=max_objects,
    )
