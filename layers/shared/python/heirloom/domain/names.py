"""Name normalisation: the one key under which two spellings of a name are the same name."""

from __future__ import annotations

import re
import unicodedata

# Names

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'"})
_EDGE_CHARS = " \t\"'“”«»„()[]{}<>,;:!?*_~|/\\-–—…"
_LEADING_DETERMINER = re.compile(r"^(?:the|a|an|my|our|his|her|their|your|its|this|that|these|those)\s+")
_POSSESSIVE_END = re.compile(r"(?:'s|(?<=s)')$", re.IGNORECASE)


def normalize_name(name: str, *, possessive: bool = False, determiners: bool = False) -> str:
    """Collapse whitespace, unify apostrophes, strip surrounding quotes and punctuation (keeping a
    final abbreviation dot, "Jr.", "St."). With `possessive`, a trailing owner's "'s" goes
    ("Ray's" -> "Ray"); with `determiners`, a leading lowercase article or possessive pronoun goes
    ("the mill" -> "mill"). Capitalisation is kept as written."""
    text = " ".join(unicodedata.normalize("NFKC", name).translate(_APOSTROPHES).split())
    previous = None
    while text and text != previous:
        previous = text
        text = text.rstrip(_EDGE_CHARS)
        if text.endswith("."):
            last = text.rsplit(" ", 1)[-1].rstrip(".")
            if len(last) > 3 or not last.isalpha():
                text = text[:-1]
        if possessive:
            text = _POSSESSIVE_END.sub("", text)
        leading_year = re.match(r"'\d\d\b", text)  # "'57 Chevy" keeps its apostrophe
        text = text.strip(" ") if leading_year else text.lstrip(_EDGE_CHARS)
        if determiners:
            text = _LEADING_DETERMINER.sub("", text)
    return text


def name_key(name: str) -> str:
    """Case-insensitive identity of a name for deduplication ("The Mill" == "mill")."""
    text = normalize_name(name).casefold()
    return re.sub(r"^(?:the|a|an)\s+", "", text)


#: event heads a family has many of: "the wedding" of one story and of another story are
#: different days (docs/decisions/0041)
MANY_REFERENT_EVENTS = frozenset({"burial", "funeral", "memorial", "wake", "wedding"})


def one_of_many(label: str, name: str) -> bool:
    """An Event named by one of MANY_REFERENT_EVENTS alone ("wedding", "the Funeral"), nothing
    said of whose or when: its story's own event, never one node with another story's."""
    return label == "Event" and name_key(name) in MANY_REFERENT_EVENTS
