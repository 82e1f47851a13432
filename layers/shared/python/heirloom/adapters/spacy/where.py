"""Names the model tagged a person that the sentence puts somewhere ("a flat in Lyon", "moved to
Duluth", "back from Lyon"), there or where the model tagged nothing, and the same name elsewhere
in the story: a place. The small model often reads a one-word town as a person; a name the
legacy knows as a person's stays one. The other way round, a name the story gives a person ("a
boy called Jayden") is a person's wherever the model tagged it a place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _AT_IDIOMS,
    _MOTION_WORDS,
    _NAMING,
    _NOUN,
    _PERSON_NOUNS,
    _PLACE_LABELS,
    _PLACE_OF_NOUNS,
    _POSSESSIVE_MARKS,
    _SEASONS,
    _WHERE_AFTER_THE,
    _WHERE_PREPOSITIONS,
)
from heirloom.adapters.spacy.tokens import _Cand, occurrences

#: the model's labels of a name the sentence may put somewhere (its label aside, the words are
#: then a place's wherever the story has them)
_NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC"})


#: words between a motion word and its "to" or "from" ("drove back from", "flew straight to")
_ON_THE_WAY = frozenset({"back", "home", "away", "out", "up", "down", "over", "off", "right", "straight"})


def _goes(doc: Any, i: int) -> bool:
    """The "to" or "from" at `i` is one of going somewhere: the word before it, past "back",
    "home" and the like, is a word of motion ("moved to", "drove back from", "the trip to")."""
    k = i - 1
    while k >= 0 and doc[k].lower_ in _ON_THE_WAY:
        k -= 1
    return k >= 0 and doc[k].lower_ in _MOTION_WORDS


def _put_somewhere(doc: Any, ent: Any) -> bool:
    """The entity follows a preposition of where, or a "to"/"from" of going, and is no owner
    ("in Bea's kitchen")."""
    owner = ent[-1].text in _POSSESSIVE_MARKS or (
        ent.end < len(doc) and doc[ent.end].text in _POSSESSIVE_MARKS
    )
    if ent.start == 0 or owner:
        return False
    prep = doc[ent.start - 1]
    if prep.lower_ in _WHERE_PREPOSITIONS or (prep.lower_ in ("to", "from") and _goes(doc, ent.start - 1)):
        return True
    return ent.start > 1 and _where_by_words(doc, ent, doc[ent.start - 2])


def _where_by_words(doc: Any, ent: Any, before: Any) -> bool:
    """rules-16: "the port of Rotterdam" (a noun of a place and "of"); "on the Maas", "up the
    Rhine" (one proper noun after "the" after a preposition of where: a river's or a vessel's
    name, never a family's "the Dekkers"); "the lock at Ampsin" (a noun and "at", not "a look at
    Bea")."""
    prep = doc[ent.start - 1]
    if prep.lower_ == "of":
        return before.lower_ in _PLACE_OF_NOUNS
    if prep.text == "the":  # lower case: not a name's own "The"
        return before.lower_ in _WHERE_AFTER_THE and all(t.tag_ == "NNP" for t in ent)
    if prep.lower_ == "at":
        determiner = doc[before.i - 1].lower_ if before.i > 0 else ""
        return before.tag_ in _NOUN and before.lower_ not in _AT_IDIOMS and determiner not in ("a", "an")
    return False


def _untagged_somewhere(doc: Any, words: tuple[str, ...]) -> bool:
    """`words` stand somewhere in the story outside every entity, put somewhere and not the
    start of a longer name ("the clinic in Lyon", the model tagging nothing there)."""
    n = len(words)
    for i in occurrences(doc, words, start=1):
        span = doc[i : i + n]
        if any(t.ent_type_ for t in span):
            continue
        longer = i + n < len(doc) and doc[i + n].is_title
        if not longer and _put_somewhere(doc, span):
            return True
    return False


def retag_places(doc: Any, known: Sequence[tuple[int, int, int]]) -> None:
    """Relabel as GPE the model's PERSON entities whose words the story puts somewhere once
    (`_put_somewhere`, whatever the model tagged them there, or nothing), unless a known
    person's name covers them. The model's own GPE elsewhere is no evidence: it tags people so
    too ("Virginia")."""
    from spacy.tokens import Span

    known_tokens = {t for _, start, end in known for t in range(start, end)}

    def free(ent: Any) -> bool:
        return ent.label_ == "PERSON" and not any(t in known_tokens for t in range(ent.start, ent.end))

    ents = list(doc.ents)
    where = {ent.text for ent in ents if ent.label_ in _NAME_LABELS and _put_somewhere(doc, ent)}
    where |= {
        e.text
        for e in ents
        if free(e) and e.text not in where and _untagged_somewhere(doc, tuple(t.text for t in e))
    }
    where -= {ent.text for ent in ents if not free(ent) and ent.label_ == "PERSON"}
    if not any(free(ent) and ent.text in where for ent in ents):
        return
    doc.ents = [Span(doc, e.start, e.end, label="GPE") if free(e) and e.text in where else e for e in ents]


def _named_person(doc: Any, start: int) -> bool:
    """The name at `start` follows a word for a person and "called" or "named" ("a boy called
    Jayden", "my friend named Dina"); not a place's ("a pub called the Anchor")."""
    k = start - 1
    if k < 1 or doc[k].lower_ not in _NAMING:
        return False
    return doc[k - 1].lower_ in _PERSON_NOUNS and doc[k - 1].tag_ in _NOUN


def retag_people(doc: Any) -> None:
    """Relabel as PERSON the model's place entities (GPE, LOC, FAC, ORG) whose words the story
    gives a person once (`_named_person`), there and wherever else the story names them."""
    from spacy.tokens import Span

    ents = list(doc.ents)
    named = {e.text for e in ents if e.label_ in _PLACE_LABELS and _named_person(doc, e.start)}
    if not named:
        return
    doc.ents = [
        Span(doc, e.start, e.end, label="PERSON") if e.label_ in _PLACE_LABELS and e.text in named else e
        for e in ents
    ]


def without_seasons(cands: list[_Cand]) -> list[_Cand]:
    """`cands` without a place named by a feast or a season alone ("the Easter bread", "home for
    Easter" tagged LOC or FAC): a time, which the clauses read as one, never a place."""
    return [c for c in cands if not (c.kind == "places" and c.name.lower() in _SEASONS)]
