"""IntentAnalysis without an LLM: known-entity matching (seed 003) plus cue lexicons (seed 000 §5).

`Gazetteer` finds the names already in the legacy's graph in a message: a token index over
every full name and alias (case- and accent-insensitive, whole words only, possessives folded,
longest match first), plus first and last names of persons where they are unambiguous.
`classify` scores the six intents from the matches, time expressions and the cue table below,
resolves "she"/"there"/"that summer" against the last messages of the conversation, and returns
a `QueryIntent` (`source="rules"`). The rules are general English cues, not tuned to a dataset.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, cast

from heirloom.contracts.context import EntityMatch, Intent, Message, QueryEntities, QueryIntent

Label = Literal["Person", "Place", "Event", "Object"]
LABELS: frozenset[str] = frozenset({"Person", "Place", "Event", "Object"})

#: below this the classifier answers `general` (seed 000 §5 "Fallback")
MIN_CONFIDENCE = 0.5
MAX_CONFIDENCE = 0.95
#: messages of history used for pronoun resolution
HISTORY_WINDOW = 3
MAX_MATCHES = 12


class GazetteerEntry(NamedTuple):
    node_id: str
    label: Label
    name: str
    aliases: Sequence[str] = ()
    #: the legacy the node belongs to ("" when unknown)
    legacy_id: str = ""
    #: the person is the subject of an actively linked legacy (whose stories are their own account)
    linked_subject: bool = False


# -- lexicons ---------------------------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: leading words of a name or alias that are a title or a kinship form, not part of the name
NAME_PREFIXES: frozenset[str] = _words(
    """mr mrs ms miss mx dr doctor prof professor rev reverend sir dame lady lord captain capt
    uncle aunt auntie aunty grandma grandpa granny grandmother grandfather gran nana nanna nan
    papa pop pops grammy gramps cousin great grand big little old"""
)
NAME_SUFFIXES: frozenset[str] = frozenset({"jr", "sr", "ii", "iii", "iv"})
ARTICLES: frozenset[str] = frozenset({"the", "a", "an"})
#: never a name on their own
STOPWORDS: frozenset[str] = _words(
    """a an the and or but of in on at to for from with by as is was were be been are am it its
    he she him her his hers they them their we us our you your i me my this that these those
    there here who what when where why how do did does not no yes so if then than"""
)
#: English words that are also common given names or surnames: a single-word name matches them
#: only when capitalised inside a sentence ("Rose came" but not "a rose", "Will she")
AMBIGUOUS_WORDS: frozenset[str] = _words(
    """rose may june april august will bill mark grace hope faith joy ray art frank jack sue
    dawn eve ivy holly lily daisy iris pearl ruby amber summer autumn winter penny sandy rusty
    bud chip chuck dean drew gene glen grant guy harry hunter jay jean jewel joe les lee lou
    max mike nick norm pat pete rich rob sky sterling victor violet wade ward brook brooks hill
    field wood woods stone king young brown white green black gray grey page bell long short
    cook baker miller smith taylor turner walker mason carpenter fisher hunter park lane church
    star sun"""
)

Cue = tuple[float, re.Pattern[str]]


def _cues(*pairs: tuple[float, str]) -> tuple[Cue, ...]:
    return tuple((w, re.compile(p, re.IGNORECASE)) for w, p in pairs)


_KIN = (
    r"brothers?|sisters?|siblings?|mother|father|mom|mum|mama|dad|daddy|parents?|sons?|daughters?|"
    r"cousins?|uncles?|aunts?|nephews?|nieces?|in-laws?|grand(?:mother|father|parents?|sons?|"
    r"daughters?|children|kids?|ma|pa)|stepmother|stepfather|half-brother|half-sister|twins?"
)
_EVENT_NOUNS = (
    r"wedding|funeral|reunion|party|celebration|trip|journey|voyage|holiday|vacation|accident|"
    r"fire|flood|storm|crash|graduation|ceremony|birthday|anniversary|christmas|thanksgiving|"
    r"easter|hanukkah|festival|concert|game|match|competition|race|parade|picnic|dance|recital|"
    r"christening|baptism|bar mitzvah|bat mitzvah|retirement|promotion|surgery|strike|diagnosis|"
    r"illness|cancer|stroke|heart attack|operation|military service|army|navy|enlist\w*|deployment"
)
_OBJECT_NOUNS = (
    r"ring|watch|necklace|bracelet|brooch|locket|quilt|blanket|piano|violin|guitar|car|truck|"
    r"boat|bicycle|bike|letters?|photos?|photographs?|album|recipes?|cookbook|diary|journal|"
    r"medals?|painting|portrait|bible|clock|heirloom|gift|dress|coat|hat|chair|table|desk|"
    r"trunk|chest|box|tools?|camera|typewriter|sewing machine|radio|book"
)

#: verbs of a first-hand account: what someone remembered, said, wrote or thought
_ACCOUNT_VERBS = (
    r"remember\w*|recall\w*|say|says|said|write|writes|wrote|written|think|thinks|thought|tell|tells|told|"
    r"describe\w*"
)

#: intent -> cues (weight, pattern). Each cue counts once; evidence combines by noisy-OR.
CUES: dict[Intent, tuple[Cue, ...]] = {
    Intent.RELATIONAL: _cues(
        (0.6, r"\brelationships?\b|\brelated to\b"),
        (0.6, r"\bwho (?:was|is|were|are) [\w'’ -]{1,40}? to\b"),
        (0.55, r"\b(?:get|gets|got|getting) along\b|\bknow each other\b|\bknew each other\b"),
        (0.5, r"\b(?:married|marry|marriage|husband|wife|spouse|engaged|divorced?|courted|dated)\b"),
        (0.45, rf"(?:\b(?:her|his|my|their|your|our|whose|a|the|\w+['’]s?)\s+(?:\w+\s+)?)(?:{_KIN})\b"),
        (
            0.5,
            r"\b(?:friends?|friendship|best friend|pals?|buddies|colleagues?|co-?workers?|"
            r"workmates?|boss|mentor|neighbou?rs?|partners?|sweethearts?|roommates?)\b",
        ),
        (0.5, r"\b(?:met|meet|meeting)\b"),
        # a person described rather than named: "the doctor who", "the neighbour whose boy"
        (0.5, r"\bthe (?:\w+ ){1,2}(?:who|whom|whose)\b"),
        (0.5, r"\b(?:best man|maid of hono(?:u)?r|bridesmaids?|godmother|godfather|pallbearers?)\b"),
        (
            0.4,
            r"\b(?:close to|feel about|felt about|think of|thought of|fell out|argued?|fight|fought|"
            r"reconciled?|cared for|looked up to|get on with|got on with|between (?:them|him and|her and))\b",
        ),
    ),
    Intent.TEMPORAL: _cues(
        (0.35, r"\bwhen\b"),
        (0.5, r"\bwhat (?:year|decade|age|month|season|time of (?:year|life))\b|\bhow old\b|\bhow long\b"),
        (0.5, r"\bthat (?:summer|winter|spring|autumn|fall|year|decade|season|time|era)\b"),
        (
            0.5,
            r"\bhow many (?:years|months|decades|weeks)\b|\b(?:in between|in the meantime|after that|"
            r"before that|came first|in (?:what|which) order|in order|sequence)\b",
        ),
        (0.45, r"\b(?:after|before|during|since|until|throughout) the (?:\w+ )?(?:war|depression)\b"),
        (
            0.5,
            r"\b(?:in|during) (?:her|his|their|my|your|our) (?:early |late |mid-?)?(?:teens|twenties|"
            r"thirties|forties|fifties|sixties|seventies|eighties|nineties|[1-9]0s)\b",
        ),
        (
            0.4,
            r"\b(?:back then|in those days|at the time|early years|later years|later in life|early life|"
            r"childhood|as a (?:child|kid|girl|boy|teenager|young (?:man|woman))|growing up|youth|"
            r"teenage years|old age|timeline|chronolog\w*|era|decades?|centur(?:y|ies))\b",
        ),
    ),
    Intent.SPATIAL: _cues(
        (0.45, r"\bwhere\b"),
        (
            0.35,
            r"\b(?:lived?|living|lives|grew up in|moved (?:to|from|into|away|back)|move to|settled|"
            r"visited|visit|stayed at|born in|emigrated|immigrated|buried|(?:go|goes|went|gone|going|"
            r"travel(?:l?ed)?|drove|drive|came|come|return(?:ed)?) (?:back )?(?:to|into)\b)",
        ),
        (
            0.35,
            r"\b(?:house|home|homestead|farm|ranch|town|city|village|street|road|neighbou?rhood|"
            r"apartment|flat|cottage|cabin|country|countryside|place|places|land|region|island|lake|"
            r"beach|coast|mountains?|valley|county|state|province|abroad|overseas)\b",
        ),
    ),
    Intent.ENTITY_FOCUSED: _cues(
        (0.35, r"\babout (?:the|that|those|this) \w+"),
        # what a thing is made of, and who has it now
        (0.5, r"\b(?:made|built|carved|sewn|sewed) (?:from|of|out of)\b"),
        (
            0.5,
            r"\b(?:who (?:has|had|got|gets|kept|keeps|inherited|owns|owned)|end(?:ed|s)? up|passed down|"
            r"handed down|inherit\w*|belong(?:ed|s)? to)\b",
        ),
        (0.4, r"\bwhat happened (?:at|during|on|to|with|in|after) (?:the|that)\b"),
        (0.3, rf"\b(?:{_EVENT_NOUNS})\b"),
        (0.3, rf"\b(?:{_OBJECT_NOUNS})\b"),
    ),
    Intent.CROSS_LEGACY: _cues(
        (
            0.7,
            r"\b(?:others?|other people|anyone else|everyone else|other relatives|the rest of the family)"
            r" (?:\w+ )?(?:remembers?|recalls?|says?|said|thinks?|thought|wrote|writes?|tells?|told|"
            r"shares?|shared|knows?|knew)\b",
        ),
        (0.7, r"\bother (?:famil(?:y|ies)|legac(?:y|ies)|sides?|branch(?:es)?)\b"),
        (0.6, r"\b(?:his|her|their) own (?:stories|story|words|account|memories|telling|legacy|letters?)\b"),
        (
            0.6,
            rf"\b(?:himself|herself)\b(?=.*\b(?:{_ACCOUNT_VERBS})\b)|\b(?:{_ACCOUNT_VERBS})\b.*\b(?:himself|herself)\b",
        ),
        (0.6, r"\b(?:linked|connected) (?:legac(?:y|ies)|stor(?:y|ies)|famil(?:y|ies)|memorials?)\b"),
        (0.5, r"\blinked\b"),
        (0.6, r"['’]s? legac(?:y|ies)\b"),
        (0.4, r"\b(?:his|her|their) legacy\b"),
        (0.6, r"\bfrom (?:\w+['’]s?|his|her|their) (?:side|perspective|point of view|end)\b"),
        (
            0.4,
            r"\b(?:perspective|point of view|side of the family|in (?:his|her|their) (?:own )?words|"
            r"how did \w+ remember)\b",
        ),
    ),
}
#: the question word that opens a question names the kind of answer wanted
QUESTION_HEADS: dict[Intent, Cue] = {
    Intent.TEMPORAL: (
        0.7,
        re.compile(
            r"(?:^|[.?!]\s+)(?:and |so |but )?(?:when|what year|in what year|"
            r"how long|how old|since when)\s+\w",
            re.IGNORECASE,
        ),
    ),
    Intent.SPATIAL: (
        0.7,
        re.compile(
            r"(?:^|[.?!]\s+)(?:and |so |but )?(?:where|in what (?:town|city|place))\s+\w", re.IGNORECASE
        ),
    ),
    Intent.RELATIONAL: (
        0.55,
        re.compile(r"(?:^|[.?!]\s+)(?:and |so |but )?(?:who|whom)\s+\w", re.IGNORECASE),
    ),
}
#: a named entity that only a linked legacy holds points the question across the link
LINKED_MATCH_WEIGHT = 0.7
#: what a linked legacy's subject remembered, wrote or said is told in their own legacy
LINKED_VOICE_WEIGHT = 0.75
_VOICE = re.compile(
    rf"\b(?:{_ACCOUNT_VERBS}|feel|feels|felt|mention\w*|account|side|perspective|legacy|stories)\b",
    re.IGNORECASE,
)

#: the order that settles a tie (more specific intents first)
PRIORITY: tuple[Intent, ...] = (
    Intent.CROSS_LEGACY,
    Intent.RELATIONAL,
    Intent.ENTITY_FOCUSED,
    Intent.SPATIAL,
    Intent.TEMPORAL,
)
#: evidence from matched entities and time expressions
PERSON_MATCH_WEIGHT = 0.5  # relational: someone other than the subject is named
PLACE_MATCH_WEIGHT = 0.55  # spatial: a known place is named
THING_MATCH_WEIGHT = 0.65  # entity_focused: a known event or object is named (outweighs "who")
SETTING_PLACE_WEIGHT = 0.3  # spatial: a place named only as the setting of a named thing
TIME_WEIGHT = 0.6  # temporal: a year, a range or a decade
RESOLVED_PLACE_WEIGHT = 0.35  # spatial: "there" resolved to a place of the conversation

_PERSON_PRONOUN = re.compile(r"\b(?:she|he|her|him|his|hers|herself|himself)\b", re.IGNORECASE)
_TIME_ANAPHOR = re.compile(
    r"\b(?:that (?:summer|winter|spring|autumn|fall|year|decade|season|time|era)|back then|"
    r"at the time|in those days)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+(?:'\w+)?")
_BE_OR_MODAL = _words(
    """is was were are be been being will would might must may could should can seems seemed
    used isn't wasn't weren't aren't won't wouldn't"""
)
_QUANTIFIERS = _words(
    """a an any some anything anyone anybody someone somebody something much many no ever more
    other another enough lots plenty"""
)

# -- time expressions -------------------------------------------------------------------------
_YEAR = r"(1[5-9]\d\d|20\d\d)"
_RANGE = re.compile(rf"\b{_YEAR}\s*(?:-|–|—|to|until|till|through)\s*{_YEAR}\b", re.IGNORECASE)
_DECADE_NUM = re.compile(r"\b(1[5-9]\d|20\d)0['’]?s\b")
_DECADE_SHORT = re.compile(r"(?<![\w'’])['’]?([1-9])0['’]?s\b")
_DECADE_WORDS = {
    "twenties": 2,
    "thirties": 3,
    "forties": 4,
    "fifties": 5,
    "sixties": 6,
    "seventies": 7,
    "eighties": 8,
    "nineties": 9,
}
_DECADE_WORD = re.compile(rf"\b({'|'.join(_DECADE_WORDS)})\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b{_YEAR}\b")
_ERA_PHRASE = re.compile(
    r"\b(?:after|before|during|since|until|throughout) the (?:\w+ )?(?:war|depression)\b", re.I
)
#: "in her thirties" is an age, not the 1930s
_AGE_BEFORE = re.compile(
    r"\b(?:her|his|their|my|your|our|one's)\s+(?:early\s+|late\s+|mid-?\s*)?$", re.IGNORECASE
)


def time_periods(text: str) -> list[str]:
    """Years, year ranges and decades in `text`, normalised ("'70s" -> "1970s"), in order."""
    found: list[tuple[int, int, str]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in found)

    for m in _RANGE.finditer(text):
        found.append((m.start(), m.end(), f"{m.group(1)}-{m.group(2)}"))
    for m in _DECADE_NUM.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), f"{m.group(1)}0s"))
    for pattern in (_DECADE_SHORT, _DECADE_WORD):
        for m in pattern.finditer(text):
            if not free(m.start(), m.end()) or _AGE_BEFORE.search(text[: m.start()]):
                continue
            word = m.group(1).lower()
            decade = int(word) if word.isdigit() else _DECADE_WORDS[word]
            found.append((m.start(), m.end(), f"19{decade}0s"))
    for m in _YEAR_ALONE.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), m.group(1)))
    for m in _ERA_PHRASE.finditer(text):
        if free(m.start(), m.end()):
            found.append((m.start(), m.end(), " ".join(m.group(0).lower().split())))
    out: list[str] = []
    for _, _, value in sorted(found):
        if value not in out:
            out.append(value)
    return out


# -- gazetteer --------------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+(?:['’]\w+)*['’]?")


def _fold(word: str) -> str:
    """Case- and accent-insensitive key of one word, possessive removed ("Zoë's" -> "zoe")."""
    word = word.replace("’", "'")
    if word.lower().endswith("'s"):
        word = word[:-2]
    word = word.rstrip("'")
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _keys(text: str) -> tuple[str, ...]:
    return tuple(k for k in (_fold(m.group()) for m in _TOKEN.finditer(text)) if k)


@dataclass(frozen=True)
class _Form:
    keys: tuple[str, ...]
    entries: tuple[int, ...]
    #: a first or last name (or an alias without its kinship word), not a name as given
    derived: bool


@dataclass(frozen=True)
class Mention:
    """One name found in a text: where, as written, and every entry it names."""

    start: int
    end: int
    text: str
    entries: tuple[GazetteerEntry, ...]
    derived: bool

    def matches(self, mention: str | None = None) -> tuple[EntityMatch, ...]:
        return tuple(
            EntityMatch(mention=mention or self.text, node_id=e.node_id, label=e.label, name=e.name)
            for e in self.entries
        )


def _strip_prefixes(keys: tuple[str, ...]) -> tuple[str, ...]:
    i = 0
    while i < len(keys) - 1 and keys[i] in NAME_PREFIXES:
        i += 1
    return keys[i:]


def _usable(keys: tuple[str, ...]) -> bool:
    return bool(keys) and not all(k in STOPWORDS or len(k) < 2 for k in keys)


def _given_forms(entry: GazetteerEntry) -> list[tuple[str, ...]]:
    """The name and aliases as keys, a leading article dropped ("the lake house")."""
    out = []
    for surface in (entry.name, *entry.aliases):
        keys = _keys(surface)
        if len(keys) > 1 and keys[0] in ARTICLES:
            keys = keys[1:]
        if _usable(keys):
            out.append(keys)
    return out


def _short_forms(entry: GazetteerEntry) -> list[tuple[str, ...]]:
    """A person's first and last name, and aliases without their kinship word ("Uncle Jim" ->
    "jim"); the gazetteer keeps those that name one person only."""
    if entry.label != "Person":
        return []
    name = _strip_prefixes(_keys(entry.name))
    name = tuple(k for k in name if k not in NAME_SUFFIXES) or name
    out: list[tuple[str, ...]] = [(name[0],), (name[-1],)] if len(name) > 1 else []
    for alias in entry.aliases:
        keys = _keys(alias)
        bare = _strip_prefixes(keys)
        if bare != keys:
            out.append(bare)
    return [f for f in out if _usable(f) and all(len(k) > 1 for k in f)]


class Gazetteer:
    """The names of a legacy's graph, indexed by first word for matching in messages."""

    def __init__(self, entries: Sequence[GazetteerEntry], index: dict[str, tuple[_Form, ...]]):
        self.entries = tuple(entries)
        self._index = index

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def build(
        cls,
        entries: Iterable[
            GazetteerEntry
            | tuple[str, str, str, Sequence[str]]
            | tuple[str, str, str, Sequence[str], str]
            | tuple[str, str, str, Sequence[str], str, bool]
        ],
    ) -> Gazetteer:
        items: list[GazetteerEntry] = []
        for raw in entries:
            node_id, label, name, aliases, *rest = raw
            if label not in LABELS:
                raise ValueError(f"gazetteer entry {node_id}: label {label!r} is not one of {sorted(LABELS)}")
            legacy = str(rest[0]) if rest else ""
            subject = bool(rest[1]) if len(rest) > 1 else False
            items.append(
                GazetteerEntry(str(node_id), cast(Label, label), name, tuple(aliases), legacy, subject)
            )
        # a linked legacy's subject as entered in other legacies (same full name) is them too
        voices = {_keys(e.name) for e in items if e.linked_subject}
        items = [
            e._replace(linked_subject=True) if e.label == "Person" and _keys(e.name) in voices else e
            for e in items
        ]

        explicit: dict[tuple[str, ...], list[int]] = {}
        derived: dict[tuple[str, ...], list[int]] = {}
        for i, entry in enumerate(items):
            for keys in _given_forms(entry):
                explicit.setdefault(keys, []).append(i)
            for keys in _short_forms(entry):
                derived.setdefault(keys, []).append(i)

        forms = [_Form(k, tuple(dict.fromkeys(v)), False) for k, v in explicit.items()]
        for keys, owners in derived.items():
            # unambiguous: not anyone's name or alias, and every owner has the same full name
            if keys in explicit or len({_keys(items[i].name) for i in owners}) != 1:
                continue
            forms.append(_Form(keys, tuple(dict.fromkeys(owners)), True))
        index: dict[str, list[_Form]] = {}
        for form in forms:
            index.setdefault(form.keys[0], []).append(form)
        frozen = {k: tuple(sorted(v, key=lambda f: -len(f.keys))) for k, v in index.items()}
        return cls(items, frozen)

    def find(self, text: str) -> list[Mention]:
        """Every known name in `text`, longest first and without overlaps, in text order."""
        tokens = [(m.start(), m.end(), _fold(m.group())) for m in _TOKEN.finditer(text)]
        found: list[tuple[int, int, _Form]] = []
        for i, (_, _, key) in enumerate(tokens):
            for form in self._index.get(key, ()):
                n = len(form.keys)
                if i + n > len(tokens) or any(tokens[i + j][2] != form.keys[j] for j in range(1, n)):
                    continue
                if n == 1 and not self._plausible(text, tokens[i][0], key):
                    continue
                found.append((i, i + n, form))
                break
        taken: set[int] = set()
        chosen: list[tuple[int, int, _Form]] = []
        for first, last, form in sorted(found, key=lambda f: (f[0] - f[1], f[0])):
            if taken.isdisjoint(range(first, last)):
                taken.update(range(first, last))
                chosen.append((first, last, form))
        mentions = []
        for first, last, form in sorted(chosen, key=lambda f: f[0]):
            start, end = tokens[first][0], tokens[last - 1][1]
            written = re.sub(r"['’]s?$", "", text[start:end]) or text[start:end]
            mentions.append(
                Mention(
                    start=start,
                    end=end,
                    text=written,
                    entries=tuple(self.entries[i] for i in form.entries),
                    derived=form.derived,
                )
            )
        return mentions

    def match(self, text: str) -> tuple[EntityMatch, ...]:
        return tuple(m for mention in self.find(text) for m in mention.matches())

    @staticmethod
    def _plausible(text: str, start: int, key: str) -> bool:
        """A one-word name that is also a common word must be capitalised mid-sentence."""
        if key not in AMBIGUOUS_WORDS:
            return True
        if not text[start].isupper():
            return False
        before = text[:start].rstrip()
        return bool(before) and before[-1] not in '.!?"“'


