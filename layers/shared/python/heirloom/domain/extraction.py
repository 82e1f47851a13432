"""Entity extraction rules shared by every extractor (seed 000 section 2, extraction rules).

`postprocess` turns what any extractor returned (Bedrock or the local spaCy one) into what may be
written to the graph: confidence >= 0.7 (precision over recall), names normalised, duplicates
merged, contact data scrubbed, per-story limits applied, relationships kept only between kept
entities. `resolve_people` matches the people a story mentions against the legacy's known
persons, including narrator-relative kin terms ("my dad") through FAMILY_OF relationships.
Everything here is pure: no model, no I/O.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple, Protocol, TypeVar
from uuid import UUID

from pydantic import BaseModel

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.contracts.records import Person, Relationship, RelationshipType

#: Only entities at or above this confidence reach the graph.
MIN_CONFIDENCE = 0.7
#: Fuzzy name matching threshold (difflib ratio, case-insensitive).
FUZZY_RATIO = 0.88


class EntityExtractor(Protocol):
    """Extracts entities from one story. Returns raw candidates with confidences; callers apply
    `postprocess` (or use `extract_entities`, which does)."""

    def extract(self, text: str, *, known_names: Sequence[str] = ()) -> ExtractedEntities: ...


@dataclass(frozen=True)
class ExtractionLimits:
    people: int = 20
    places: int = 15
    events: int = 15
    objects: int = 15
    time_references: int = 15
    relationships: int = 30


DEFAULT_LIMITS = ExtractionLimits()


def extract_entities(
    extractor: EntityExtractor,
    text: str,
    *,
    known_names: Sequence[str] = (),
    min_confidence: float = MIN_CONFIDENCE,
    limits: ExtractionLimits = DEFAULT_LIMITS,
) -> ExtractedEntities:
    """Run `extractor` on one story and apply the shared rules."""
    raw = extractor.extract(text, known_names=known_names)
    return postprocess(raw, min_confidence=min_confidence, limits=limits)


# --------------------------------------------------------------------------------------------
# Contact data (PII)

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_PHONE = re.compile(
    r"(?<![\w-])(?:"
    r"\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,3}"  # international
    r"|(?:1[\s.-])?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}"  # North American
    r"|\d{3}[\s.-]\d{4}"  # local seven digits
    r")(?![\w-])"
)
_ID_NUMBER = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")  # SSN-shaped
_PO_BOX = re.compile(r"\bP\.?\s?O\.?\s*Box\s+\d+\b", re.IGNORECASE)
_STREET_SUFFIX = (
    r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Way|Terrace"
    r"|Ter|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Trail|Trl|Route|Rte|Pike|Row|Square|Sq)"
)
#: "14 Elm Street", "221B Baker St.", "1600 North Maple Avenue, Apt 4": the house number
#: (and any unit) is contact data, the street is a place.
_HOUSE_ADDRESS = re.compile(
    r"(?<![\w.-])\d{1,6}[A-Za-z]?(?:-\d{1,4})?,?\s+"
    r"(?P<street>(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:[A-Z0-9][\w'.-]*\s+){1,4}"
    + _STREET_SUFFIX
    + r"\b\.?)"
    r"(?:,?\s*(?:Apt|Apartment|Unit|Suite|Ste|#)\.?\s*#?\w+)?"
)
_ZIP_AFTER_STATE = re.compile(r"\b(?P<state>[A-Z]{2})\s+\d{5}(?:-\d{4})?\b")

EMAIL_MARK, PHONE_MARK, NUMBER_MARK, ADDRESS_MARK = "[email]", "[phone]", "[number]", "[address]"


def has_contact_data(text: str) -> bool:
    """An email address, phone number, identity number or PO box (not a bare street)."""
    return bool(_EMAIL.search(text) or _ID_NUMBER.search(text) or _PHONE.search(text) or _PO_BOX.search(text))


def scrub_pii(text: str) -> str:
    """Redact emails, phone and identity numbers and PO boxes; drop house numbers and postal codes
    from street addresses ("14 Elm Street" -> "Elm Street")."""
    text = _EMAIL.sub(EMAIL_MARK, text)
    text = _ID_NUMBER.sub(NUMBER_MARK, text)
    text = _PHONE.sub(PHONE_MARK, text)
    text = _PO_BOX.sub(ADDRESS_MARK, text)
    text = _HOUSE_ADDRESS.sub(lambda m: m.group("street"), text)
    return _ZIP_AFTER_STATE.sub(lambda m: m.group("state"), text)


# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# Post-processing

_M = TypeVar("_M", bound=BaseModel)


def _clean_name(name: str, *, person: bool) -> str | None:
    if has_contact_data(name):
        return None
    cleaned = normalize_name(scrub_pii(name), possessive=person, determiners=not person)
    if not cleaned or not any(ch.isalnum() for ch in cleaned):
        return None
    return cleaned[:200]


def _clean_text(value: str | None) -> str | None:
    if value is None:
        return None
    text = " ".join(scrub_pii(value).split())[:300]
    return text or None


def _merge(kept: _M, other: _M) -> _M:
    """Keep the more confident entry; fill its empty optional fields from the other."""
    best, rest = (
        (other, kept)
        if getattr(other, "confidence", 0.0) > getattr(kept, "confidence", 0.0)
        else (kept, other)
    )
    fill: dict[str, object] = {
        field: getattr(rest, field)
        for field in ("context", "location", "date")
        if field in type(best).model_fields and not getattr(best, field) and getattr(rest, field)
    }
    return best.model_copy(update=fill) if fill else best


def _dedupe_and_limit(items: Iterable[_M], key: Callable[[_M], str], limit: int) -> list[_M]:
    merged: dict[str, _M] = {}
    for item in items:
        k = key(item)
        merged[k] = _merge(merged[k], item) if k in merged else item
    values = list(merged.values())
    if len(values) <= limit:
        return values
    ranked = sorted(range(len(values)), key=lambda i: -float(getattr(values[i], "confidence", 0.0)))
    keep = set(ranked[:limit])
    return [v for i, v in enumerate(values) if i in keep]  # original order among the kept


def _people(items: Iterable[ExtractedPerson], floor: float, limit: int) -> list[ExtractedPerson]:
    out = []
    for p in items:
        name = _clean_name(p.name, person=True) if p.confidence >= floor else None
        if name:
            out.append(p.model_copy(update={"name": name, "context": _clean_text(p.context) or ""}))
    return _dedupe_and_limit(out, lambda p: name_key(p.name), limit)


def _places(items: Iterable[ExtractedPlace], floor: float, limit: int) -> list[ExtractedPlace]:
    out = []
    for p in items:
        name = _clean_name(p.name, person=False) if p.confidence >= floor else None
        if name:
            out.append(p.model_copy(update={"name": name, "location": _clean_text(p.location)}))
    return _dedupe_and_limit(out, lambda p: name_key(p.name), limit)


def _events(items: Iterable[ExtractedEvent], floor: float, limit: int) -> list[ExtractedEvent]:
    out = []
    for e in items:
        name = _clean_name(e.name, person=False) if e.confidence >= floor else None
        if name:
            out.append(e.model_copy(update={"name": name, "date": _clean_text(e.date)}))
    return _dedupe_and_limit(out, lambda e: name_key(e.name), limit)


def _objects(items: Iterable[ExtractedObject], floor: float, limit: int) -> list[ExtractedObject]:
    out = []
    for o in items:
        name = _clean_name(o.name, person=False) if o.confidence >= floor else None
        if name:
            out.append(o.model_copy(update={"name": name}))
    return _dedupe_and_limit(out, lambda o: name_key(o.name), limit)


def _times(items: Iterable[TimeReference], limit: int) -> list[TimeReference]:
    out = []
    for t in items:
        period = _clean_name(t.period, person=False)
        if period:
            out.append(t.model_copy(update={"period": period, "context": _clean_text(t.context) or ""}))
    return _dedupe_and_limit(out, lambda t: name_key(t.period), limit)


#: predicate -> (subject kind, object kind)
_PREDICATE_KINDS: dict[str, tuple[str, str]] = {
    "PARTICIPATED_IN": ("people", "events"),
    "LIVED_IN": ("people", "places"),
    "WORKED_AT": ("people", "places"),
    "OWNED": ("people", "objects"),
    "TOOK_PLACE_AT": ("events", "places"),
}


def _relationships(
    items: Iterable[ExtractedRelationship], names: dict[str, dict[str, str]], floor: float, limit: int
) -> list[ExtractedRelationship]:
    out = []
    for r in items:
        if r.confidence < floor:
            continue
        subject_kind, object_kind = _PREDICATE_KINDS[r.predicate]
        subject = _clean_name(r.subject, person=subject_kind == "people")
        obj = _clean_name(r.object, person=False)
        subject = names[subject_kind].get(name_key(subject)) if subject else None
        obj = names[object_kind].get(name_key(obj)) if obj else None
        if subject and obj:
            out.append(r.model_copy(update={"subject": subject, "object": obj}))
    return _dedupe_and_limit(
        out, lambda r: f"{name_key(r.subject)}|{r.predicate}|{name_key(r.object)}", limit
    )


def postprocess(
    entities: ExtractedEntities,
    *,
    min_confidence: float = MIN_CONFIDENCE,
    limits: ExtractionLimits = DEFAULT_LIMITS,
) -> ExtractedEntities:
    """The rules every extractor's output goes through before the graph sees it."""
    people = _people(entities.people, min_confidence, limits.people)
    places = _places(entities.places, min_confidence, limits.places)
    events = _events(entities.events, min_confidence, limits.events)
    objects = _objects(entities.objects, min_confidence, limits.objects)
    names = {
        "people": {name_key(p.name): p.name for p in people},
        "places": {name_key(p.name): p.name for p in places},
        "events": {name_key(e.name): e.name for e in events},
        "objects": {name_key(o.name): o.name for o in objects},
    }
    return ExtractedEntities(
        people=tuple(people),
        places=tuple(places),
        events=tuple(events),
        objects=tuple(objects),
        time_references=tuple(_times(entities.time_references, limits.time_references)),
        relationships=tuple(
            _relationships(entities.relationships, names, min_confidence, limits.relationships)
        ),
        extractor_version=entities.extractor_version,
    )


