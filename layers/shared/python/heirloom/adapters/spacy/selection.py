"""Candidates chosen: overlaps resolved, short forms of a full name folded into it, duplicates
merged, and the result as extracted entities."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from heirloom.adapters.spacy.animals import named_animals, without_animals
from heirloom.adapters.spacy.clauses import _relations, _time_references
from heirloom.adapters.spacy.facts import _facts
from heirloom.adapters.spacy.greetings import without_greetings
from heirloom.adapters.spacy.people import _people
from heirloom.adapters.spacy.things import (
    _ner_places_events,
    _noun_entities,
    _proper_places,
    promote_repeated_names,
)
from heirloom.adapters.spacy.titles import outside_works, quoted_works
from heirloom.adapters.spacy.tokens import KNOWN_NAME_CONFIDENCE, RULE_CONFIDENCE, _Cand
from heirloom.adapters.spacy.where import retag_people, retag_places, without_seasons
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedFact,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
)

#: facts that make their thing a keepsake: someone made, gave, kept or received it
_THING_FACTS = frozenset({"GAVE", "MADE", "KEPT", "RECEIVED"})


def given_things(chosen: list[_Cand], facts: Iterable[ExtractedFact]) -> list[_Cand]:
    """A common thing ("the pot", "the dress") is a keepsake only with an owner; a named person
    making, giving, keeping or receiving it qualifies it as an owner does ("Mémé Yvonne gave us
    the pot"): it is kept at the fact's confidence, and so is the fact, whose thing would
    otherwise be dropped below the confidence floor."""
    held: dict[str, float] = {}
    for f in facts:
        if f.relation in _THING_FACTS:
            held[f.target] = max(held.get(f.target, 0.0), f.confidence)
    return [
        replace(c, confidence=max(c.confidence, held[c.name]))
        if c.kind == "objects" and c.name in held
        else c
        for c in chosen
    ]


def _overlaps(a: _Cand, b: _Cand) -> bool:
    return a.start < b.end and b.start < a.end


def _select(cands: list[_Cand]) -> list[_Cand]:
    """Resolve overlapping spans: across places, events and objects the longer span wins (then the
    more confident); a person inside another entity survives only as its possessor."""
    # a weak guess never displaces a confident candidate, however long it is
    things = sorted(
        (c for c in cands if c.kind != "people"),
        key=lambda c: (c.confidence < RULE_CONFIDENCE, -c.length, -c.confidence, c.start),
    )
    kept: list[_Cand] = []
    for c in things:
        if not any(_overlaps(c, k) for k in kept):
            kept.append(c)
    people: list[_Cand] = []
    for p in sorted(
        (c for c in cands if c.kind == "people"), key=lambda c: (-c.length, -c.confidence, c.start)
    ):
        if any(_overlaps(p, q) for q in people):
            continue
        clashes = [
            k
            for k in kept
            if _overlaps(p, k) and not (k.owner is not None and k.owner[0] <= p.start and p.end <= k.owner[1])
        ]
        inside = [k for k in clashes if k.start <= p.start and p.end <= k.end]
        # "Mary" inside "St. Mary's Church"; a name the legacy knows as a person's keeps its own span
        if any(k.length > p.length or p.confidence < KNOWN_NAME_CONFIDENCE for k in inside):
            continue
        if all(p.length > k.length or p.confidence > k.confidence for k in clashes):
            for k in clashes:
                kept.remove(k)
            people.append(p)
    # "the flood" and "the 1962 flood" in one story: keep only the specific one
    specific = {
        (c.kind, c.head) for c in kept if c.name.lower() != c.head and c.confidence >= RULE_CONFIDENCE
    }
    kept = [c for c in kept if not (c.name.lower() == c.head and (c.kind, c.head) in specific)]
    return sorted(people + kept, key=lambda c: c.start)


def _short_names(cands: list[_Cand]) -> tuple[list[_Cand], dict[str, str]]:
    """'Harold' after 'Harold Brennan' in one story is the same person, named once: drop the short
    form when exactly one longer name starts or ends with it. Returns the kept candidates and
    the renames (short -> long) for relationships."""
    longer: dict[str, set[str]] = {}
    for p in cands:
        words = p.name.split()
        if p.kind == "people" and len(words) > 1:
            for w in (words[0], words[-1]):
                longer.setdefault(w.casefold(), set()).add(p.name)
    renames: dict[str, str] = {}
    kept = []
    for c in cands:
        full = longer.get(c.name.casefold(), set()) if c.kind == "people" and " " not in c.name else set()
        if len(full) == 1 and not c.context:
            renames[c.name] = next(iter(full))
        else:
            kept.append(c)
    return kept, renames


def _dedupe(cands: Iterable[_Cand]) -> list[_Cand]:
    best: dict[tuple[str, str], _Cand] = {}
    for c in cands:
        key = (c.kind, c.name.casefold())
        have = best.get(key)
        if have is None or c.confidence > have.confidence:
            if have is not None:
                c.context = c.context or have.context
                c.location = c.location or have.location
                c.date = c.date or have.date
            best[key] = c
        else:
            have.context = have.context or c.context
            have.location = have.location or c.location
            have.date = have.date or c.date
    return list(best.values())


def _entities(doc: Any, known: Any, version: str) -> ExtractedEntities:
    spans = known(doc) if known is not None else []  # known names: read once, used twice
    retag_places(doc, spans)  # "a flat in Lyon": the model's person is a place
    retag_people(doc)  # "a boy called Jayden": the model's place is a person
    animals = named_animals(doc, spans)  # "our cat Biscuit": a thing, wherever the story names it
    works = quoted_works(doc)  # played "Danny Boy": a song, no person
    people = outside_works(without_animals(_people(doc, spans), animals), works)
    things = _proper_places(doc) + _ner_places_events(doc) + _noun_entities(doc) + animals + works
    things = without_greetings(doc, things)  # "Welcome home, stranger"; "Happy Easter!" -> "Easter"
    things = without_seasons(things)  # "the Easter bread": no place
    promote_repeated_names(doc, things, people)
    cands = people + things
    chosen = _select(cands)
    times = _time_references(doc, [c for c in cands if c.kind == "events"])
    rels = _relations(doc, chosen)
    facts = _facts(doc, chosen)
    chosen = given_things(chosen, facts)
    chosen, renames = _short_names(chosen)
    if renames:
        rels = [r.model_copy(update={"subject": renames.get(r.subject, r.subject)}) for r in rels]
        facts = [
            f.model_copy(
                update={"source": renames.get(f.source, f.source), "target": renames.get(f.target, f.target)}
            )
            for f in facts
        ]
    final = _dedupe(chosen)
    return ExtractedEntities(
        people=tuple(
            ExtractedPerson(name=c.name, context=c.context, confidence=c.confidence)
            for c in final
            if c.kind == "people"
        ),
        places=tuple(
            ExtractedPlace(name=c.name, type=c.type, location=c.location, confidence=c.confidence)
            for c in final
            if c.kind == "places"
        ),
        events=tuple(
            ExtractedEvent(name=c.name, type=c.type, date=c.date, confidence=c.confidence)
            for c in final
            if c.kind == "events"
        ),
        objects=tuple(
            ExtractedObject(name=c.name, type=c.type, confidence=c.confidence)
            for c in final
            if c.kind == "objects"
        ),
        time_references=tuple(times.values()),
        relationships=tuple(rels),
        facts=tuple(facts),
        extractor_version=version,
    )
