"""The local extractor's vocabulary: part-of-speech tag sets and patterns in code, the word lists
as data (heirloom/config/lexicons/extraction_en.json: generic family-story vocabulary, not tuned to
any data set; a change there changes what is extracted, so RULES_VERSION moves with it)."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from heirloom.domain.kinship import _KIN_TITLES, NARRATOR_POSSESSIVES
from heirloom.domain.kinship import KIN_TERMS as KIN_TERMS_ALL
from heirloom.domain.kinship import KIN_TERMS_EN as KIN_TERMS

LEXICON = "extraction_en.json"


@cache
def _lists() -> dict[str, dict[str, Any]]:
    text = resources.files("heirloom.config").joinpath("lexicons", LEXICON).read_text(encoding="utf-8")
    lists: dict[str, dict[str, Any]] = json.loads(text)["lists"]
    return lists


def _words(name: str) -> frozenset[str]:
    return frozenset(_lists()[name]["words"])


def _by_word(name: str) -> dict[str, str]:
    """A list kept as kind -> words in the file, read as word -> kind."""
    return {word: kind for kind, words in _lists()[name]["by_kind"].items() for word in words}


def _by_pair(name: str) -> dict[tuple[str, str], str]:
    pairs: dict[tuple[str, str], str] = {}
    for kind, phrases in _lists()[name]["pairs_by_kind"].items():
        for phrase in phrases:
            first, second = phrase.split(" ")
            pairs[(first, second)] = kind
    return pairs


# Penn Treebank tags the rules read (spaCy's fine-grained `tag_`)
_NOUN = frozenset({"NN", "NNS"})
_PROPER = frozenset({"NNP", "NNPS"})
#: the model's entity labels a place can come from (spaCy's OntoNotes labels)
_PLACE_LABELS = frozenset({"GPE", "LOC", "FAC", "ORG"})
#: prepositions, "to" and conjunctions: lower-case, they end a name ("St. Agatha for Grandpa")
_FUNCTION_TAGS = frozenset({"IN", "TO", "CC"})
_NOMINAL = _NOUN | _PROPER
_ADJ = frozenset({"JJ", "JJR", "JJS"})
_ADV = frozenset({"RB", "RBR", "RBS"})
#: words that give the name after them ("a dog named Rex", "a boy called Jayden")
_NAMING = frozenset({"named", "called"})
_MODIFIER_TAGS = _NOMINAL | _ADJ | {"CD", "HYPH", "POS", "VBN"}

_DETERMINERS = _words("determiners")
_NON_DESCRIPTIVE = _words("non_descriptive")
_QUANTIFIERS = _words("quantifiers")
_POSSESSIVE_PRONOUNS = _words("possessive_pronouns")
_NARRATOR_POSSESSIVES = _words("narrator_possessives")
_POSSESSIVE_MARKS = _words("possessive_marks")
_KIN_NEEDS_POSSESSIVE = _words("kin_needs_possessive")
_KIN_TITLES_ALSO_WORDS = _words("kin_titles_also_words")
_PROPER_PLACE_HEADS = _by_word("proper_place_heads")
_PROPER_PLACE_PREFIXES = _by_word("proper_place_prefixes")
_LOCATIVE_PREPOSITIONS = _words("locative_prepositions")
_PLACE_PREPOSITIONS = _words("place_prepositions")
_WHERE_PREPOSITIONS = _words("where_prepositions")
_MOTION_WORDS = _words("motion_words")
_PLACE_OF_NOUNS = _words("place_of_nouns")
_WHERE_AFTER_THE = _words("where_after_the")
_AT_IDIOMS = _words("at_idioms")
_NAME_JOINERS = _words("name_joiners")
_ROAD_WORDS = _words("road_words")
_SAINTS = _words("saints")
_PLACE_HEADS = _by_word("place_heads")
_WEAK_PLACE_HEADS = _by_word("weak_place_heads")
_EVENT_HEADS = _by_word("event_heads")
_EVENT_NEEDS_QUALIFIER = _words("event_needs_qualifier")
_OBJECT_HEADS = _by_word("object_heads")
_OBJECT_PAIRS = _by_pair("object_pairs")
_WEAK_OBJECT_HEADS = _by_word("weak_object_heads")
_ANIMAL_WORDS = _words("animal_words")
_TITLE_VERBS = _words("title_verbs")
_TITLE_NOUNS = _words("title_nouns")
_DECADE_WORDS = _by_word("decade_words")
_SEASONS = _words("seasons")
_SEASON_LINKS = _words("season_links")
_LIVE_VERBS = _words("live_verbs")
_WORK_VERBS = _words("work_verbs")
_PERSON_STOPWORDS = _words("person_stopwords")
_GREETINGS = _words("greetings")
_VOCATIVE_GREETINGS = _words("vocative_greetings")
_TERMS_OF_ADDRESS = _words("terms_of_address")
_PERSON_NOUNS = _words("person_nouns")
_ANIMATE_POSSESSIONS = _words("animate_possessions")

#: English kin words (single tokens); kin titles of any language of the kin lexicon ("Uncle Jim",
#: "Nonna Rosa"), and those of other languages, read only before a name ("Tonton Marcel")
_KIN_WORDS = frozenset(KIN_TERMS)
_KIN_TITLE_WORDS = _KIN_TITLES
_FOREIGN_KIN_TITLES = _KIN_TITLES - _KIN_WORDS
#: kin words of the other languages, read after a possessive ("minha avó", "mijn opa"); the elders'
#: ones also alone and capitalised, as a form of address ("Opa said", "we visited Vovó")
_FOREIGN_KIN_WORDS = frozenset(KIN_TERMS_ALL) - _KIN_WORDS
_FOREIGN_KIN_ADDRESSES = frozenset(
    w
    for w in _FOREIGN_KIN_WORDS
    if KIN_TERMS_ALL[w].relation in ("parent", "grandparent", "pibling", "great_pibling")
)
#: "my", "our" and their kin-lexicon equivalents ("minha", "ma", "mijn")
_KIN_POSSESSIVES = _NARRATOR_POSSESSIVES | NARRATOR_POSSESSIVES

_YEAR = re.compile(r"^(?:19\d\d|20[0-2]\d)$")
_DECADE_NUMBER = re.compile(r"^(?P<y>(?:19|20)\d0)'?s$")
_SHORT_DECADE = re.compile(r"^'?(?P<d>[0-9]0)'?s$")
_CLAUSE_BREAKS = frozenset({".", ";", "!", "?", ":", "\n", "\n\n"})