# -- classification ---------------------------------------------------------------------------
def _noisy_or(weights: Iterable[float]) -> float:
    miss = 1.0
    for w in weights:
        miss *= 1.0 - w
    return 1.0 - miss


def _mask(text: str, mentions: Sequence[Mention]) -> str:
    """The text with every matched name replaced by a neutral word, so that "Uncle Jim" or an
    alias like "Dad" does not read as a kinship cue."""
    out, last = [], 0
    for m in mentions:
        possessive = re.search(r"['’]s?$", text[m.start : m.end])
        out.append(text[last : m.start])
        out.append("someone" + (possessive.group() if possessive else ""))
        last = m.end
    out.append(text[last:])
    return "".join(out)


def locative_there(text: str) -> bool:
    """Whether "there" in `text` points at a place ("did she live there?") rather than being the
    empty subject of "there was a fire" / "was there anyone" / "there's"."""
    words = [w.lower() for w in _WORD.findall(text.replace("’", "'"))]
    for i, word in enumerate(words):
        if word != "there":
            continue
        prev = words[i - 1] if i else ""
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if nxt in _BE_OR_MODAL or (prev in _BE_OR_MODAL and nxt in _QUANTIFIERS):
            continue
        return True
    return False


def _is_subject(entry: GazetteerEntry, subject: tuple[str, ...]) -> bool:
    return entry.label == "Person" and _keys(entry.name) == subject