# --------------------------------------------------------------------------------------------
# Kinship vocabulary


class Kin(NamedTuple):
    """A kin relation: `relation` is gender-neutral ("parent", "pibling" for aunt/uncle,
    "great_grandparent"), `gender` is "m", "f" or None."""

    relation: str
    gender: str | None


def _vocab(entries: dict[str, tuple[str, str | None]]) -> dict[str, Kin]:
    return {word: Kin(rel, g) for word, (rel, g) in entries.items()}


#: single kin words, spaces and hyphens removed ("step-father" -> "stepfather")
KIN_TERMS: dict[str, Kin] = _vocab(
    {
        **dict.fromkeys(["father", "dad", "daddy", "pa", "pop", "pops"], ("parent", "m")),
        **dict.fromkeys(
            ["mother", "mom", "mommy", "mum", "mummy", "ma", "mama", "momma", "mamma", "mam"], ("parent", "f")
        ),
        "parent": ("parent", None),
        **dict.fromkeys(["son"], ("child", "m")),
        **dict.fromkeys(["daughter"], ("child", "f")),
        "child": ("child", None),
        **dict.fromkeys(["brother", "halfbrother"], ("sibling", "m")),
        **dict.fromkeys(["sister", "halfsister"], ("sibling", "f")),
        "sibling": ("sibling", None),
        "husband": ("spouse", "m"),
        "wife": ("spouse", "f"),
        "spouse": ("spouse", None),
        **dict.fromkeys(
            [
                "grandfather",
                "grandpa",
                "granddad",
                "grandad",
                "granddaddy",
                "gramps",
                "grampa",
                "grandpop",
                "poppop",
            ],
            ("grandparent", "m"),
        ),
        **dict.fromkeys(
            [
                "grandmother",
                "grandma",
                "granny",
                "gran",
                "nana",
                "nan",
                "nanna",
                "grammy",
                "gramma",
                "grandmom",
                "grandmama",
            ],
            ("grandparent", "f"),
        ),
        "grandparent": ("grandparent", None),
        "grandson": ("grandchild", "m"),
        "granddaughter": ("grandchild", "f"),
        "grandchild": ("grandchild", None),
        **dict.fromkeys(["uncle"], ("pibling", "m")),
        **dict.fromkeys(["aunt", "auntie", "aunty"], ("pibling", "f")),
        "granduncle": ("great_pibling", "m"),
        "grandaunt": ("great_pibling", "f"),
        "nephew": ("nibling", "m"),
        "niece": ("nibling", "f"),
        "cousin": ("cousin", None),
        "fatherinlaw": ("parent_in_law", "m"),
        "motherinlaw": ("parent_in_law", "f"),
        "soninlaw": ("child_in_law", "m"),
        "daughterinlaw": ("child_in_law", "f"),
        "brotherinlaw": ("sibling_in_law", "m"),
        "sisterinlaw": ("sibling_in_law", "f"),
        **dict.fromkeys(["stepfather", "stepdad"], ("step_parent", "m")),
        **dict.fromkeys(["stepmother", "stepmom", "stepmum"], ("step_parent", "f")),
        "stepson": ("step_child", "m"),
        "stepdaughter": ("step_child", "f"),
        "stepbrother": ("step_sibling", "m"),
        "stepsister": ("step_sibling", "f"),
    }
)

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
#: kin words that work as a title before a name ("Uncle Jim", "Grandma Rose"); "Father", "Sister",
#: "Brother" and "Mother" before a name are usually religious titles and are not among them.
_KIN_TITLES = frozenset(
    {"uncle", "aunt", "auntie", "aunty", "cousin", "granduncle", "grandaunt"}
    | {w for w, k in KIN_TERMS.items() if k.relation == "grandparent"}
)
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
    if words and words[0] in ("my", "our"):
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


