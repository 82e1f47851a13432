"""People: model entities, capitalised names and kin phrases ("my dad", "Uncle Jim")."""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _DETERMINERS,
    _KIN_NEEDS_POSSESSIVE,
    _KIN_TITLE_WORDS,
    _KIN_WORDS,
    _NARRATOR_POSSESSIVES,
    _PERSON_STOPWORDS,
    _POSSESSIVE_MARKS,
    _POSSESSIVE_PRONOUNS,
    _PROPER,
)
from heirloom.adapters.spacy.tokens import (
    KNOWN_NAME_CONFIDENCE,
    NER_CONFIDENCE,
    RULE_CONFIDENCE,
    WEAK_CONFIDENCE,
    _Cand,
    _capitalised,
    _is_kin,
    _kin_start,
    _text,
)


def _people(doc: Any, known: Any) -> list[_Cand]:
    out: list[_Cand] = []
    consumed: set[int] = set()
    apposed: dict[int, str] = {}  # last token of a PERSON entity -> kin word in apposition
    n = len(doc)
    # kin references: "Uncle Jim", "my grandmother", "Mom", "my mother's brother",
    # "my grandmother, Edith Marlowe" (the name, with the kin word as context)
    for i, tok in enumerate(doc):
        if not _is_kin(tok) or i in consumed:
            continue
        kin_word = tok.lower_
        start = _kin_start(doc, i)
        j = i + 1
        while j < n and doc[j].tag_ in _PROPER and _capitalised(doc[j]) and doc[j].lower_ not in _KIN_WORDS:
            j += 1
        before = doc[start - 1].lower_ if start > 0 else ""
        consumed.update(range(start, i + 1))
        if j > i + 1:
            if not (tok.is_title or doc[start].is_title):  # "my grandmother Edith", "his brother Walter"
                out.append(_Cand("people", i + 1, j, _text(doc, i + 1, j), RULE_CONFIDENCE, context=kin_word))
            elif kin_word in _KIN_TITLE_WORDS:  # "Uncle Jim", "Great-Uncle Bob": the title is in the name
                out.append(_Cand("people", start, j, _text(doc, start, j), RULE_CONFIDENCE, context=kin_word))
            else:  # "Father Murphy", "Sister Agnes": a religious title, not kin
                out.append(_Cand("people", start, j, _text(doc, start, j), RULE_CONFIDENCE))
            consumed.update(range(start, j))
            continue
        if (
            i + 2 < n
            and doc[i + 1].text == ","
            and doc[i + 2].ent_type_ == "PERSON"
            and doc[i + 2].ent_iob_ == "B"
        ):
            k = i + 3
            while k < n and doc[k].ent_type_ == "PERSON" and doc[k].ent_iob_ == "I":
                k += 1
            out.append(_Cand("people", i + 2, k, _text(doc, i + 2, k), NER_CONFIDENCE, context=kin_word))
            consumed.update(range(i + 2, k))
            continue
        if (
            before in _NARRATOR_POSSESSIVES
            and start >= 3
            and doc[start - 2].text == ","
            and doc[start - 3].ent_type_ == "PERSON"
        ):
            apposed[start - 3] = kin_word  # "Edith Marlowe, my grandmother"
            continue
        previous = out[-1] if out else None
        if (
            previous is not None
            and start >= 1
            and doc[start - 1].text in _POSSESSIVE_MARKS
            and previous.end == start - 1
            and doc[previous.start].lower_ in _NARRATOR_POSSESSIVES
        ):  # "my mother's brother"
            previous.end = i + 1
            previous.name = _text(doc, previous.start, i + 1)
            previous.context = _text(doc, previous.start + 1, i + 1)
            continue
        if before in _NARRATOR_POSSESSIVES:
            out.append(
                _Cand(
                    "people",
                    start - 1,
                    i + 1,
                    _text(doc, start - 1, i + 1),
                    RULE_CONFIDENCE,
                    context=kin_word,
                )
            )
        elif before in _POSSESSIVE_PRONOUNS or before in _DETERMINERS or tok.tag_ in ("NNS", "NNPS"):
            continue  # "his mother", "the grandmother", "grandparents": not one of the narrator's kin
        elif tok.is_title and kin_word not in _KIN_NEEDS_POSSESSIVE:
            out.append(
                _Cand("people", start, i + 1, _text(doc, start, i + 1), RULE_CONFIDENCE, context=kin_word)
            )
        else:  # a bare lowercase "grandmother's quilt": probably the narrator's, not certain
            out.append(
                _Cand("people", start, i + 1, _text(doc, start, i + 1), WEAK_CONFIDENCE, context=kin_word)
            )

    for ent in doc.ents:
        if ent.label_ != "PERSON":
            continue
        start, end = ent.start, ent.end
        while end > start and (doc[end - 1].text in _POSSESSIVE_MARKS or doc[end - 1].is_punct):
            end -= 1
        while start < end and (doc[start].is_punct or doc[start].lower_ in _DETERMINERS):
            start += 1
        if start >= end or any(t in consumed for t in range(start, end)):
            continue
        words = [t for t in doc[start:end] if t.is_alpha]
        if not words or any(t.like_num for t in doc[start:end]) or not any(_capitalised(t) for t in words):
            continue
        if len(words) == 1 and (words[0].lower_ in _PERSON_STOPWORDS or words[0].lower_ in _KIN_WORDS):
            continue
        context = apposed.get(end - 1, "")
        out.append(_Cand("people", start, end, _text(doc, start, end), NER_CONFIDENCE, context=context))

    # names the legacy already knows, when the model missed them
    if known is not None:
        taken = {t for c in out for t in range(c.start, c.end)}
        for _, start, end in known(doc):
            if any(t in taken for t in range(start, end)):
                continue
            ent_types = {doc[t].ent_type_ for t in range(start, end)} - {"", "PERSON"}
            if ent_types:
                continue  # "May" the month, "Virginia" the state
            conf = KNOWN_NAME_CONFIDENCE if end - start > 1 else RULE_CONFIDENCE
            out.append(_Cand("people", start, end, _text(doc, start, end), conf))
            taken.update(range(start, end))
    return out
