"""What a clause around a mention says: its time references (years, decades, seasons) and the
relations its verbs state (lived in, worked at)."""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _CLAUSE_BREAKS,
    _DECADE_NUMBER,
    _DECADE_WORDS,
    _DETERMINERS,
    _LIVE_VERBS,
    _NOMINAL,
    _POSSESSIVE_PRONOUNS,
    _PROPER,
    _PROPER_PLACE_HEADS,
    _SEASON_LINKS,
    _SEASONS,
    _SHORT_DECADE,
    _WORK_VERBS,
    _YEAR,
)
from heirloom.adapters.spacy.tokens import RELATION_CONFIDENCE, _Cand, _text
from heirloom.contracts.extraction import (
    ExtractedRelationship,
    TimeReference,
)


def _clause_window(doc: Any, start: int, end: int, width: int = 8) -> str:
    left = start
    while (
        left > 0
        and start - left < width
        and doc[left - 1].text not in _CLAUSE_BREAKS
        and not doc[left - 1].is_space
    ):
        left -= 1
    right = end
    while (
        right < len(doc)
        and right - end < width
        and doc[right].text not in _CLAUSE_BREAKS
        and not doc[right].is_space
    ):
        right += 1
    return _text(doc, left, right)


Period = tuple[str, int, int]  # the period as written, and the tokens it spans


def _relative_period(doc: Any, i: int, events: list[_Cand], event_at: dict[int, _Cand]) -> Period | None:
    """ "the summer after the flood", "the winter of 1962"."""
    tok, n = doc[i], len(doc)
    if not (
        tok.lower_ in _SEASONS and tok.tag_ in _NOMINAL and i + 1 < n and doc[i + 1].lower_ in _SEASON_LINKS
    ):
        return None
    j = i + 2
    if j < n and doc[j].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS:
        j += 1
    target = event_at.get(j) or next((c for c in events if c.start <= j < c.end), None)
    if target is not None:
        return _text(doc, i, target.end), i, target.end
    if j < n and _YEAR.match(doc[j].text):
        return _text(doc, i, j + 1), i, j + 1
    return None


def _year_at(doc: Any, i: int) -> Period | None:
    """A year, unless it is a price, a number, part of a phone number or a house number."""
    tok, n = doc[i], len(doc)
    prev = doc[i - 1].lower_ if i else ""
    if not (_YEAR.match(tok.text) and tok.tag_ in ("CD", "NNP", "NN")) or prev in ("$", "#", "no", "number"):
        return None
    phone_like = (i >= 2 and prev in ("-", ".") and doc[i - 2].like_num) or (
        i + 2 < n and doc[i + 1].text in ("-", ".") and doc[i + 2].like_num
    )
    nxt = doc[i + 1] if i + 1 < n else None
    if phone_like or (
        nxt is not None
        and nxt.is_title
        and nxt.tag_ in _PROPER
        and i + 2 < n
        and doc[i + 2].lower_ in _PROPER_PLACE_HEADS
    ):
        return None  # "1962 Elm Street" is a house number
    if nxt is not None and nxt.text in ("'s", "’s", "s"):
        return f"{tok.text}s", i, i + 2  # "the 1970's"
    return tok.text, i, i + 1


def _decade_at(doc: Any, i: int) -> Period | None:
    """ "1960s", "the '60s", "the sixties", "the late sixties"."""
    text = doc[i].text
    prev = doc[i - 1].lower_ if i else ""
    if m := _DECADE_NUMBER.match(text):
        return f"{m.group('y')}s", i, i + 1
    m = _SHORT_DECADE.match(text)
    if m and (prev in ("the", "'", "’") or text.startswith("'")):
        return f"19{m.group('d')}s", i, i + 1
    if doc[i].lower_ in _DECADE_WORDS and (
        prev == "the" or (prev in ("early", "mid", "late") and i > 1 and doc[i - 2].lower_ == "the")
    ):
        return _DECADE_WORDS[doc[i].lower_], i, i + 1
    return None


