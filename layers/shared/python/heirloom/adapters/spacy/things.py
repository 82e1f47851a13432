"""Places, events and objects: proper place names, noun phrases headed by a lexicon word, and
the model's place and event entities."""

from __future__ import annotations

from typing import Any

from heirloom.adapters.spacy.lexicon import (
    _ADJ,
    _ADV,
    _ANIMATE_POSSESSIONS,
    _DETERMINERS,
    _EVENT_HEADS,
    _EVENT_NEEDS_QUALIFIER,
    _FUNCTION_TAGS,
    _KIN_TITLE_WORDS,
    _KIN_TITLES_ALSO_WORDS,
    _KIN_WORDS,
    _LOCATIVE_PREPOSITIONS,
    _MODIFIER_TAGS,
    _NAME_JOINERS,
    _NOMINAL,
    _NON_DESCRIPTIVE,
    _NOUN,
    _OBJECT_HEADS,
    _OBJECT_PAIRS,
    _PLACE_HEADS,
    _PLACE_LABELS,
    _POSSESSIVE_MARKS,
    _POSSESSIVE_PRONOUNS,
    _PROPER,
    _PROPER_PLACE_HEADS,
    _PROPER_PLACE_PREFIXES,
    _QUANTIFIERS,
    _ROAD_WORDS,
    _SAINTS,
    _WEAK_OBJECT_HEADS,
    _WEAK_PLACE_HEADS,
    _YEAR,
)
from heirloom.adapters.spacy.tokens import (
    NER_CONFIDENCE,
    RULE_CONFIDENCE,
    WEAK_CONFIDENCE,
    _Cand,
    _capitalised,
    _drawn_out,
    _text,
    occurrences,
)
from heirloom.domain.kinship import _HONORIFICS

_INDEFINITE = frozenset({"a", "an"})
#: last words that make a name a place's even after a person's title ("Uncle Sam's Diner")
_ANY_PLACE_HEAD = frozenset(_PROPER_PLACE_HEADS) | frozenset(_PLACE_HEADS) | frozenset(_WEAK_PLACE_HEADS)


def _person_titled(doc: Any, start: int, end: int) -> bool:
    """Does [start, end) open with a kin title in any language of the kinship lexicon ("Aunt",
    "Nonna", "Tonton", "Avó") or an honorific ("Mrs.", "Pastor") and end in no place word? A
    saint's name is a place's ("St. Agatha"): no saint word is a kin title or an honorific. Nor
    is a title that is also an ordinary word or opens place names ("Gran Canaria", "Primo Pizza"):
    the model's place stands."""
    first = doc[start].lower_.rstrip(".")
    titled = first in _KIN_TITLE_WORDS - _KIN_TITLES_ALSO_WORDS or first in _HONORIFICS
    return titled and doc[end - 1].lower_ not in _ANY_PLACE_HEAD


def _proper_places(doc: Any) -> list[_Cand]:
    """'Cedar Street', 'Pike Lake', 'Lake Michigan', "St. Mary's Church", 'Fort Wayne'."""
    out: list[_Cand] = []
    n = len(doc)
    i = 0
    while i < n:
        tok = doc[i]
        is_saint = tok.lower_ in _SAINTS and i + 1 < n and doc[i + 1].is_title
        if not ((tok.tag_ in _PROPER and tok.is_title) or is_saint):
            i += 1
            continue
        j = i + 1
        while j < n and (
            (doc[j].tag_ in _PROPER and (doc[j].is_title or doc[j].is_upper))
            or (
                doc[j].text in _POSSESSIVE_MARKS
                and j + 1 < n
                and doc[j + 1].tag_ in _PROPER
                and doc[j + 1].is_title
            )
        ):
            j += 1
        # [i, j) is a run of capitalised proper nouns
        last, first = doc[j - 1].lower_, tok.lower_
        if j - i >= 2 and last in _PROPER_PLACE_HEADS:
            out.append(
                _Cand(
                    "places",
                    i,
                    j,
                    _text(doc, i, j),
                    RULE_CONFIDENCE,
                    type=_PROPER_PLACE_HEADS[last],
                    head=last,
                )
            )
        elif doc[j - 1].lower_ in _ROAD_WORDS and j < n and doc[j].text.isdigit():
            out.append(
                _Cand("places", i, j + 1, _text(doc, i, j + 1), RULE_CONFIDENCE, type="street", head="route")
            )
            j += 1
        elif j - i >= 2 and first in _PROPER_PLACE_PREFIXES:
            ptype = "water" if first == "lake" else _PROPER_PLACE_PREFIXES[first]
            out.append(_Cand("places", i, j, _text(doc, i, j), RULE_CONFIDENCE, type=ptype, head=first))
        i = j
    return out


