"""Works named by their title in quotes: a song, hymn, book or film ("played "Danny Boy"",
"the Christmas hymn", "Minuit, chrétiens"). A title links the stories that sing or read the
same work; quoted speech ("Farrow," she said; "Test before you touch.") is no title."""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import _TITLE_NOUNS, _TITLE_VERBS
from heirloom.adapters.spacy.tokens import RULE_CONFIDENCE, _Cand, _verb

_OPEN = frozenset({'"', "“"})
_CLOSE = frozenset({'"', "”"})
#: the longest title read (words); without a word saying it is a work, a shorter one
_MAX_WORDS, _MAX_BARE_WORDS = 8, 5
#: how far before the opening quote a word may say what the quoted words are ("sang the "X"")
_CUE_BEFORE = 4
_SPOKEN_ENDS = frozenset({",", "!", "?"})


def _quotes(doc: Any) -> list[tuple[int, int]]:
    """(open, close) token indexes of each quoted stretch of at most `_MAX_WORDS` words plus
    closing punctuation, within a paragraph."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(doc):
        if doc[i].text in _OPEN:
            for k in range(i + 1, min(len(doc), i + _MAX_WORDS + 3)):
                if "\n" in doc[k].text:
                    break
                if doc[k].text in _CLOSE:
                    out.append((i, k))
                    i = k
                    break
        i += 1
    return out


def _said_to_be_a_work(doc: Any, open_: int, close: int) -> bool:
    """A word of singing, playing or reading, or a work's kind, right before the quote ("played
    the "Ave Maria"", "the hymn "X"") or in apposition after it (""X", the Christmas hymn")."""
    start = max(0, open_ - _CUE_BEFORE)
    for k in range(open_ - 1, start - 1, -1):  # the words since the last punctuation
        if doc[k].is_punct:
            start = k + 1
            break
    before = doc[start:open_]
    if any(t.lower_ in _TITLE_VERBS or t.lower_ in _TITLE_NOUNS for t in before):
        return True
    after = doc[close + 1 : close + 7]
    return len(after) > 1 and after[0].text == "," and any(t.lower_ in _TITLE_NOUNS for t in after[1:])


def _bare_title(words: Any) -> bool:
    """Quoted words that read as a title on their own: two to `_MAX_BARE_WORDS` words opening
    with a proper or foreign word, no verb, pronoun or owner (speech has them: "Test before you
    touch.", "And then", "From Walter's family")."""
    return (
        2 <= len(words) <= _MAX_BARE_WORDS
        and words[0].tag_ in ("NNP", "NNPS", "FW")
        and not any(_verb(t) or t.tag_ in ("PRP", "PRP$", "WP", "WRB", "POS") for t in words)
    )


def quoted_works(doc: Any) -> list[_Cand]:
    """One object candidate of type "work" per title in quotes: capitalised, not ending as speech
    does ("Farrow," "Gamma!"), said to be a work or reading as a title alone; not a name the
    model tagged a person's ("Nellie")."""
    found: dict[str, _Cand] = {}
    for open_, close in _quotes(doc):
        end = close
        while end > open_ + 1 and doc[end - 1].is_punct and doc[end - 1].text not in _OPEN:
            end -= 1
        words = doc[open_ + 1 : end]
        spoken = any(t.text in _SPOKEN_ENDS for t in doc[end:close])
        if not len(words) or spoken or not words[0].text[:1].isupper():
            continue
        if len(words) == 1 and words[0].ent_type_ == "PERSON":
            continue
        said = _said_to_be_a_work(doc, open_, close)
        if all(t.ent_type_ == "PERSON" for t in words) and not said:
            continue
        if not (said or _bare_title(words)):
            continue
        name = words.text
        found.setdefault(
            name.casefold(),
            _Cand("objects", words.start, words.end, name, RULE_CONFIDENCE, "work", head=name.lower()),
        )
    return list(found.values())


def outside_works(people: list[_Cand], works: list[_Cand]) -> list[_Cand]:
    """`people` less the names inside a work's title ("Danny Boy")."""
    return [p for p in people if not any(w.start <= p.start and p.end <= w.end for w in works)]
