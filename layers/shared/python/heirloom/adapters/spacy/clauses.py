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


def _time_references(doc: Any, events: list[_Cand]) -> dict[str, TimeReference]:
    out: dict[str, TimeReference] = {}
    n = len(doc)
    event_at = {c.start: c for c in events}

    def add(period: str, start: int, end: int) -> None:
        out.setdefault(period.lower(), TimeReference(period=period, context=_clause_window(doc, start, end)))

    for i, tok in enumerate(doc):
        text = tok.text
        prev = doc[i - 1].lower_ if i else ""
        # relative periods: "the summer after the flood", "the winter of 1962"
        if (
            tok.lower_ in _SEASONS
            and tok.tag_ in _NOMINAL
            and i + 1 < n
            and doc[i + 1].lower_ in _SEASON_LINKS
        ):
            j = i + 2
            if j < n and doc[j].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS:
                j += 1
            target = event_at.get(j) or next((c for c in events if c.start <= j < c.end), None)
            if target is not None:
                add(_text(doc, i, target.end), i, target.end)
                continue
            if j < n and _YEAR.match(doc[j].text):
                add(_text(doc, i, j + 1), i, j + 1)
                continue
        phone_like = (i >= 2 and prev in ("-", ".") and doc[i - 2].like_num) or (
            i + 2 < n and doc[i + 1].text in ("-", ".") and doc[i + 2].like_num
        )
        if (
            _YEAR.match(text)
            and tok.tag_ in ("CD", "NNP", "NN")
            and prev not in ("$", "#", "no", "number")
            and not phone_like
        ):
            nxt = doc[i + 1] if i + 1 < n else None
            if (
                nxt is not None
                and nxt.is_title
                and nxt.tag_ in _PROPER
                and i + 2 < n
                and doc[i + 2].lower_ in _PROPER_PLACE_HEADS
            ):
                continue  # "1962 Elm Street" is a house number
            if nxt is not None and nxt.text in ("'s", "’s", "s"):
                add(f"{text}s", i, i + 2)  # "the 1970's"
            else:
                add(text, i, i + 1)
            continue
        m = _DECADE_NUMBER.match(text)
        if m:
            add(f"{m.group('y')}s", i, i + 1)
            continue
        m = _SHORT_DECADE.match(text)
        if m and (prev in ("the", "'", "’") or text.startswith("'")):
            add(f"19{m.group('d')}s", i, i + 1)
            continue
        if tok.lower_ in _DECADE_WORDS and (
            prev == "the" or (prev in ("early", "mid", "late") and i > 1 and doc[i - 2].lower_ == "the")
        ):
            add(_DECADE_WORDS[tok.lower_], i, i + 1)
    return out


def _relations(doc: Any, cands: list[_Cand]) -> list[ExtractedRelationship]:
    rels: list[ExtractedRelationship] = []
    people = [c for c in cands if c.kind == "people"]
    person_ending = {p.end - 1: p for p in people}
    places = {c.start: c for c in cands if c.kind == "places"}

    def owner_of(span: tuple[int, int]) -> _Cand | None:
        found = person_ending.get(span[1] - 1)
        if found is not None:
            return found
        # "Harold's pocket watch" where the model did not tag this "Harold": a person of the
        # story with that name, or the only one whose first or last name it is
        text = _text(doc, *span).casefold()
        same = [p for p in people if p.name.casefold() == text]
        if not same and " " not in text:
            same = [
                p for p in people if text in (p.name.casefold().split()[0], p.name.casefold().split()[-1])
            ]
        return same[0] if len({p.name for p in same}) == 1 else None

    for c in cands:
        if c.owner is not None and c.kind in ("objects", "events"):
            owner = owner_of(c.owner)
            if owner is not None:
                predicate = "OWNED" if c.kind == "objects" else "PARTICIPATED_IN"
                rels.append(
                    ExtractedRelationship(
                        subject=owner.name, predicate=predicate, object=c.name, confidence=RELATION_CONFIDENCE
                    )
                )
        if c.kind == "events":
            k = c.end
            if k + 1 < len(doc) and doc[k].lower_ in ("at", "in", "on"):
                j = k + 1 + (doc[k + 1].lower_ in _DETERMINERS)
                place = places.get(j)
                if place is not None:
                    rels.append(
                        ExtractedRelationship(
                            subject=c.name,
                            predicate="TOOK_PLACE_AT",
                            object=place.name,
                            confidence=RELATION_CONFIDENCE,
                        )
                    )
    # "Grandpa Joe worked at the mill", "Edith grew up on Cedar Street"
    for p in people:
        k = p.end
        limit = min(len(doc), p.end + 5)
        while k < limit and doc[k].text not in _CLAUSE_BREAKS:
            word = doc[k].lower_
            if word in _LIVE_VERBS or word in _WORK_VERBS:
                predicate = "WORKED_AT" if word in _WORK_VERBS else "LIVED_IN"
                j = k + 1
                while j < min(len(doc), k + 4) and doc[j].lower_ not in (
                    "in",
                    "on",
                    "at",
                    "to",
                    "for",
                    "near",
                ):
                    j += 1
                if j < len(doc) - 1 and doc[j].lower_ in ("in", "on", "at", "to", "for", "near"):
                    j += 1
                    j += doc[j].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS
                    place = places.get(j)
                    if place is not None:
                        rels.append(
                            ExtractedRelationship(
                                subject=p.name,
                                predicate=predicate,
                                object=place.name,
                                confidence=RELATION_CONFIDENCE,
                            )
                        )
                break
            k += 1
    return rels
