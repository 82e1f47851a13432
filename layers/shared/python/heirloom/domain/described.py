"""People a message describes rather than names ("her roommate", "the neighbour"): the
description's nouns matched against how the subject's connections are described in the graph."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

_DESCRIPTION_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "with",
        "by",
        "as",
        "is",
        "was",
        "were",
        "be",
        "been",
        "are",
        "am",
        "it",
        "its",
        "he",
        "she",
        "him",
        "her",
        "his",
        "hers",
        "they",
        "them",
        "their",
        "we",
        "us",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "do",
        "did",
        "does",
        "not",
        "no",
        "yes",
        "so",
        "if",
        "then",
        "than",
        "since",
        "until",
        "about",
        "after",
        "before",
        "during",
        "into",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "all",
        "any",
        "some",
        "each",
        "every",
        "both",
        "few",
        "more",
        "most",
        "other",
        "such",
        "only",
        "own",
        "same",
        "too",
        "very",
        "can",
        "could",
        "would",
        "should",
        "will",
        "just",
        "also",
        "ever",
        "never",
        "still",
        "one",
        "two",
        "first",
        "last",
        "old",
        "new",
        "like",
        "ever",
        "get",
        "got",
        "have",
        "had",
        "has",
        "know",
        "knew",
        "tell",
        "told",
        "say",
        "said",
        "best",
        "good",
        "great",
        "little",
        "big",
        "whole",
        "dear",
        "late",
        "young",
        "younger",
        "older",
        "elder",
    ]
)
#: the words a relationship type is described by, besides its detail (already word keys)
_KIND_WORDS: dict[str, frozenset[str]] = {
    "FRIENDS_WITH": frozenset({"friend", "friendship", "pal", "buddy"}),
    "WORKED_WITH": frozenset({"colleague", "coworker", "workmate", "worked", "work", "job"}),
    "KNEW": frozenset({"acquaintance"}),
}
#: a described person is a noun after a determiner or possessive ("the neighbour", "her
#: roommate", "one of Nell's old nurses"), with at most one word between them; not after "my":
#: the asker's relative, whom the asker's relationships resolve (heirloom.domain.asker), is not
#: the subject's connection of that description
_DESCRIPTION = re.compile(
    r"\b(?:the|her|his|their|your|our|whose|[A-Za-z]+['’]s?)\s+(?:[a-z]+\s+)?([a-z][a-z-]+)",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A rough word key: lower case, possessive and plural dropped, British -our as -or."""
    word = word.lower().replace("’", "'").removesuffix("'s").strip("'")
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    if word.endswith("our") and len(word) > 5:
        word = word[:-3] + "or"
    return word


def description_words(text: str) -> set[str]:
    return {
        _stem(w) for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", text) if w.lower() not in _DESCRIPTION_STOPWORDS
    } - {""}


def described_nouns(text: str) -> set[str]:
    """Nouns the message uses to describe someone: "the friend who", "her old roommate"; never
    a name's words ("the Johanna Maria": the gazetteer matches names)."""
    out = set()
    for m in _DESCRIPTION.finditer(text):
        for word in m.group(0).split()[1:]:
            if word.lower() not in _DESCRIPTION_STOPWORDS and not word[:1].isupper():
                out.add(_stem(word))
    return out


def described_people(query: str, rows: Sequence[dict[str, Any]], exclude: Iterable[str] = ()) -> list[str]:
    """Ids of the connections whose relationship detail (or type) shares the most words with
    the message, at least one: "her roommate at Hollis" -> the one described as "roommate at
    Hollis Memorial". People the message names are left out (`exclude`)."""
    wanted = described_nouns(query)
    skip = set(exclude)
    scores: dict[str, int] = {}
    for row in rows:
        person = str(row.get("via_id") or "")
        if not person or person in skip:
            continue
        words = description_words(str(row.get("detail") or "")) | _KIND_WORDS.get(
            str(row.get("relationship") or ""), frozenset()
        )
        overlap = len(wanted & words)
        scores[person] = max(scores.get(person, 0), overlap)
    best = max(scores.values(), default=0)
    return sorted(p for p, n in scores.items() if n == best) if best else []
