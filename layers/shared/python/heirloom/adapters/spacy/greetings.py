"""Greetings, thanks and apologies that open a sentence or a speaker's turn ("Hey Mel!", "Sorry
Audrey,", "Welcome home, stranger"): the person addressed is a person, the greeting is no part of
a name, a place or an event."""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _CLAUSE_BREAKS,
    _GREETINGS,
    _KIN_WORDS,
    _PERSON_STOPWORDS,
    _PROPER,
    _TERMS_OF_ADDRESS,
    _VOCATIVE_GREETINGS,
)
from heirloom.adapters.spacy.tokens import RULE_CONFIDENCE, _Cand, _capitalised, _text

#: what may follow the person addressed: "Thanks Jon!", "Morning Gina,", "Bye Nate."
_ADDRESS_ENDS = frozenset({",", "!", ".", "?"})
#: the most words a name addressed this way has ("Hi Aunt May" is the kin rules')
_MAX_ADDRESS_WORDS = 2
#: words that are never the name a greeting addresses
_NOT_ADDRESSED = _KIN_WORDS | _PERSON_STOPWORDS | _GREETINGS | _TERMS_OF_ADDRESS


def opens_turn(doc: Any, i: int) -> bool:
    """The first word of a sentence or of a speaker's turn ("Bea: Welcome home")."""
    return i == 0 or bool(doc[i].is_sent_start) or doc[i - 1].text in _CLAUSE_BREAKS


def greeting_at(doc: Any, i: int) -> bool:
    return doc[i].lower_ in _GREETINGS and opens_turn(doc, i)


def after_greeting(doc: Any, start: int, end: int) -> int:
    """The start of a span once the greeting words opening it are left out ("Sorry Audrey" ->
    "Audrey"); `end` when the span is nothing but a greeting ("Merry") or a greeting and a term
    of address ("Cheers Mate")."""
    if not greeting_at(doc, start):
        return start
    while start < end and (doc[start].lower_ in _GREETINGS or doc[start].text == ","):
        start += 1
    if end - start == 1 and doc[start].lower_ in _TERMS_OF_ADDRESS:
        return end
    return start


def term_of_address(doc: Any, start: int, end: int) -> bool:
    """One word that addresses without naming, right after a greeting ("Cheers Mate!", "Thanks,
    Love."): no person, whatever the model tagged it."""
    if end - start != 1 or doc[start].lower_ not in _TERMS_OF_ADDRESS:
        return False
    before = start - 1 - int(start > 0 and doc[start - 1].text == ",")
    return before >= 0 and greeting_at(doc, before)


def exclaimed(doc: Any, start: int, end: int) -> bool:
    """A span that opens with a greeting and ends at a comma or a sentence's end: a greeting, not
    a place or an event ("Welcome home, stranger", "Happy birthday, Joanna!"); "Morning Glory
    Farm is ..." stays a place."""
    return greeting_at(doc, start) and (end >= len(doc) or doc[end].text in _ADDRESS_ENDS)


def without_greetings(doc: Any, things: list[_Cand]) -> list[_Cand]:
    """Places, events and objects with a greeting opening them left out: a proper name after it
    stays ("Happy Easter!" -> "Easter"), a common word goes ("Welcome home, stranger", "Happy
    birthday, Joanna!"); "Morning Glory Farm is ..." is no greeting."""
    out: list[_Cand] = []
    for c in things:
        if term_of_address(doc, c.start, c.end):
            continue  # "Thanks Honey." tagged a place
        if not exclaimed(doc, c.start, c.end):
            out.append(c)
            continue
        start = after_greeting(doc, c.start, c.end)
        if start < c.end and _capitalised(doc[start]):
            c.start, c.name = start, _text(doc, start, c.end)
            out.append(c)
    return out


def addressed(doc: Any) -> list[_Cand]:
    """The person a greeting addresses by name: one or two capitalised proper nouns right after
    it (a comma between allowed), then a comma or a sentence's end ("Thanks Jon!", "Morning,
    Gina."); not a kin word or a title ("Hi Mum!" is the kin rules')."""
    out: list[_Cand] = []
    for i, tok in enumerate(doc):
        if tok.lower_ not in _VOCATIVE_GREETINGS or not opens_turn(doc, i):
            continue
        start = i + 1 + int(i + 1 < len(doc) and doc[i + 1].text == ",")
        end = start
        while (
            end < len(doc)
            and end - start < _MAX_ADDRESS_WORDS
            and doc[end].tag_ in _PROPER
            and _capitalised(doc[end])
            and doc[end].is_alpha
            and doc[end].lower_ not in _NOT_ADDRESSED
        ):
            end += 1
        if end > start and (end == len(doc) or doc[end].text in _ADDRESS_ENDS):
            out.append(_Cand("people", start, end, _text(doc, start, end), RULE_CONFIDENCE))
    return out