#: participles that describe a keepsake rather than start a clause ("the battered trunk")
_KEEPSAKE_PARTICIPLES = ("beloved", "treasured", "battered", "worn", "carved")


def _modifiers_start(doc: Any, head: int, i: int, max_len: int) -> int:
    """The first of the modifiers left of the head, walking left from `i`."""
    while i >= 0 and head - i < max_len and doc[i].tag_ in _MODIFIER_TAGS and not doc[i].is_space:
        if doc[i].tag_ == "HYPH":
            # "an assisted-living place": a hyphenated compound is one modifier, kept whole
            if i == 0 or not doc[i - 1].is_alpha or doc[i - 1].is_space:
                break
            i -= 2
            continue
        if doc[i].tag_ == "VBN" and doc[i].lower_ not in _KEEPSAKE_PARTICIPLES:
            break
        i -= 1
    # a name never starts with punctuation (a hyphen or a stray mark left of the modifiers)
    while i + 1 < head and doc[i + 1].is_punct:
        i += 1
    return i + 1


def _proper_name_start(doc: Any, start: int, head: int) -> int:
    """Without a possessive: leading date words dropped (a stray "Sunday"), and a proper name
    taken across "of" ("the Sons of Italy hall", "the Knights of Columbus hall")."""
    while start < head and doc[start].tag_ in _PROPER and doc[start].ent_type_ in ("DATE", "TIME"):
        start += 1
    if start < head and doc[start].tag_ in _PROPER and start >= 2 and doc[start - 1].lower_ == "of":
        k = start - 2
        while k >= 0 and start - k <= 4 and doc[k].tag_ in _PROPER and _capitalised(doc[k]):
            k -= 1
        if k < start - 2:
            start = k + 1
    return start


def _chunk_left(
    doc: Any, head: int, max_len: int = 6, *, pair: bool = False
) -> tuple[int, tuple[int, int] | None, str | None]:
    """Walk left from a head noun over modifiers (`pair`: the word before the head belongs to it
    whatever its tag). Returns (start of the name, possessor token range or None, determiner
    word before the name or None)."""
    start = _modifiers_start(doc, head, head - 2 if pair else head - 1, max_len)
    owner: tuple[int, int] | None = None
    pos_marks = [k for k in range(start, head) if doc[k].tag_ == "POS" or doc[k].text in _POSSESSIVE_MARKS]
    if pos_marks and pos_marks[-1] == start:  # "'s" with nothing before it in the chunk
        start = pos_marks[-1] + 1
    elif pos_marks:
        owner = (start, pos_marks[-1])
    else:
        start = _proper_name_start(doc, start, head)
    # "the same shawl", "the whole farm": words that pick a thing out, not describe it
    while start < head and doc[start].lower_ in _NON_DESCRIPTIVE:
        start += 1
    det: str | None = None
    if start > 0 and doc[start - 1].lower_ in _QUANTIFIERS:
        return start, owner, doc[start - 1].lower_
    if start > 0 and doc[start - 1].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS:
        det = doc[start - 1].lower_
        if owner is not None and owner[0] == start and det in _POSSESSIVE_PRONOUNS:
            owner = (start - 1, owner[1])  # "my grandmother's": the owner is "my grandmother"
            start -= 1
    return start, owner, det


