"""Entity extraction rules shared by every extractor (docs/design.md §2).

`postprocess` turns what any extractor returned (Bedrock or the local spaCy one) into what may be
written to the graph: confidence >= 0.7 (precision over recall; a proper-named place the story's
title names is kept from 0.5), names normalised, duplicates merged, contact data scrubbed,
per-story limits applied, relationships kept only between kept entities. `resolve_people` matches the people a story mentions against the legacy's known
persons, including narrator-relative kin terms ("my dad") through FAMILY_OF relationships.
Everything here is pure: no model, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedFact,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.domain.kinship import _HONORIFICS, _KIN_TITLES
from heirloom.domain.names import name_key, normalize_name
from heirloom.domain.pii import has_contact_data, scrub_pii
from heirloom.ports import EntityExtractor

#: Only entities at or above this confidence reach the graph.
MIN_CONFIDENCE = 0.7
#: ...except a place with a proper name the story's title names: the title corroborates a guess
#: at or above this (the local extractor's weak 0.6, e.g. a care home the model tags ORG).
TITLE_CORROBORATED_CONFIDENCE = 0.5


@dataclass(frozen=True)
class ExtractionLimits:
    people: int = 20
    places: int = 15
    events: int = 15
    objects: int = 15
    time_references: int = 15
    relationships: int = 30
    facts: int = 30


DEFAULT_LIMITS = ExtractionLimits()


def extract_entities(
    extractor: EntityExtractor,
    text: str,
    *,
    known_names: Sequence[str] = (),
    min_confidence: float = MIN_CONFIDENCE,
    limits: ExtractionLimits = DEFAULT_LIMITS,
    title: str = "",
) -> ExtractedEntities:
    """Run `extractor` on one story (`title`: the story's title) and apply the shared rules."""
    raw = extractor.extract(text, known_names=known_names)
    return postprocess(
        raw, min_confidence=min_confidence, limits=limits, title=title, known_names=known_names
    )


# --------------------------------------------------------------------------------------------
# Post-processing

_M = TypeVar("_M", bound=BaseModel)


def _clean_name(name: str, *, person: bool) -> str | None:
    if has_contact_data(name):
        return None
    cleaned = normalize_name(scrub_pii(name), possessive=person, determiners=not person)
    if not cleaned or not any(ch.isalnum() for ch in cleaned):
        return None
    return cleaned[:200]


def _clean_text(value: str | None) -> str | None:
    if value is None:
        return None
    text = " ".join(scrub_pii(value).split())[:300]
    return text or None


def _merge(kept: _M, other: _M) -> _M:
    """Keep the more confident entry; fill its empty optional fields from the other."""
    best, rest = (
        (other, kept)
        if getattr(other, "confidence", 0.0) > getattr(kept, "confidence", 0.0)
        else (kept, other)
    )
    fill: dict[str, object] = {
        field: getattr(rest, field)
        for field in ("context", "location", "date")
        if field in type(best).model_fields and not getattr(best, field) and getattr(rest, field)
    }
    return best.model_copy(update=fill) if fill else best


def _dedupe_and_limit(items: Iterable[_M], key: Callable[[_M], str], limit: int) -> list[_M]:
    merged: dict[str, _M] = {}
    for item in items:
        k = key(item)
        merged[k] = _merge(merged[k], item) if k in merged else item
    values = list(merged.values())
    if len(values) <= limit:
        return values
    ranked = sorted(range(len(values)), key=lambda i: -float(getattr(values[i], "confidence", 0.0)))
    keep = set(ranked[:limit])
    return [v for i, v in enumerate(values) if i in keep]  # original order among the kept


def _people(items: Iterable[ExtractedPerson], floor: float, limit: int) -> list[ExtractedPerson]:
    out = []
    for p in items:
        name = _clean_name(p.name, person=True) if p.confidence >= floor else None
        if name:
            out.append(p.model_copy(update={"name": name, "context": _clean_text(p.context) or ""}))
    return _dedupe_and_limit(out, lambda p: name_key(p.name), limit)


def _title_names(title: str, name: str, person_words: set[str]) -> bool:
    """Does `title` name `name`, a proper name of two or more capitalised words, as whole words?
    Not a name that shares a word with a person of the story or starts with a kin word or an
    honorific (a person the model took for an organisation)."""
    from heirloom.domain.entity_sync import in_title

    words = [w for w in name.split() if any(ch.isalpha() for ch in w)]
    return (
        len(words) >= 2
        and all(w[:1].isupper() for w in words)
        and words[0].casefold().rstrip(".") not in _KIN_TITLES | _HONORIFICS
        and not person_words & {w.casefold() for w in words}
        and in_title(title, [name])
    )


def _person_key(name: str) -> str:
    """A name's key as a person's (an owner's "'s" dropped): "Nurse Halvorsen's" == "nurse halvorsen"."""
    return name_key(normalize_name(name, possessive=True))


def _known_person_keys(known_names: Iterable[str]) -> frozenset[str]:
    """Keys of the legacy's person names and aliases of two or more words (a one-word name is
    as often a town's: "Florence", "Georgia")."""
    keys = (_person_key(n) for n in known_names)
    return frozenset(k for k in keys if len(k.split()) >= 2)  # "the Range" is one word


def _places(
    items: Iterable[ExtractedPlace],
    floor: float,
    limit: int,
    title: str = "",
    people: Sequence[str] = (),
    known_names: Iterable[str] = (),
) -> list[ExtractedPlace]:
    person_words = {w.casefold() for p in people for w in p.split()}
    known = _known_person_keys(known_names)
    out = []
    for p in items:
        name = _clean_name(p.name, person=False) if p.confidence >= TITLE_CORROBORATED_CONFIDENCE else None
        if not name or (p.confidence < floor and not _title_names(title, name, person_words)):
            continue
        if _person_key(name) in known:
            continue  # "Nurse Lindqvist", an alias of the legacy's subject, is no place
        update = {"name": name, "location": _clean_text(p.location), "confidence": max(p.confidence, floor)}
        out.append(p.model_copy(update=update))
    return _dedupe_and_limit(out, lambda p: name_key(p.name), limit)


def _events(items: Iterable[ExtractedEvent], floor: float, limit: int) -> list[ExtractedEvent]:
    out = []
    for e in items:
        name = _clean_name(e.name, person=False) if e.confidence >= floor else None
        if name:
            out.append(e.model_copy(update={"name": name, "date": _clean_text(e.date)}))
    return _dedupe_and_limit(out, lambda e: name_key(e.name), limit)


def _objects(items: Iterable[ExtractedObject], floor: float, limit: int) -> list[ExtractedObject]:
    out = []
    for o in items:
        name = _clean_name(o.name, person=False) if o.confidence >= floor else None
        if name:
            out.append(o.model_copy(update={"name": name}))
    return _dedupe_and_limit(out, lambda o: name_key(o.name), limit)


def _times(items: Iterable[TimeReference], limit: int) -> list[TimeReference]:
    out = []
    for t in items:
        period = _clean_name(t.period, person=False)
        if period:
            out.append(t.model_copy(update={"period": period, "context": _clean_text(t.context) or ""}))
    return _dedupe_and_limit(out, lambda t: name_key(t.period), limit)


#: predicate -> (subject kind, object kind)
_PREDICATE_KINDS: dict[str, tuple[str, str]] = {
    "PARTICIPATED_IN": ("people", "events"),
    "LIVED_IN": ("people", "places"),
    "WORKED_AT": ("people", "places"),
    "OWNED": ("people", "objects"),
    "TOOK_PLACE_AT": ("events", "places"),
}


def _relationships(
    items: Iterable[ExtractedRelationship], names: dict[str, dict[str, str]], floor: float, limit: int
) -> list[ExtractedRelationship]:
    out = []
    for r in items:
        if r.confidence < floor:
            continue
        subject_kind, object_kind = _PREDICATE_KINDS[r.predicate]
        subject = _clean_name(r.subject, person=subject_kind == "people")
        obj = _clean_name(r.object, person=False)
        subject = names[subject_kind].get(name_key(subject)) if subject else None
        obj = names[object_kind].get(name_key(obj)) if obj else None
        if subject and obj:
            out.append(r.model_copy(update={"subject": subject, "object": obj}))
    return _dedupe_and_limit(
        out, lambda r: f"{name_key(r.subject)}|{r.predicate}|{name_key(r.object)}", limit
    )


#: relations whose target must be a person (the rest may point at a person or a thing)
PERSON_RELATIONS = frozenset(
    {"MARRIED", "SIBLING_OF", "PARENT_OF", "FRIEND_OF", "WORKED_WITH", "TAUGHT", "MET"}
)


def _facts(
    items: Iterable[ExtractedFact], names: dict[str, dict[str, str]], floor: float, limit: int
) -> list[ExtractedFact]:
    """Facts whose source is a kept person and whose target a kept entity, under the kept names;
    the sentence scrubbed of contact data. Person -> person relations need a person target."""
    out = []
    for f in items:
        source_name = _clean_name(f.source, person=True) if f.confidence >= floor else None
        source = names["people"].get(name_key(source_name)) if source_name else None
        target = None
        for kind in (
            ("people",) if f.relation in PERSON_RELATIONS else ("people", "objects", "events", "places")
        ):
            cleaned = _clean_name(f.target, person=kind == "people")
            target = names[kind].get(name_key(cleaned)) if cleaned else None
            if target:
                break
        sentence = _clean_text(f.sentence)
        verb = _clean_text(f.verb)
        if source and target and sentence and verb and name_key(source) != name_key(target):
            out.append(
                f.model_copy(update={"source": source, "target": target, "sentence": sentence, "verb": verb})
            )
    return _dedupe_and_limit(
        out, lambda f: f"{name_key(f.source)}|{f.relation}|{name_key(f.target)}|{f.negated}", limit
    )


def postprocess(
    entities: ExtractedEntities,
    *,
    min_confidence: float = MIN_CONFIDENCE,
    limits: ExtractionLimits = DEFAULT_LIMITS,
    title: str = "",
    known_names: Sequence[str] = (),
) -> ExtractedEntities:
    """The rules every extractor's output goes through before the graph sees it. A place below
    `min_confidence` (not below TITLE_CORROBORATED_CONFIDENCE) whose proper name of two or more
    words `title` names, and not a person's, is kept at `min_confidence`. A place named as one
    of `known_names` (the legacy's persons and aliases, two or more words) is dropped."""
    people = _people(entities.people, min_confidence, limits.people)
    story_people = [p.name for p in people]
    places = _places(entities.places, min_confidence, limits.places, title, story_people, known_names)
    events = _events(entities.events, min_confidence, limits.events)
    objects = _objects(entities.objects, min_confidence, limits.objects)
    names = {
        "people": {name_key(p.name): p.name for p in people},
        "places": {name_key(p.name): p.name for p in places},
        "events": {name_key(e.name): e.name for e in events},
        "objects": {name_key(o.name): o.name for o in objects},
    }
    return ExtractedEntities(
        people=tuple(people),
        places=tuple(places),
        events=tuple(events),
        objects=tuple(objects),
        time_references=tuple(_times(entities.time_references, limits.time_references)),
        relationships=tuple(
            _relationships(entities.relationships, names, min_confidence, limits.relationships)
        ),
        facts=tuple(_facts(entities.facts, names, min_confidence, limits.facts)),
        extractor_version=entities.extractor_version,
    )