# --------------------------------------------------------------------------------------------
# Person resolution


class ResolutionMethod(StrEnum):
    EXACT = "exact"
    ALIAS = "alias"
    KINSHIP = "kinship"
    FIRST_LAST = "first_last"
    FIRST_NAME = "first_name"
    LAST_NAME = "last_name"
    FUZZY = "fuzzy"


class ResolvedMention(NamedTuple):
    mention: str
    person_id: UUID
    method: ResolutionMethod


_NICKNAME_GROUPS: tuple[tuple[str, ...], ...] = (
    ("james", "jim", "jimmy", "jamie"),
    ("william", "bill", "billy", "will", "willie", "willy"),
    ("robert", "bob", "bobby", "rob", "robbie", "bert"),
    ("richard", "dick", "rick", "ricky", "rich", "richie"),
    ("john", "jack", "johnny", "jon"),
    ("margaret", "peggy", "maggie", "meg", "marge", "margie", "greta", "madge"),
    ("elizabeth", "liz", "lizzie", "beth", "betty", "betsy", "bess", "eliza", "libby"),
    ("katherine", "catherine", "kathryn", "kate", "kathy", "katie", "cathy", "kay", "kitty"),
    ("edward", "ed", "eddie", "ned", "ted", "teddy"),
    ("theodore", "ted", "teddy", "theo"),
    ("thomas", "tom", "tommy"),
    ("joseph", "joe", "joey"),
    ("josephine", "jo", "josie"),
    ("charles", "charlie", "chuck", "chas"),
    ("michael", "mike", "mikey", "mick", "mickey"),
    ("henry", "hank", "harry", "hal"),
    ("harold", "harry", "hal"),
    ("patricia", "pat", "patty", "patsy", "tricia", "trish"),
    ("patrick", "pat", "paddy"),
    ("raymond", "ray"),
    ("ronald", "ron", "ronnie"),
    ("donald", "don", "donnie"),
    ("dorothy", "dot", "dottie", "dolly", "dora"),
    ("susan", "sue", "susie", "suzy"),
    ("barbara", "barb", "barbie", "babs"),
    ("deborah", "debra", "deb", "debbie"),
    ("frances", "fran", "frannie", "fanny"),
    ("francis", "frank", "frankie"),
    ("franklin", "frank", "frankie"),
    ("albert", "al", "bert", "bertie"),
    ("alfred", "al", "alf", "fred", "freddie"),
    ("frederick", "fred", "freddie", "freddy", "fritz"),
    ("samuel", "sam", "sammy"),
    ("daniel", "dan", "danny"),
    ("david", "dave", "davey", "davy"),
    ("anthony", "tony"),
    ("lawrence", "laurence", "larry", "laurie"),
    ("gerald", "jerry", "gerry"),
    ("eugene", "gene"),
    ("kenneth", "ken", "kenny"),
    ("walter", "walt", "wally"),
    ("nicholas", "nick", "nicky"),
    ("benjamin", "ben", "benny"),
    ("alexander", "alex", "sandy", "xander"),
    ("andrew", "andy", "drew"),
    ("steven", "stephen", "steve", "stevie"),
    ("peter", "pete"),
    ("gregory", "greg"),
    ("jeffrey", "geoffrey", "jeff"),
    ("timothy", "tim", "timmy"),
    ("matthew", "matt"),
    ("christopher", "chris", "kit"),
    ("christine", "christina", "chris", "chrissy", "tina"),
    ("virginia", "ginny", "ginger"),
    ("rebecca", "becky", "becca"),
    ("victoria", "vicky", "tori"),
    ("helen", "nell", "nellie"),
    ("eleanor", "elinor", "ellie", "nell", "nellie", "nora"),
    ("mary", "molly", "polly", "mae", "mamie"),
    ("abigail", "abby", "gail"),
    ("jennifer", "jen", "jenny"),
    ("ann", "anne", "anna", "annie", "nan", "nancy"),
    ("louise", "lou", "lulu"),
    ("louis", "lou", "louie"),
    ("leonard", "len", "lenny", "leo"),
    ("arthur", "art", "artie"),
    ("stanley", "stan"),
    ("vincent", "vince", "vinny"),
    ("gertrude", "gert", "gertie", "trudy"),
    ("mildred", "millie"),
    ("wilhelmina", "mina", "willa", "minnie"),
    ("evelyn", "evie"),
    ("clarence", "clare"),
    ("augustus", "gus"),
    ("cornelius", "neil"),
)
_NICKNAMES: dict[str, frozenset[int]] = {}
for _index, _group in enumerate(_NICKNAME_GROUPS):
    for _nick in _group:
        _NICKNAMES[_nick] = _NICKNAMES.get(_nick, frozenset()) | {_index}