def _ends_noun_phrase(doc: Any, i: int) -> bool:
    if i + 1 >= len(doc):
        return True
    nxt = doc[i + 1]
    # "the recipe box Mom filled": a capitalised word after a lowercase noun starts a new phrase
    return nxt.tag_ not in _NOMINAL or nxt.text in _POSSESSIVE_MARKS or (nxt.is_title and not doc[i].is_title)


def _year_after(doc: Any, head: int) -> tuple[int, str | None]:
    """'flood of 1962' / 'wedding in 1948': (end of the span, year)."""
    if head + 2 < len(doc) and doc[head + 1].lower_ in ("of", "in") and _YEAR.match(doc[head + 2].text):
        return head + 3, doc[head + 2].text
    return head + 1, None


def _head_kind(prev: str, word: str) -> tuple[str, str, bool] | None:
    """(kind, type, strong) of a head noun from the lexicons; strong heads name a thing alone,
    weak ones only with an owner or a modifier."""
    if (prev, word) in _OBJECT_PAIRS:
        return "objects", _OBJECT_PAIRS[(prev, word)], True
    strong_heads = (("objects", _OBJECT_HEADS), ("events", _EVENT_HEADS), ("places", _PLACE_HEADS))
    for kind, heads in strong_heads:
        if word in heads:
            return kind, heads[word], not (kind == "events" and word in _EVENT_NEEDS_QUALIFIER)
    for kind, heads in (("objects", _WEAK_OBJECT_HEADS), ("places", _WEAK_PLACE_HEADS)):
        if word in heads:
            return kind, heads[word], False
    return None


def _noun_entities(doc: Any) -> list[_Cand]:
    out: list[_Cand] = []
    for h, tok in enumerate(doc):
        word = tok.lower_
        pair_word = doc[h - 1].lower_ if h > 0 else ""
        # a proper-noun head only for known heirlooms: "the family Bible", "his Purple Heart"
        proper_ok = word in _OBJECT_HEADS or (pair_word, word) in _OBJECT_PAIRS
        if not (tok.tag_ in _NOUN or (tok.tag_ in _PROPER and proper_ok)) or not _ends_noun_phrase(doc, h):
            continue
        # "rolling pin", "rocking chair": the tagger often reads the modifier as a verb (VBG)
        prev = doc[h - 1].lower_ if h > 0 and doc[h - 1].tag_ in _NOMINAL | _ADJ | {"VBG"} else ""
        headed = _head_kind(prev, word)
        if headed is None:
            continue
        kind, ctype, strong = headed
        start, owner, det = _chunk_left(doc, h, pair=(prev, word) in _OBJECT_PAIRS)
        end, year = _year_after(doc, h) if kind == "events" else (h + 1, None)
        name_start = start
        if doc[name_start].lower_ in _DETERMINERS | _POSSESSIVE_PRONOUNS:
            name_start += 1  # "my grandmother's quilt" is named "grandmother's quilt"
        if name_start >= end:
            continue
        mods = [t for t in doc[name_start:h] if owner is None or t.i >= owner[1] + 1]
        qualified = (
            owner is not None
            or year is not None
            or any(t.tag_ in _NOMINAL or t.tag_ == "CD" or t.is_title for t in mods)
        )
        if kind == "events" and year is None:
            year = next((t.text for t in doc[name_start:h] if _YEAR.match(t.text)), None)
        if strong:
            # "the mill", "the 1962 flood", and "a fiddle": an heirloom noun is specific enough
            definite = det is not None and det not in _INDEFINITE
            specific = qualified or definite or (kind == "objects" and det in _INDEFINITE)
        else:
            # "Dad's truck", "Ray's party", "the 1962 fire", "the retirement party", "the lake house"
            noun_modifier = any(t.tag_ in _NOMINAL for t in mods)
            specific = owner is not None or year is not None or (noun_modifier and kind != "objects")
        conf = RULE_CONFIDENCE if specific and det not in _QUANTIFIERS else WEAK_CONFIDENCE
        if kind == "places" and owner is not None:
            ctype = "residence" if ctype in ("residence", "other") else ctype
        out.append(
            _Cand(
                kind,
                name_start,
                end,
                _text(doc, name_start, end),
                conf,
                type=ctype,
                date=year,
                head=word,
                owner=owner,
            )
        )
    return out


