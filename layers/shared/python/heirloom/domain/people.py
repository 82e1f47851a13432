"""Person resolution: person mentions matched to the legacy's known persons by name, alias,
nickname or kin phrase through the narrator's relationships; never guessed between two."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple
from uuid import UUID

from heirloom.contracts.records import Person, Relationship, RelationshipType
from heirloom.domain.kinship import (
    _HONORIFICS,
    _KIN_TITLES,
    DECOMPOSE,
    THROUGH_SPOUSE,
    Kin,
    _kin_title,
    inverse_relation,
    parse_kin,
)
from heirloom.domain.names import normalize_name

# Person resolution

#: Fuzzy name matching threshold (difflib ratio, case-insensitive).
FUZZY_RATIO = 0.88


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


def alias_gender(alias: str) -> str | None:
    """The gender an alias names: a gendered kin word alone ("Dad") or as a title ("Aunt Lucy")."""
    words = normalize_name(alias).lower().split()
    kin = parse_kin(words[0]) if words else None
    if kin and kin.gender and (len(words) == 1 or words[0] in _KIN_TITLES):
        return kin.gender
    return None


def gender_evidence(known: Sequence[Person], relationships: Sequence[Relationship]) -> dict[UUID, str | None]:
    """Gender evidence: a gendered kin word in a FAMILY_OF detail names the `to` person's gender;
    an alias such as "Grandma Rose" or "Dad" names the person's own. Conflicts cancel out."""
    seen: dict[UUID, set[str]] = {}
    for rel in relationships:
        kin = parse_kin(rel.detail) if rel.type is RelationshipType.FAMILY_OF else None
        if kin and kin.gender:
            seen.setdefault(rel.to_person_id, set()).add(kin.gender)
    for person in known:
        for alias in person.aliases:
            if gender := alias_gender(alias):
                seen.setdefault(person.id, set()).add(gender)
    return {pid: next(iter(g)) if len(g) == 1 else None for pid, g in seen.items()}


def kin_of(
    person: UUID, kin: Kin, relationships: Sequence[Relationship], genders: dict[UUID, str | None]
) -> set[UUID]:
    """Persons who are `kin` to `person` through the FAMILY_OF relationships (detail = what `to`
    is to `from`, read both ways). A gendered kin word needs gender evidence (`genders`)."""
    out: set[UUID] = set()
    for rel in relationships:
        if rel.type is not RelationshipType.FAMILY_OF:
            continue
        detail = parse_kin(rel.detail)
        if detail is None:
            continue
        if rel.from_person_id == person:
            other, relation, gender = rel.to_person_id, detail.relation, detail.gender
        elif rel.to_person_id == person:
            other, relation, gender = rel.from_person_id, inverse_relation(detail.relation), None
        else:
            continue
        if other == person or relation != kin.relation:
            continue
        if kin.gender is not None and (gender or genders.get(other)) != kin.gender:
            continue
        out.add(other)
    return out


@dataclass(frozen=True)
class _Resolver:
    people: tuple[_Known, ...]
    relationships: tuple[Relationship, ...]
    narrator: UUID | None
    genders: dict[UUID, str | None]

    def kin_of_narrator(self, kin: Kin) -> set[UUID]:
        """Persons who are `kin` to the narrator: recorded, else through the two links that make
        the relation (`DECOMPOSE`: a grandmother is a parent's mother; `THROUGH_SPOUSE`: Dad is
        the mother's husband)."""
        if self.narrator is None:
            return set()
        found = kin_of(self.narrator, kin, self.relationships, self.genders)
        links = DECOMPOSE.get(kin.relation, ()) + THROUGH_SPOUSE.get(kin.relation, ())
        for first, second in () if found else links:
            for middle in kin_of(self.narrator, Kin(first, None), self.relationships, self.genders):
                found |= kin_of(middle, Kin(second, kin.gender), self.relationships, self.genders)
        return found - {self.narrator}

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

    def resolve(self, mention: str) -> Answer:
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
                return _only(whole_hits, whole_method)
        # 2. a kin phrase alone ("my dad", "Mom", "my mother's brother"): kinship or nothing
        kin = parse_kin(text, mention=True)
        if kin is not None:
            return _only(self.kin_of_narrator(kin), ResolutionMethod.KINSHIP)
        # 3. title + name ("Uncle Jim", "Grandma Rose", "Mrs. Hale")
        title_kin, name = _title_and_name(text)
        decided, answer = self.by_titled_name(title_kin, name)
        if decided:
            return answer
        # 4. fuzzy, on the full mention and on the name without its title
        for candidate in dict.fromkeys((key, name.casefold())):
            found = self.fuzzy(candidate)
            if found is not None:
                return found, ResolutionMethod.FUZZY
        return None

    def by_titled_name(self, title_kin: Kin | None, name: str) -> tuple[bool, Answer]:
        """(decided, answer): decided when the name matched one person, or several (ambiguous:
        better unresolved than wrong)."""
        tokens = _tokens(name)
        if title_kin is not None and self.narrator is not None:
            # "Uncle Jim": the narrator's uncle whose name fits beats any other Jim
            kin_hits = self.kin_of_narrator(title_kin)
            fitting = {k.id for k in self.people if k.id in kin_hits and _name_fits(k, tokens)}
            if len(fitting) == 1:
                return True, (next(iter(fitting)), ResolutionMethod.KINSHIP)
        hits, method = self.by_name(tokens, name)
        if len(hits) == 1 and method is not None:
            return True, (next(iter(hits)), method)
        return bool(hits), None


Answer = tuple[UUID, ResolutionMethod] | None


def _only(ids: set[UUID], method: ResolutionMethod) -> Answer:
    return (next(iter(ids)), method) if len(ids) == 1 else None


def _title_and_name(text: str) -> tuple[Kin | None, str]:
    """A kin or honorific title and the name after it ("Uncle Jim" -> uncle, "Jim")."""
    words = [w for w in re.split(r"\s+", text) if w]
    if words and words[0].lower() in ("my", "our"):
        words = words[1:]
    lowered = [w.lower().rstrip(".") for w in words]
    title_kin, consumed = _kin_title(lowered)
    if title_kin is not None:
        words = words[consumed:]
    elif len(words) >= 2 and lowered[0] in _HONORIFICS:
        words = words[1:]
    return title_kin, " ".join(words)


def _resolver(
    known: Sequence[Person], relationships: Sequence[Relationship], narrator_person_id: UUID | None
) -> _Resolver:
    return _Resolver(
        people=tuple(_known(p) for p in known),
        relationships=tuple(relationships),
        narrator=narrator_person_id,
        genders=gender_evidence(known, relationships),
    )


def person_resolver(known: Sequence[Person]) -> Callable[[str], UUID | None]:
    """The person one mention resolves to, as `resolve_people(mentions, known, ())` finds it (no
    relationships, no narrator), or None; `known` prepared once for many mentions."""
    resolver = _resolver(known, (), None)

    def resolve(mention: str) -> UUID | None:
        found = resolver.resolve(mention)
        return found[0] if found else None

    return resolve


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
    resolver = _resolver(known, relationships, narrator_person_id)
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