_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})
_QUOTED_NICKNAME = re.compile(r"[\"“']([^\"”']+)[\"”']")


def _first_names_compatible(a: str, b: str) -> bool:
    return a == b or bool(_NICKNAMES.get(a, frozenset()) & _NICKNAMES.get(b, frozenset()))


@dataclass(frozen=True)
class _Known:
    id: UUID
    full: frozenset[str]  # casefolded names without quoted nicknames
    aliases: frozenset[str]  # aliases and quoted nicknames, casefolded
    first: str
    last: str


def _tokens(name: str) -> list[str]:
    words = [w.strip(".,").casefold() for w in normalize_name(name).split()]
    return [w for w in words if w and w not in _NAME_SUFFIXES]


def _known(person: Person) -> _Known:
    nicknames = {m.strip().casefold() for m in _QUOTED_NICKNAME.findall(person.name)}
    plain = " ".join(_QUOTED_NICKNAME.sub(" ", person.name).split())
    words = _tokens(plain)
    full = {normalize_name(person.name).casefold(), normalize_name(plain).casefold()}
    return _Known(
        id=person.id,
        full=frozenset(full),
        aliases=frozenset({normalize_name(a).casefold() for a in person.aliases} | nicknames),
        first=words[0] if words else "",
        last=words[-1] if len(words) > 1 else "",
    )


