"""Candidates and the token tests every rule shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from heirloom.adapters.spacy.lexicon import _KIN_WORDS, _NOMINAL

#: where a candidate came from: the model's NER, a known name, a rule, a relation verb, a weak guess
NER_CONFIDENCE = 0.85
KNOWN_NAME_CONFIDENCE = 0.9
RULE_CONFIDENCE = 0.8
RELATION_CONFIDENCE = 0.75
WEAK_CONFIDENCE = 0.6
#: what a known-name match is: a known name or alias, or only a known person's given name
KNOWN_NAME, GIVEN_NAME = 0, 1


# Candidates


@dataclass
class _Cand:
    kind: str  # people | places | events | objects
    start: int
    end: int
    name: str
    confidence: float
    type: str = "other"
    context: str = ""
    location: str | None = None
    date: str | None = None
    head: str = ""
    owner: tuple[int, int] | None = None  # token range of a possessor inside the span
    org_guess: bool = False  # a place from the model's ORG with no place word in its name

    @property
    def length(self) -> int:
        return self.end - self.start


def _text(doc: Any, start: int, end: int) -> str:
    return str(doc[start:end].text).strip()


def _capitalised(token: Any) -> bool:
    """'Jim', 'DeLuca', "O'Brien" (spaCy's is_title is False for the last two)."""
    return bool(token.text[:1].isupper())


def occurrences(doc: Any, words: Sequence[str], start: int = 0) -> Iterator[int]:
    """Where `words` stand in `doc` from `start` on, as consecutive tokens of those texts: the
    index of each first token (its first word compared before any other)."""
    n = len(words)
    for k in range(start, len(doc) - n + 1):
        if doc[k].text == words[0] and all(doc[k + j].text == words[j] for j in range(1, n)):
            yield k


def _drawn_out(token: Any) -> bool:
    """ "Nooo", "Sooo": a letter three times running draws a word out; no name is spelled so."""
    text = token.lower_
    return any(a.isalpha() and a == b == c for a, b, c in zip(text, text[1:], text[2:], strict=False))


def _verb(token: Any) -> bool:
    """A verb or a modal, by its fine-grained tag."""
    return bool(token.tag_.startswith("VB") or token.tag_ == "MD")


def _is_kin(token: Any) -> bool:
    return token.lower_ in _KIN_WORDS and token.tag_ in _NOMINAL


def _kin_start(doc: Any, i: int) -> int:
    """Extend a kin word left over "great-" prefixes ("great - grandmother")."""
    start = i
    while start >= 2 and doc[start - 1].tag_ == "HYPH" and doc[start - 2].lower_ == "great":
        start -= 2
    while start >= 1 and doc[start - 1].lower_ == "great":
        start -= 1
    return start
