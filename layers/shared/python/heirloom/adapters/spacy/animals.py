"""Animals the family names: "our cat Biscuit", "a parakeet named Pastor Rudd", "Biscuit, the old
cat", "Rex the dog". The small model tags such a name nothing, or a person; a named animal is a
thing (an object of type "animal"), never a person, wherever else the story uses its name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _ADJ,
    _ANIMAL_WORDS,
    _DETERMINERS,
    _KIN_TITLE_WORDS,
    _KIN_WORDS,
    _NAMING,
    _NOMINAL,
    _POSSESSIVE_MARKS,
    _POSSESSIVE_PRONOUNS,
)
from heirloom.adapters.spacy.tokens import KNOWN_NAME_CONFIDENCE, RULE_CONFIDENCE, _Cand, _verb

#: the longest name read (words)
_MAX_NAME = 3


def _name_word(token: Any) -> bool:
    """A capitalised word that may be part of a name: letters (an apostrophe or hyphen inside),
    no kin word or title ("the dog Mom got us"), no "I"."""
    text = token.text
    return (
        token.tag_ in _NOMINAL
        and text[:1].isupper()
        and text.replace("'", "").replace("-", "").isalpha()
        and text != "I"
        and text.lower() not in _KIN_WORDS | _KIN_TITLE_WORDS
    )


def _name_from(doc: Any, i: int) -> int | None:
    """The end of a name of up to `_MAX_NAME` capitalised words starting at `i`, never an
    owner's ("the dog Bill's sister kept"), else None."""
    end = i
    while end < len(doc) and end - i < _MAX_NAME and _name_word(doc[end]):
        end += 1
    if end == i or (end < len(doc) and doc[end].text in _POSSESSIVE_MARKS):
        return None
    return end


def _name_before(doc: Any, end: int) -> int | None:
    """The start of a name of up to `_MAX_NAME` capitalised words ending at `end`."""
    start = end
    while start > 0 and end - start < _MAX_NAME and _name_word(doc[start - 1]):
        start -= 1
    return start if start < end else None


def _animal(token: Any) -> bool:
    """An animal word as a common noun ("Fish" of "Tamarack Fish Fry" is a name's)."""
    return token.text in _ANIMAL_WORDS and token.tag_ in ("NN", "NNS")


def _names_after(doc: Any, i: int) -> list[tuple[int, int]]:
    """Names from `i` on, one or a list ("Pickle", "Pickle and Mustard", "Pickle, Mustard and
    Bean")."""
    out: list[tuple[int, int]] = []
    while (end := _name_from(doc, i)) is not None:
        out.append((i, end))
        if end + 1 < len(doc) and doc[end].lower_ in ("and", ","):
            i = end + 1
            if doc[i].lower_ == "and":  # "Pickle, Mustard, and Bean"
                i += 1
            continue
        break
    return out


def _owned(doc: Any, i: int) -> bool:
    """The animal word at `i` has an owner: "our cat", "Dad's old dog"."""
    k = i - 1
    while k >= 0 and doc[k].tag_ in _ADJ:
        k -= 1
    return k >= 0 and (doc[k].lower_ in _POSSESSIVE_PRONOUNS or doc[k].text in _POSSESSIVE_MARKS)


def _after_animal(doc: Any, i: int) -> list[tuple[int, int]]:
    """Names right after the animal word at `i`: "our cat Biscuit", "a dog named Rex", "the
    cat, Biscuit,". Without an owner or "named", a name a verb follows is someone else's ("the
    dog Peter found")."""
    k = i + 1
    if k < len(doc) and doc[k].lower_ in _NAMING:
        return _names_after(doc, k + 1)
    if k < len(doc) and doc[k].text == ",":
        names = _names_after(doc, k + 1)
        # an apposition closes with a comma or the sentence: "the cat, Biscuit, hid"
        return names if names and (names[-1][1] == len(doc) or doc[names[-1][1]].is_punct) else []
    names = _names_after(doc, k)
    if names and not _owned(doc, i) and names[-1][1] < len(doc) and _verb(doc[names[-1][1]]):
        return []
    return names


def _before_animal(doc: Any, i: int) -> tuple[int, int] | None:
    """A name right before the phrase of the animal word at `i`: "Rex the dog", "Biscuit, our
    old cat," (an apposition closed by a comma or the sentence), never an object of a verb
    ("gave Mary the dog"); opening a sentence, only as the subject of the verb after it ("Rex
    the dog barked", not "Fry the fish in butter")."""
    k = i - 1
    while k >= 0 and doc[k].tag_ in _ADJ:
        k -= 1
    if k < 0 or doc[k].lower_ not in _DETERMINERS | _POSSESSIVE_PRONOUNS:
        return None
    k -= 1
    apposed = k >= 0 and doc[k].text == ","
    if apposed:
        if i + 1 < len(doc) and not doc[i + 1].is_punct:  # "Mary, the dog is fine"
            return None
        k -= 1
    start = _name_before(doc, k + 1) if k >= 0 else None
    if start is None or (start > 0 and _verb(doc[start - 1])):
        return None
    opens = start == 0 or doc[start - 1].is_punct or doc[start - 1].is_space
    if opens and not apposed and not (i + 1 < len(doc) and _verb(doc[i + 1])):
        return None
    return start, k + 1


def named_animals(doc: Any, known: Sequence[tuple[int, int, int]] = ()) -> list[_Cand]:
    """One object candidate of type "animal" per name the story gives an animal, unless the
    legacy knows the name as a person's (`known`: the known-name matcher's spans)."""
    known_tokens = {t for _, start, end in known for t in range(start, end)}
    found: dict[str, _Cand] = {}
    for token in doc:
        if not _animal(token):
            continue
        spans = _after_animal(doc, token.i)
        if (before := _before_animal(doc, token.i)) is not None:
            spans.append(before)
        for start, end in spans:
            if known_tokens.intersection(range(start, end)):
                continue
            name = doc[start:end].text
            found.setdefault(
                name, _Cand("objects", start, end, name, RULE_CONFIDENCE, "animal", head=name.lower())
            )
    return list(found.values())


def without_animals(people: Sequence[_Cand], animals: Sequence[_Cand]) -> list[_Cand]:
    """`people` less the names the story gives its animals (a name the legacy knows as a
    person's stays a person)."""
    names = {a.name for a in animals}
    return [p for p in people if p.name not in names or p.confidence >= KNOWN_NAME_CONFIDENCE]
