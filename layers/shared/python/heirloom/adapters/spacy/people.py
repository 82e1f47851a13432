"""People: model entities, capitalised names and kin phrases ("my dad", "Uncle Jim", "Nonna Rosa")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from heirloom.adapters.spacy.greetings import addressed, after_greeting, greeting_at, term_of_address
from heirloom.adapters.spacy.lexicon import (
    _ADJ,
    _DETERMINERS,
    _FOREIGN_KIN_ADDRESSES,
    _FOREIGN_KIN_TITLES,
    _FOREIGN_KIN_WORDS,
    _KIN_NEEDS_POSSESSIVE,
    _KIN_POSSESSIVES,
    _KIN_TITLE_WORDS,
    _KIN_TITLES_ALSO_WORDS,
    _KIN_WORDS,
    _NOMINAL,
    _PERSON_STOPWORDS,
    _PLACE_LABELS,
    _PLACE_PREPOSITIONS,
    _POSSESSIVE_MARKS,
    _POSSESSIVE_PRONOUNS,
    _PROPER,
    _VOCATIVE_GREETINGS,
)
from heirloom.adapters.spacy.tokens import (
    GIVEN_NAME,
    KNOWN_NAME_CONFIDENCE,
    NER_CONFIDENCE,
    RULE_CONFIDENCE,
    WEAK_CONFIDENCE,
    _Cand,
    _capitalised,
    _drawn_out,
    _is_kin,
    _kin_start,
    _text,
)


def _name_word(token: Any) -> bool:
    """A capitalised proper noun that is no kin word: a word of the name after a kin title."""
    return token.tag_ in _PROPER and _capitalised(token) and token.lower_ not in _KIN_WORDS


def _foreign_title(doc: Any, i: int) -> bool:
    """ "Nonna Rosa", "Tonton Marcel", "Avó Lurdes": a capitalised kin title of another language
    of the kin lexicon, right before a name (alone, such a word is left to the model)."""
    tok = doc[i]
    return (
        tok.lower_ in _FOREIGN_KIN_TITLES
        and tok.lower_ not in _KIN_NEEDS_POSSESSIVE  # "Pepe Garcia", "Mamie Eisenhower": given names
        and tok.tag_ in _NOMINAL
        and _capitalised(tok)
        and i + 1 < len(doc)
        and _name_word(doc[i + 1])
    )


def _foreign_kin(doc: Any, i: int) -> bool:
    """A kin word of another language of the kin lexicon read as English ones are: after a
    possessive ("my nonna", "minha avó", "mijn opa"; the model tags such words anyhow, so any tag
    but an adjective's or a verb's), or an elder's alone and capitalised as a form of address
    ("Opa said", "we visited Vovó") unless it is also an English word or name ("Mamie", "Pepe")."""
    tok = doc[i]
    if tok.lower_ not in _FOREIGN_KIN_WORDS:
        return False
    if i > 0 and doc[i - 1].lower_ in _KIN_POSSESSIVES:
        return tok.tag_ not in _ADJ and not tok.tag_.startswith("VB")
    return (
        tok.lower_ in _FOREIGN_KIN_ADDRESSES
        and tok.lower_ not in _KIN_NEEDS_POSSESSIVE
        and (tok.tag_ in _NOMINAL or tok.tag_ == "FW")
        and _capitalised(tok)
        and not (i + 1 < len(doc) and _name_word(doc[i + 1]))  # before a name: `_foreign_title`'s
    )


def _foreign_possessive(doc: Any, i: int) -> bool:
    """ "ma" in "ma mémé": a possessive of the kin lexicon before a kin word, not itself kin."""
    return (
        doc[i].lower_ in _KIN_POSSESSIVES
        and i + 1 < len(doc)
        and (doc[i + 1].lower_ in _KIN_WORDS or doc[i + 1].lower_ in _FOREIGN_KIN_WORDS)
    )


def _title_of_a_place(doc: Any, i: int) -> bool:
    """ "Gran Canaria", "the Gran Via", "Primo Pizza": a kin title that is also an ordinary word
    or opens place names is none where the model tags it a place or an article precedes it."""
    tok = doc[i]
    if tok.lower_ not in _KIN_TITLES_ALSO_WORDS or not _capitalised(tok):
        return False
    return tok.ent_type_ in _PLACE_LABELS or (i > 0 and doc[i - 1].lower_ in _DETERMINERS)


@dataclass
class _KinScan:
    """Kin references: "Uncle Jim", "Nonna Rosa", "my grandmother", "Mom", "my mother's brother",
    "my grandmother, Edith Marlowe" (the name, with the kin word as context)."""

    doc: Any
    out: list[_Cand] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)
    #: last token of a PERSON entity -> kin word in apposition ("Edith Marlowe, my grandmother")
    apposed: dict[int, str] = field(default_factory=dict)

    def scan(self) -> _KinScan:
        for i, tok in enumerate(self.doc):
            if i in self.consumed or _title_of_a_place(self.doc, i) or _foreign_possessive(self.doc, i):
                continue
            if _is_kin(tok) or _foreign_title(self.doc, i) or _foreign_kin(self.doc, i):
                self._at(i)
        return self

    def _at(self, i: int) -> None:
        doc, n = self.doc, len(self.doc)
        start = _kin_start(doc, i)
        j = i + 1
        while j < n and _name_word(doc[j]):
            j += 1
        self.consumed.update(range(start, i + 1))
        if j > i + 1:
            self._titled(start, i, j)
        elif not (self._comma_name(i) or self._apposition(start, i) or self._chained(start, i)):
            self._bare(start, i)

    def _titled(self, start: int, i: int, j: int) -> None:
        doc, kin_word = self.doc, self.doc[i].lower_
        if not (doc[i].is_title or doc[start].is_title):  # "my grandmother Edith", "his brother Walter"
            # the kin word says a person, against the model's place ("my sister Tess" tagged FAC)
            placed = any(doc[t].ent_type_ in _PLACE_LABELS for t in range(i + 1, j))
            conf = KNOWN_NAME_CONFIDENCE if placed else RULE_CONFIDENCE
            self.out.append(_Cand("people", i + 1, j, _text(doc, i + 1, j), conf, context=kin_word))
        elif (
            kin_word in _KIN_TITLE_WORDS
        ):  # "Uncle Jim", "Great-Uncle Bob", "Nonna Rosa": the title is in the name
            self.out.append(
                _Cand("people", start, j, _text(doc, start, j), RULE_CONFIDENCE, context=kin_word)
            )
        else:  # "Father Murphy", "Sister Agnes": a religious title, not kin
            self.out.append(_Cand("people", start, j, _text(doc, start, j), RULE_CONFIDENCE))
        self.consumed.update(range(start, j))

    def _comma_name(self, i: int) -> bool:
        """ "my grandmother, Edith Marlowe": the name the model found after the comma."""
        doc, n = self.doc, len(self.doc)
        if not (i + 2 < n and doc[i + 1].text == "," and doc[i + 2].ent_type_ == "PERSON"):
            return False
        if doc[i + 2].ent_iob_ != "B":
            return False
        k = i + 3
        while k < n and doc[k].ent_type_ == "PERSON" and doc[k].ent_iob_ == "I":
            k += 1
        self.out.append(
            _Cand("people", i + 2, k, _text(doc, i + 2, k), NER_CONFIDENCE, context=doc[i].lower_)
        )
        self.consumed.update(range(i + 2, k))
        return True

    def _apposition(self, start: int, i: int) -> bool:
        """ "Edith Marlowe, my grandmother": the kin word becomes the entity's context."""
        doc = self.doc
        before = doc[start - 1].lower_ if start > 0 else ""
        if not (before in _KIN_POSSESSIVES and start >= 3 and doc[start - 2].text == ","):
            return False
        if doc[start - 3].ent_type_ != "PERSON":
            return False
        self.apposed[start - 3] = doc[i].lower_
        return True

    def _chained(self, start: int, i: int) -> bool:
        """ "my mother's brother": the previous kin reference extended."""
        doc, previous = self.doc, (self.out[-1] if self.out else None)
        if previous is None or start < 1 or doc[start - 1].text not in _POSSESSIVE_MARKS:
            return False
        if previous.end != start - 1 or doc[previous.start].lower_ not in _KIN_POSSESSIVES:
            return False
        previous.end = i + 1
        previous.name = _text(doc, previous.start, i + 1)
        previous.context = _text(doc, previous.start + 1, i + 1)
        return True

    def _bare(self, start: int, i: int) -> None:
        doc, tok = self.doc, self.doc[i]
        kin_word = tok.lower_
        before = doc[start - 1].lower_ if start > 0 else ""
        if before in _KIN_POSSESSIVES:
            cand = _Cand(
                "people", start - 1, i + 1, _text(doc, start - 1, i + 1), RULE_CONFIDENCE, context=kin_word
            )
        elif before in _POSSESSIVE_PRONOUNS or before in _DETERMINERS:
            return  # "his mother", "the grandmother": not one of the narrator's kin
        elif tok.tag_ in ("NNS", "NNPS") and kin_word in _KIN_WORDS:
            return  # "grandparents" (the model's plural tags on other languages' words mean nothing)
        elif tok.is_title and kin_word not in _KIN_NEEDS_POSSESSIVE:
            cand = _Cand("people", start, i + 1, _text(doc, start, i + 1), RULE_CONFIDENCE, context=kin_word)
        else:  # a bare lowercase "grandmother's quilt": probably the narrator's, not certain
            cand = _Cand("people", start, i + 1, _text(doc, start, i + 1), WEAK_CONFIDENCE, context=kin_word)
        self.out.append(cand)