@dataclass(frozen=True)
class _Recent:
    person: Mention | None = None
    place: Mention | None = None
    period: str | None = None


def _recent(history: Sequence[Message], gazetteer: Gazetteer) -> _Recent:
    """The most recent person, place and time period of the last messages."""
    person = place = None
    period = None
    for message in reversed(history[-HISTORY_WINDOW:]):
        mentions = gazetteer.find(message.content)
        if person is None:
            person = next((m for m in reversed(mentions) if m.entries[0].label == "Person"), None)
        if place is None:
            place = next((m for m in reversed(mentions) if m.entries[0].label == "Place"), None)
        if period is None:
            periods = [p for p in time_periods(message.content) if p[0].isdigit()]
            period = periods[-1] if periods else None
    return _Recent(person, place, period)


def classify(
    query: str,
    history: Sequence[Message],
    gazetteer: Gazetteer,
    subject_name: str,
    primary_legacy_id: str = "",
) -> QueryIntent:
    """The intent of `query` with its entities (matches of the gazetteer, time expressions and
    resolved pronouns). The legacy's subject is left out of the matches: every question is about
    them, and naming them would tag every story that mentions them. With `primary_legacy_id`,
    a name known only in a linked legacy is evidence for `cross_legacy`."""
    started = time.perf_counter()
    subject = _keys(subject_name)
    mentions = gazetteer.find(query)
    named: list[EntityMatch] = []
    for mention in mentions:
        kept = tuple(e for e in mention.entries if not _is_subject(e, subject))
        named.extend(Mention(mention.start, mention.end, mention.text, kept, mention.derived).matches())
    periods = time_periods(query)

    # pronouns and anaphora, against the last messages of the conversation
    recent = _recent(history, gazetteer) if history else _Recent()
    resolved: list[EntityMatch] = []
    if (pronoun := _PERSON_PRONOUN.search(query)) and recent.person is not None:
        people = [e for e in recent.person.entries if not _is_subject(e, subject)]
        resolved.extend(Mention(0, 0, pronoun.group(), tuple(people), False).matches())
    if _TIME_ANAPHOR.search(query) and recent.period and recent.period not in periods:
        periods.append(recent.period)
    if recent.place is not None and locative_there(query):
        resolved.extend(recent.place.matches("there"))
    have = {m.node_id for m in named}
    matches = list(dict.fromkeys([*named, *(m for m in resolved if m.node_id not in have)]))
    matches = matches[:MAX_MATCHES]

    # evidence per intent: cue words (names masked out), named entities, time expressions
    text = _mask(query, mentions)
    evidence: dict[Intent, list[float]] = {intent: [] for intent in PRIORITY}
    for intent, cues in CUES.items():
        evidence[intent].extend(w for w, pattern in cues if pattern.search(text))
    for intent, (weight, pattern) in QUESTION_HEADS.items():
        if pattern.search(query.strip()):
            evidence[intent].append(weight)
    if primary_legacy_id:
        for mention in mentions:
            legacies = {e.legacy_id for e in mention.entries if not _is_subject(e, subject)}
            if legacies and "" not in legacies and primary_legacy_id not in legacies:
                evidence[Intent.CROSS_LEGACY].append(LINKED_MATCH_WEIGHT)
                break
        voices = [m for m in mentions if any(e.linked_subject for e in m.entries)]
        if voices and _VOICE.search(text):
            evidence[Intent.CROSS_LEGACY].append(LINKED_VOICE_WEIGHT)
    labels = {m.label for m in named}
    if "Person" in labels:
        evidence[Intent.RELATIONAL].append(PERSON_MATCH_WEIGHT)
    things = labels & {"Event", "Object"}
    if "Place" in labels:
        evidence[Intent.SPATIAL].append(SETTING_PLACE_WEIGHT if things else PLACE_MATCH_WEIGHT)
    if things:
        evidence[Intent.ENTITY_FOCUSED].append(THING_MATCH_WEIGHT)
    if any(p[0].isdigit() for p in time_periods(query)):
        evidence[Intent.TEMPORAL].append(TIME_WEIGHT)
    if any(m.mention == "there" and m.label == "Place" for m in matches):
        evidence[Intent.SPATIAL].append(RESOLVED_PLACE_WEIGHT)
    scores = {intent: _noisy_or(ws) for intent, ws in evidence.items()}
    best = max(PRIORITY, key=lambda i: (scores[i], -PRIORITY.index(i)))
    confidence = min(MAX_CONFIDENCE, scores[best])
    if confidence < MIN_CONFIDENCE:
        best, confidence = Intent.GENERAL, round(1.0 - confidence, 3)

    def names(*wanted: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.name for m in matches if m.label in wanted))

    return QueryIntent(
        intent=best,
        entities=QueryEntities(
            people=names("Person"),
            places=names("Place"),
            time_periods=tuple(periods),
            events=names("Event"),
            objects=names("Object"),
        ),
        matches=tuple(matches),
        confidence=round(confidence, 3),
        source="rules",
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
    )


#: the rule-derived features the learned classifier weighs next to the query's embedding
FEATURE_NAMES: tuple[str, ...] = ("person", "place", "thing", "linked", "time")


def entity_features(
    query: str, gazetteer: Gazetteer, subject_name: str = "", primary_legacy_id: str = ""
) -> tuple[float, ...]:
    """What the gazetteer and the time expressions find in `query`, as 0/1 features (in
    `FEATURE_NAMES` order): a person other than the subject, a place, an event or object, a name
    only a linked legacy holds or a linked legacy's subject, a year/range/decade."""
    subject = _keys(subject_name)
    labels: set[str] = set()
    linked = False
    for mention in gazetteer.find(query):
        kept = [e for e in mention.entries if not _is_subject(e, subject)]
        labels.update(e.label for e in kept)
        legacies = {e.legacy_id for e in kept}
        if primary_legacy_id and legacies and "" not in legacies and primary_legacy_id not in legacies:
            linked = True
        if any(e.linked_subject for e in kept):
            linked = True
    time_expression = any(p[0].isdigit() for p in time_periods(query))
    return (
        float("Person" in labels),
        float("Place" in labels),
        float(bool(labels & {"Event", "Object"})),
        float(linked),
        float(time_expression),
    )