def _name_fits(known: _Known, words: list[str]) -> bool:
    """Could `words` ("jim", "jim carter") name this person (nicknames and aliases included)?"""
    if not words or not known.first:
        return False
    alias_words = {w for alias in known.aliases for w in alias.split()}
    if not _first_names_compatible(words[0], known.first) and words[0] not in alias_words:
        return False
    return len(words) == 1 or words[-1] == known.last


def _genders(known: Sequence[Person], relationships: Sequence[Relationship]) -> dict[UUID, str | None]:
    """Gender evidence: a gendered kin word in a FAMILY_OF detail names the `to` person's gender;
    an alias such as "Grandma Rose" or "Dad" names the person's own. Conflicts cancel out."""
    seen: dict[UUID, set[str]] = {}
    for rel in relationships:
        kin = parse_kin(rel.detail) if rel.type is RelationshipType.FAMILY_OF else None
        if kin and kin.gender:
            seen.setdefault(rel.to_person_id, set()).add(kin.gender)
    for person in known:
        for alias in person.aliases:
            words = normalize_name(alias).lower().split()
            kin = parse_kin(words[0]) if words else None
            if kin and kin.gender and (len(words) == 1 or words[0] in _KIN_TITLES):
                seen.setdefault(person.id, set()).add(kin.gender)
    return {pid: next(iter(g)) if len(g) == 1 else None for pid, g in seen.items()}