def _ner_person(doc: Any, ent: Any, consumed: set[int], apposed: dict[int, str]) -> _Cand | None:
    """A PERSON entity of the model, trimmed of punctuation and determiners, unless it is no name."""
    start, end = ent.start, ent.end
    while end > start and (doc[end - 1].text in _POSSESSIVE_MARKS or doc[end - 1].is_punct):
        end -= 1
    while start < end and (doc[start].is_punct or doc[start].lower_ in _DETERMINERS):
        start += 1
    if greeting_at(doc, start):  # "Sorry Audrey" -> "Audrey"; "Merry", "Merry Christmas": no one
        if doc[start].lower_ not in _VOCATIVE_GREETINGS:
            return None
        start = after_greeting(doc, start, end)
    if term_of_address(doc, start, end):  # "Cheers Mate!": no one named
        return None
    if start >= end or any(t in consumed for t in range(start, end)):
        return None
    words = [t for t in doc[start:end] if t.is_alpha]
    if not words or any(t.like_num or _drawn_out(t) for t in doc[start:end]):
        return None
    if not any(_capitalised(t) for t in words):
        return None
    if len(words) == 1 and (words[0].lower_ in _PERSON_STOPWORDS or words[0].lower_ in _KIN_WORDS):
        return None
    return _Cand(
        "people", start, end, _text(doc, start, end), NER_CONFIDENCE, context=apposed.get(end - 1, "")
    )