def _sentence_of(doc: Any) -> list[int]:
    """Each token's sentence number, counted at sentence-final marks (the pipeline runs no
    parser or sentencizer)."""
    out, n = [], 0
    for tok in doc:
        out.append(n)
        if tok.text in (".", "!", "?"):
            n += 1
    return out


def promote_repeated_names(doc: Any, cands: list[_Cand], people: list[_Cand]) -> None:
    """A place the model guessed from an ORG name, two or more capitalised words, becomes a rule
    candidate when the story corroborates it: it names it again in another sentence ("Larkspur
    Terrace ... the nurses at Larkspur Terrace"), or right after a locative preposition ("moved
    into Larkspur Terrace"). Otherwise it stays a weak guess (the small model tags many things
    ORG: "Flying Geese" a quilt pattern). Not a name that shares a word with a person the story
    names (a name opening with a kin title or an honorific is no candidate: `_person_titled`)."""
    person_words = {w.casefold() for p in people for w in p.name.split()}
    for c in cands:
        if not c.org_guess or c.confidence >= RULE_CONFIDENCE:
            continue
        if person_words & {t.lower_ for t in doc[c.start : c.end]}:
            continue
        if _corroborated(doc, c.start, c.end) or _after_locative(doc, c.start, c.end):
            c.confidence = RULE_CONFIDENCE


#: prepositions after which a name is where something is or happened ("moved into ...")
_PLACE_PREPOSITIONS = frozenset({"at", "in", "into", "inside", "near", "outside"})


def _after_locative(doc: Any, start: int, end: int) -> bool:
    """Is [start, end) a name of two or more capitalised words right after a locative
    preposition ("lived at Larkspur Terrace", "in the Pelham Mercantile")?"""
    if end - start < 2 or not all(t.is_title for t in doc[start:end]):
        return False
    k = start - 1
    while k >= 0 and doc[k].lower_ in _DETERMINERS:
        k -= 1
    return k >= 0 and doc[k].lower_ in _PLACE_PREPOSITIONS


def _corroborated(doc: Any, start: int, end: int) -> bool:
    """Is [start, end) a name of two or more capitalised words that the story repeats, as the
    same whole name, in another sentence?"""
    words = [t.text for t in doc[start:end]]
    if len(words) < 2 or not all(t.is_title for t in doc[start:end]):
        return False
    sentence = _sentence_of(doc)
    n = len(words)
    seen = {
        sentence[k]
        for k in occurrences(doc, words)
        if not (k + n < len(doc) and doc[k + n].tag_ in _PROPER and doc[k + n].is_title)
        and not (k > 0 and doc[k - 1].tag_ in _PROPER and doc[k - 1].is_title)
    }
    return len(seen) >= 2


def _ends_name(doc: Any, k: int) -> bool:
    """A locative preposition, or a lower-case preposition or conjunction before a kin word
    ("St. Agatha for Grandpa"); not the "of" of "Knights of Columbus", nor the "for" of "School
    for the Deaf", which carry on a name."""
    token = doc[k]
    if token.lower_ in _LOCATIVE_PREPOSITIONS:
        return True
    if token.tag_ not in _FUNCTION_TAGS or not token.is_lower or token.lower_ in _NAME_JOINERS:
        return False
    return k + 1 < len(doc) and doc[k + 1].lower_ in _KIN_TITLE_WORDS | _KIN_WORDS


def _ner_name(doc: Any, ent: Any) -> tuple[int, int] | None:
    """The name inside a model entity: no determiner, possessive or trailing punctuation, cut at
    a locative preposition or a function word before a kin word; None when no capitalised word or
    a number is left."""
    start, end = ent.start, ent.end
    while start < end and doc[start].lower_ in _DETERMINERS:
        start += 1
    # "the Starlite Diner on Route 9", "St. Agatha for Grandpa": the name stops there
    end = next((k for k in range(start + 1, end) if _ends_name(doc, k)), end)
    while end > start and (doc[end - 1].text in _POSSESSIVE_MARKS or doc[end - 1].is_punct):
        end -= 1
    if start >= end or any(t.like_num or _drawn_out(t) for t in doc[start:end]):
        return None
    if not any(t.is_title or t.is_upper for t in doc[start:end]):
        return None
    return start, end