@dataclass(frozen=True)
class _Resolver:
    people: tuple[_Known, ...]
    relationships: tuple[Relationship, ...]
    narrator: UUID | None
    genders: dict[UUID, str | None]

    def kin_of_narrator(self, kin: Kin) -> set[UUID]:
        """Persons who are `kin` to the narrator. A gendered kin word needs gender evidence."""
        if self.narrator is None:
            return set()
        out: set[UUID] = set()
        for rel in self.relationships:
            if rel.type is not RelationshipType.FAMILY_OF:
                continue
            detail = parse_kin(rel.detail)
            if detail is None:
                continue
            if rel.from_person_id == self.narrator:
                other, relation, gender = rel.to_person_id, detail.relation, detail.gender
            elif rel.to_person_id == self.narrator:
                other, relation, gender = rel.from_person_id, inverse_relation(detail.relation), None
            else:
                continue
            if other == self.narrator or relation != kin.relation:
                continue
            if kin.gender is not None and (gender or self.genders.get(other)) != kin.gender:
                continue
            out.add(other)
        return out

    def by_name(self, words: list[str], text: str) -> tuple[set[UUID], ResolutionMethod | None]:
        """Name stages for a title-less name: exact, alias, first+last, first, last."""
        key = text.casefold()
        for method, hits in (
            (ResolutionMethod.EXACT, {k.id for k in self.people if key in k.full}),
            (ResolutionMethod.ALIAS, {k.id for k in self.people if key in k.aliases}),
        ):
            if hits:
                return hits, method
        if len(words) >= 2:
            first, last = words[0], words[-1]
            hits = {k.id for k in self.people if k.last == last and _first_names_compatible(first, k.first)}
            return hits, ResolutionMethod.FIRST_LAST if hits else None
        if len(words) == 1:
            word = words[0]
            hits = {k.id for k in self.people if k.first == word}
            if hits:
                return hits, ResolutionMethod.FIRST_NAME
            hits = {k.id for k in self.people if _first_names_compatible(word, k.first) or word in k.aliases}
            if hits:
                return hits, ResolutionMethod.FIRST_NAME
            hits = {k.id for k in self.people if k.last == word}
            if hits:
                return hits, ResolutionMethod.LAST_NAME
        return set(), None

    def fuzzy(self, key: str) -> UUID | None:
        best: dict[UUID, float] = {}
        for k in self.people:
            for candidate in k.full | k.aliases:
                ratio = difflib.SequenceMatcher(None, key, candidate).ratio()
                if ratio >= FUZZY_RATIO and ratio > best.get(k.id, 0.0):
                    best[k.id] = ratio
        if not best:
            return None
        ranked = sorted(best.items(), key=lambda kv: -kv[1])
        if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < 0.02:
            return None  # two persons about as close: ambiguous
        return ranked[0][0]

    def resolve(self, mention: str) -> tuple[UUID, ResolutionMethod] | None:
        text = normalize_name(mention, possessive=True)
        key = text.casefold()
        if not key:
            return None
        # 1. the whole mention is a known name or alias ("Uncle Jim" as an alias wins)
        for whole_method, whole_hits in (
            (ResolutionMethod.EXACT, {k.id for k in self.people if key in k.full}),
            (ResolutionMethod.ALIAS, {k.id for k in self.people if key in k.aliases}),
        ):
            if whole_hits:
                return (next(iter(whole_hits)), whole_method) if len(whole_hits) == 1 else None
        # 2. a kin phrase alone ("my dad", "Mom", "my mother's brother"): kinship or nothing
        kin = parse_kin(text, mention=True)
        if kin is not None:
            hits = self.kin_of_narrator(kin)
            return (next(iter(hits)), ResolutionMethod.KINSHIP) if len(hits) == 1 else None
        # 3. title + name ("Uncle Jim", "Grandma Rose", "Mrs. Hale")
        words = [w for w in re.split(r"\s+", text) if w]
        if words and words[0].lower() in ("my", "our"):
            words = words[1:]
        lowered = [w.lower().rstrip(".") for w in words]
        title_kin, consumed = _kin_title(lowered)
        if title_kin is not None:
            words = words[consumed:]
        elif len(words) >= 2 and lowered[0] in _HONORIFICS:
            words = words[1:]
        name = " ".join(words)
        tokens = _tokens(name)
        if title_kin is not None and self.narrator is not None:
            # "Uncle Jim": the narrator's uncle whose name fits beats any other Jim
            kin_hits = self.kin_of_narrator(title_kin)
            fitting = {k.id for k in self.people if k.id in kin_hits and _name_fits(k, tokens)}
            if len(fitting) == 1:
                return next(iter(fitting)), ResolutionMethod.KINSHIP
        hits, method = self.by_name(tokens, name)
        if len(hits) == 1 and method is not None:
            return next(iter(hits)), method
        if hits:
            return None  # ambiguous: better unresolved than wrong
        # 4. fuzzy, on the full mention and on the name without its title
        for candidate in dict.fromkeys((key, name.casefold())):
            found = self.fuzzy(candidate)
            if found is not None:
                return found, ResolutionMethod.FUZZY
        return None


