"""Kinship vocabulary: kin words and phrases ("my dad", "great-aunt", "Nonna") parsed into a
relation and a gender, composed ("my mother's brother") and inverted."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from heirloom.domain.names import _APOSTROPHES, normalize_name

# Kinship vocabulary


class Kin(NamedTuple):
    """A kin relation: `relation` is gender-neutral ("parent", "pibling" for aunt/uncle,
    "great_grandparent"), `gender` is "m", "f" or None."""

    relation: str
    gender: str | None


KIN_LEXICON = "kin.json"


def _fold(word: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))


@cache
def _lexicon() -> dict[str, Any]:
    """config/lexicons/kin.json, read once."""
    text = resources.files("heirloom.config").joinpath("lexicons", KIN_LEXICON).read_text(encoding="utf-8")
    lexicon: dict[str, Any] = json.loads(text)
    return lexicon


def _load(languages: Iterable[str] | None = None) -> dict[str, Kin]:
    """The kin words of `languages` (all when None), with their accent-folded forms ("mãe" and
    "mae"). A word two languages read as different relations is dropped; read with different
    genders, it keeps none."""
    table: dict[str, dict[str, list[str | None]]] = _lexicon()["languages"]
    seen: dict[str, set[tuple[str, str | None]]] = {}
    for language, words in table.items():
        if languages is not None and language not in languages:
            continue
        for word, (relation, gender) in words.items():
            for form in {word, _fold(word)}:
                seen.setdefault(form, set()).add((str(relation), gender))
    out: dict[str, Kin] = {}
    for word, readings in seen.items():
        relations = {r for r, _ in readings}
        if len(relations) == 1:
            genders = {g for _, g in readings}
            out[word] = Kin(relations.pop(), genders.pop() if len(genders) == 1 else None)
    return out


#: single kin words in every language of config/lexicons/kin.json, lower case, spaces and
#: hyphens removed ("step-father" -> "stepfather", "grand-père" -> "grandpère")
KIN_TERMS: dict[str, Kin] = _load()

#: the English ones (the local extractor's vocabulary)
KIN_TERMS_EN: dict[str, Kin] = _load(["en"])


def _possessives() -> frozenset[str]:
    table: dict[str, list[str]] = _lexicon()["possessives"]
    return frozenset(w for words in table.values() for w in words)


#: the narrator's "my" and "our" in every language of the kin lexicon ("minha avó", "mijn opa")
NARRATOR_POSSESSIVES: frozenset[str] = _possessives()

_INVERSE = {
    "parent": "child",
    "child": "parent",
    "grandparent": "grandchild",
    "grandchild": "grandparent",
    "pibling": "nibling",
    "nibling": "pibling",
    "parent_in_law": "child_in_law",
    "child_in_law": "parent_in_law",
    "step_parent": "step_child",
    "step_child": "step_parent",
}
#: "mother's brother" -> uncle: (relation of A to me, relation of B to A) -> relation of B to me
_COMPOSE = {
    ("parent", "parent"): "grandparent",
    ("grandparent", "parent"): "great_grandparent",
    ("parent", "sibling"): "pibling",
    ("pibling", "spouse"): "pibling",
    ("pibling", "child"): "cousin",
    ("sibling", "child"): "nibling",
    ("child", "child"): "grandchild",
    ("spouse", "parent"): "parent_in_law",
    ("spouse", "sibling"): "sibling_in_law",
    ("sibling", "spouse"): "sibling_in_law",
    ("child", "spouse"): "child_in_law",
    ("grandparent", "sibling"): "great_pibling",
}
#: the other way: a relation -> the pairs of links that make it ("pibling": parent's sibling, ...)
DECOMPOSE: dict[str, tuple[tuple[str, str], ...]] = {}
for (_first, _second), _composed in _COMPOSE.items():
    DECOMPOSE[_composed] = (*DECOMPOSE.get(_composed, ()), (_first, _second))
#: a narrator's other parent, recorded only as a parent's spouse ("Dad" when the records hold Mum
#: and her husband), and a spouse's child (`people`; not an asker's: their relatives' names enter
#: the text vector search embeds, and these cost ranks there, docs/evaluation.md "One piano")
THROUGH_SPOUSE: dict[str, tuple[tuple[str, str], ...]] = {
    "parent": (("parent", "spouse"),),
    "child": (("spouse", "child"),),
}


#: kin words that work as a title before a name ("Uncle Jim", "Grandma Rose"); "Father", "Sister",
#: "Brother" and "Mother" before a name are usually religious titles and are not among them.
def kin_titles(terms: dict[str, Kin]) -> frozenset[str]:
    """The words of `terms` that work as a title before a name: aunts and uncles, cousins,
    grandparents."""
    return frozenset(
        w for w, k in terms.items() if k.relation in ("pibling", "great_pibling", "cousin", "grandparent")
    )


_KIN_TITLES = kin_titles(KIN_TERMS)
_HONORIFICS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "miss",
        "mx",
        "dr",
        "doctor",
        "rev",
        "reverend",
        "pastor",
        "father",
        "sister",
        "brother",
        "mother",
        "sir",
        "madam",
    }
)
_QUALIFIERS = frozenset(
    {
        "late", "beloved", "dear", "dearest", "eldest", "oldest", "youngest", "younger", "older", "elder",
        "big", "little", "baby", "only", "paternal", "maternal", "favorite", "favourite", "biological",
        "adoptive", "adopted", "first", "second", "third", "twin", "own",
    }
)  # fmt: skip
_SIDE_PHRASE = re.compile(r"\b(?:on|from)\s+(?:the|my|his|her|their|our)\s+\w+(?:'s)?\s+side\b")


def inverse_relation(relation: str) -> str:
    """What I am to someone who is `relation` to me (gender-neutral)."""
    prefix = ""
    while relation.startswith("great_"):
        prefix += "great_"
        relation = relation.removeprefix("great_")
    return prefix + _INVERSE.get(relation, relation)


def _single_kin(words: list[str]) -> Kin | None:
    greats = 0
    rest = []
    for w in words:
        if w == "great":
            greats += 1
        elif w not in _QUALIFIERS:
            rest.append(w)
    kin = KIN_TERMS.get("".join(rest))
    if kin is None:
        return None
    if greats:
        if kin.relation not in ("grandparent", "grandchild", "pibling", "nibling"):
            return None
        return Kin("great_" * greats + kin.relation, kin.gender)
    return kin


def _kin_title(lowered: list[str]) -> tuple[Kin | None, int]:
    """A kin title opening a name: ("uncle", "jim") -> (uncle, 1); "great uncle jim" -> 2 words."""
    for n in (2, 1):
        if len(lowered) > n:
            parts = " ".join(lowered[:n]).replace("-", " ").split()
            if parts[-1] in _KIN_TITLES and all(p == "great" for p in parts[:-1]):
                return _single_kin(parts), n
    return None, 0


def parse_kin(text: str | None, *, mention: bool = False) -> Kin | None:
    """'father', 'my late father', "mother's brother", 'great-grandmother', 'uncle (mother's side)'.

    With `mention`, the phrase is read from a story's narrator: 'my dad', 'Mom' and a bare
    'grandmother' are narrator-relative; 'his mother' or 'the mother' are not (None)."""
    if not text:
        return None
    t = re.sub(r"\([^)]*\)", " ", text.translate(_APOSTROPHES).lower())
    t = normalize_name(t)
    t = _SIDE_PHRASE.sub(" ", t)
    t = re.sub(r"[-_]", " ", t)
    words = t.split()
    # "my dad", "minha avó", "ma mémé" (but "ma" alone is kin)
    if words and (words[0] in ("my", "our") or (len(words) > 1 and words[0] in NARRATOR_POSSESSIVES)):
        words = words[1:]
    elif words and words[0] in ("his", "her", "their", "the", "a", "an", "your", "its"):
        if mention:
            return None
        words = words[1:]
    if not words:
        return None
    chain = " ".join(words).split("'s ")
    parts = [_single_kin(part.split()) for part in chain]
    if any(p is None for p in parts):
        return None
    kin = parts[0]
    assert kin is not None
    for nxt in parts[1:]:
        assert nxt is not None
        composed = _COMPOSE.get((kin.relation, nxt.relation))
        if composed is None:
            return None
        kin = Kin(composed, nxt.gender)
    return kin