def _a_thing(doc: Any, start: int, end: int) -> bool:
    """ "a Nash", "an old Plymouth", "our Midsummer", "a very wet Labrador": a proper name heading
    its phrase after "a", "an" or a possessive pronoun (adjectives and adverbs between) names a
    make, a family, a breed or a feast; a place name takes neither. Not one that modifies a noun
    ("a Minnesota winter")."""
    k = start - 1
    while k >= 0 and doc[k].tag_ in _ADJ | _ADV:
        k -= 1
    if k < 0 or doc[k].lower_ not in _INDEFINITE | _POSSESSIVE_PRONOUNS:
        return False
    return not (end < len(doc) and doc[end].tag_ in _NOMINAL)


#: what a name's "'s" gives only a person or an animal (`_animate`)
_ANIMATE_HAD = _ANIMATE_POSSESSIONS | _KIN_WORDS


def _animate(doc: Any, words: list[str]) -> bool:
    """Does the story give `words` (a name) something only a person or an animal has, with an
    "'s" ("Thimble's stitches", "Dina's birthday", "Tess's husband"), adjectives between?"""
    n = len(words)
    for k in occurrences(doc, words):
        if k + n + 1 >= len(doc) or doc[k + n].text not in _POSSESSIVE_MARKS:
            continue
        j = k + n + 1
        while j < len(doc) and doc[j].tag_ in _ADJ:
            j += 1
        if j < len(doc) and doc[j].lower_ in _ANIMATE_HAD:
            return True
    return False


def _ner_places_events(doc: Any) -> list[_Cand]:
    out: list[_Cand] = []
    for ent in doc.ents:
        label = ent.label_
        if label not in _PLACE_LABELS | {"EVENT"} or (span := _ner_name(doc, ent)) is None:
            continue
        start, end = span
        if label != "EVENT" and (
            _person_titled(doc, start, end)
            or _a_thing(doc, start, end)
            or _animate(doc, [t.text for t in doc[start:end]])
        ):
            continue  # "Nonna Rosa", "Pastor Lund" tagged FAC or GPE: a person; "a Nash": a thing
        name = _text(doc, start, end)
        last = doc[end - 1].lower_
        if label == "EVENT":
            out.append(
                _Cand(
                    "events",
                    start,
                    end,
                    name,
                    NER_CONFIDENCE,
                    type=next(
                        (_EVENT_HEADS[t.lower_] for t in doc[start:end] if t.lower_ in _EVENT_HEADS), "other"
                    ),
                    head=last,
                )
            )
            continue
        if label == "ORG":
            if last in _PROPER_PLACE_HEADS:
                out.append(
                    _Cand(
                        "places", start, end, name, RULE_CONFIDENCE, type=_PROPER_PLACE_HEADS[last], head=last
                    )
                )
            else:
                guess = _Cand("places", start, end, name, WEAK_CONFIDENCE, type="workplace", head=last)
                guess.org_guess = True
                out.append(guess)
            continue
        ptype = _PROPER_PLACE_HEADS.get(last, "locality" if label == "GPE" else "landmark")
        cand = _Cand("places", start, end, name, NER_CONFIDENCE, type=ptype, head=last)
        # "Duluth, Minnesota": the second names where the first is
        if (
            end + 1 < len(doc)
            and doc[end].text == ","
            and doc[end + 1].ent_type_ == "GPE"
            and doc[end + 1].ent_iob_ == "B"
        ):
            k = end + 1
            while k + 1 < len(doc) and doc[k + 1].ent_type_ == "GPE" and doc[k + 1].ent_iob_ == "I":
                k += 1
            cand.location = _text(doc, end + 1, k + 1)
        out.append(cand)
    return out