def resolve_people(
    mentions: Sequence[str],
    known: Sequence[Person],
    relationships: Sequence[Relationship],
    narrator_person_id: UUID | None = None,
) -> tuple[list[ResolvedMention], list[str]]:
    """Match person mentions against the legacy's known persons.

    Order: exact name or alias (case-insensitive); a kin phrase ("my dad", "Mom") through the
    narrator's FAMILY_OF relationships (detail = what `to` is to `from`, read both ways); a kin or
    honorific title ("Uncle Jim", "Mrs. Hale") then the name: first+last, unique first name
    (nicknames included), unique last name, kin narrowing when the name alone is ambiguous;
    finally fuzzy (difflib ratio >= 0.88). Ambiguous mentions stay unresolved. Returns
    (resolved, unresolved); each distinct mention (case-insensitive) is reported once, in order."""
    resolver = _Resolver(
        people=tuple(_known(p) for p in known),
        relationships=tuple(relationships),
        narrator=narrator_person_id,
        genders=_genders(known, relationships),
    )
    resolved: list[ResolvedMention] = []
    unresolved: list[str] = []
    seen: set[str] = set()
    for mention in mentions:
        key = normalize_name(mention, possessive=True).casefold()
        if not key or key in seen:
            continue
        seen.add(key)
        found = resolver.resolve(mention)
        if found is None:
            unresolved.append(mention)
        else:
            resolved.append(ResolvedMention(mention, found[0], found[1]))
    return resolved, unresolved