def _place_evidence(doc: Any, start: int) -> bool:
    """ "moved to Virginia", "back from Georgia": a preposition of place right before a name,
    unless an owner's "'s" follows it ("in Fernanda's car", "at Nadia's")."""
    owner = start + 1 < len(doc) and doc[start + 1].text in _POSSESSIVE_MARKS
    return start > 0 and doc[start - 1].lower_ in _PLACE_PREPOSITIONS and not owner


def _standalone(doc: Any, start: int, end: int) -> bool:
    """One proper-noun word no other capitalised proper noun joins ("Kunle drove us", not
    "Vivian Helmi Rautio", another Vivian's full name), and no transcript's speaker label
    ("Callum: Ouch.")."""

    def joins(i: int) -> bool:
        return 0 <= i < len(doc) and doc[i].tag_ in _PROPER and _capitalised(doc[i])

    label = end < len(doc) and doc[end].text == ":"
    return end - start == 1 and doc[start].tag_ in _PROPER and not (joins(start - 1) or joins(end) or label)


def _known_people(doc: Any, known: Sequence[tuple[int, int, int]], out: list[_Cand]) -> list[_Cand]:
    """Names the legacy already knows, where the model and the rules found nothing; a name of two
    or more capitalised words whatever the model tagged it ("Nurse Halvorsen" as a building); one
    word (a known name or a known person's given name) the model tagged a place, unless a
    preposition of place comes right before it ("Virginia said", not "moved to Virginia"); a
    given name the model tagged nothing, written alone as a proper noun (rules-15)."""
    found: list[_Cand] = []
    taken = {t for c in out for t in range(c.start, c.end)}
    for kind, start, end in known:
        if any(t in taken for t in range(start, end)):
            continue
        tagged = {doc[t].ent_type_ for t in range(start, end)} - {"", "PERSON"}
        words = [t for t in doc[start:end] if _capitalised(t) and t.lower_ not in _DETERMINERS]
        conf = KNOWN_NAME_CONFIDENCE if end - start > 1 else RULE_CONFIDENCE
        # "Kunle drove us": a known person's given name alone, which the model tagged nothing
        given_alone = kind == GIVEN_NAME and not tagged and _standalone(doc, start, end)
        if len(words) < 2 and (tagged or kind == GIVEN_NAME) and not given_alone:
            place = tagged and tagged <= _PLACE_LABELS and end - start == 1
            if not place or _place_evidence(doc, start):
                continue  # "May" the month, "Virginia" after "to", "the Range" a region
            conf = KNOWN_NAME_CONFIDENCE  # against the model's place of the same word
        found.append(_Cand("people", start, end, _text(doc, start, end), conf))
        taken.update(range(start, end))
    return found


def _people(doc: Any, known: Sequence[tuple[int, int, int]]) -> list[_Cand]:
    """The people of a document; `known`: the spans of names the legacy knows (the known-name
    matcher's, once per document)."""
    kin = _KinScan(doc).scan()
    out = list(kin.out)
    for ent in doc.ents:
        if ent.label_ == "PERSON" and (cand := _ner_person(doc, ent, kin.consumed, kin.apposed)) is not None:
            out.append(cand)
    out.extend(addressed(doc))  # "Thanks Jon!": the model often tags no one there
    out.extend(_known_people(doc, known, out))
    return out