def _time_references(doc: Any, events: list[_Cand]) -> dict[str, TimeReference]:
    out: dict[str, TimeReference] = {}
    event_at = {c.start: c for c in events}
    for i in range(len(doc)):
        found = _relative_period(doc, i, events, event_at) or _year_at(doc, i) or _decade_at(doc, i)
        if found is not None:
            period, start, end = found
            out.setdefault(
                period.lower(), TimeReference(period=period, context=_clause_window(doc, start, end))
            )
    return out


_PLACE_PREPOSITIONS = ("in", "on", "at", "to", "for", "near")


def _relation(subject: str, predicate: str, obj: str) -> ExtractedRelationship:
    return ExtractedRelationship(
        subject=subject, predicate=predicate, object=obj, confidence=RELATION_CONFIDENCE
    )


def _owner_of(doc: Any, people: list[_Cand], span: tuple[int, int]) -> _Cand | None:
    """The person a possessive names: the person candidate ending there, else a person of the
    story with that name ("Harold's pocket watch" where the model did not tag this "Harold"), or
    the only one whose first or last name it is."""
    found = {p.end - 1: p for p in people}.get(span[1] - 1)
    if found is not None:
        return found
    text = _text(doc, *span).casefold()
    same = [p for p in people if p.name.casefold() == text]
    if not same and " " not in text:
        same = [p for p in people if text in (p.name.casefold().split()[0], p.name.casefold().split()[-1])]
    return same[0] if len({p.name for p in same}) == 1 else None


def _event_place(doc: Any, event: _Cand, places: dict[int, _Cand]) -> _Cand | None:
    """ "the wedding at St. Mary's": the place right after the event."""
    k = event.end
    if k + 1 < len(doc) and doc[k].lower_ in ("at", "in", "on"):
        return places.get(k + 1 + (doc[k + 1].lower_ in _DETERMINERS))
    return None


def _verb_place(doc: Any, person: _Cand, places: dict[int, _Cand]) -> tuple[str, _Cand] | None:
    """ "Grandpa Joe worked at the mill", "Edith grew up on Cedar Street": the first living or
    working verb of the person's clause, and the place after its preposition."""
    for k in range(person.end, min(len(doc), person.end + 5)):
        if doc[k].text in _CLAUSE_BREAKS:
            return None
        word = doc[k].lower_
        if word in _LIVE_VERBS or word in _WORK_VERBS:
            j = k + 1
            while j < min(len(doc), k + 4) and doc[j].lower_ not in _PLACE_PREPOSITIONS:
                j += 1
            if not (j < len(doc) - 1 and doc[j].lower_ in _PLACE_PREPOSITIONS):
                return None
            j += 1
            place = places.get(j + (doc[j].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS))
            return None if place is None else ("WORKED_AT" if word in _WORK_VERBS else "LIVED_IN", place)
    return None


def _relations(doc: Any, cands: list[_Cand]) -> list[ExtractedRelationship]:
    rels: list[ExtractedRelationship] = []
    people = [c for c in cands if c.kind == "people"]
    places = {c.start: c for c in cands if c.kind == "places"}
    for c in cands:
        # "Harold's wedding": Harold took part; "Harold's funeral" is his, he did not take part
        owner = (
            _owner_of(doc, people, c.owner)
            if c.owner is not None and c.kind in ("objects", "events") and c.type != "funeral"
            else None
        )
        if owner is not None:
            rels.append(_relation(owner.name, "OWNED" if c.kind == "objects" else "PARTICIPATED_IN", c.name))
        place = _event_place(doc, c, places) if c.kind == "events" else None
        if place is not None:
            rels.append(_relation(c.name, "TOOK_PLACE_AT", place.name))
    for p in people:
        found = _verb_place(doc, p, places)
        if found is not None:
            rels.append(_relation(p.name, found[0], found[1].name))
    return rels
