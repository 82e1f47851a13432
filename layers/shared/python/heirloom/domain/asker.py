"""People a question names relative to the person asking ("my brother", "Dad", "Pai", "Opa",
"my uncle's wife"), resolved through the asker's Person node and the known relationships
(docs/design.md §6), and people named relative to someone the question names ("Bea's
grandson", "Tomek's mãe"), resolved from that person. The asker's relatives seed graph traversal
and vector search alike; the others, traversal only."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from heirloom.contracts.context import EntityMatch, QueryIntent
from heirloom.contracts.records import Person, Relationship
from heirloom.domain.kinship import DECOMPOSE, NARRATOR_POSSESSIVES, Kin, parse_kin
from heirloom.domain.linked_subjects import linked_legacies, subjects_of
from heirloom.domain.names import name_key
from heirloom.domain.people import gender_evidence, kin_of
from heirloom.ports import StoryStore

#: words that make a following kin word someone else's ("her father", "your Mum"); an article
#: does not ("a Mãe", "o Pai" are how Portuguese says Mum and Dad)
_NOT_THE_ASKERS = frozenset({"his", "her", "their", "your", "its", "whose"})
#: the asker's "my" and "our" in every language of the kin lexicon ("my", "mijn opa", "minha avó")
_ASKERS = NARRATOR_POSSESSIVES
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
#: longest kin phrase looked at after "my" ("my late great-uncle's second wife")
_MAX_WORDS = 5
#: a possessive name that may open a kin phrase ("Bea's grandson")
_POSSESSIVE = re.compile(r"([^\W\d_][\w-]*)['’]s\s+")
#: resolved people kept per question
MAX_PEOPLE = 4


@dataclass(frozen=True)
class KinPhrase:
    """A kin phrase in the question, as written, and its chain ("my uncle's wife": uncle, wife)."""

    text: str
    chain: tuple[Kin, ...]


@dataclass(frozen=True)
class AskerKin:
    mention: str
    person: Person
    #: the named person the mention is relative to ("Bea" in "Bea's grandson"); None: the asker
    anchor: str | None = None
    #: found only through the asker's node in a linked legacy (`namesakes`)
    linked: bool = False


def _chain(phrase: str) -> tuple[Kin, ...] | None:
    parts = re.split(r"['’]s\s+", re.sub(r"['’]s$", "", phrase))
    kins = tuple(parse_kin(part, mention=True) or _plural(part) for part in parts)
    if any(k is None for k in kins):
        return None
    return tuple(k for k in kins if k is not None)


def _plural(part: str) -> Kin | None:
    """A kin word in the plural ("my parents", "my grandparents", "my brothers"): every
    relative the singular names."""
    singular = re.sub(r"(?<=[^\Ws])s$", "", part)
    return parse_kin(singular, mention=True) if singular != part else None


def _longest(words: Sequence[str], start: int, lead: str) -> tuple[str, tuple[Kin, ...], int] | None:
    """The longest kin phrase opening at `start` (with `lead`, "my"/"our", before it)."""
    for end in range(min(len(words), start + _MAX_WORDS), start, -1):
        phrase = " ".join(words[start:end])
        chain = _chain(f"{lead} {phrase}".strip())
        if chain:
            return phrase, chain, end
    return None


def kin_phrases(text: str) -> list[KinPhrase]:
    """Kin phrases relative to the asker: after "my"/"our" or another language's ("my brother",
    "our grandmother's sister", "mijn opa", "my parents"), or a kin word used as a name ("Dad",
    "Pai", "Opa", "Mum's brother": capitalised, not after "her", "the"..., and not a title
    before a name, "Grandma Rose")."""
    words = [m.group().rstrip("'’-") for m in _WORD.finditer(text)]
    found: list[KinPhrase] = []
    i = 0
    while i < len(words):
        word = words[i]
        lowered = word.lower()
        previous = words[i - 1].lower() if i else ""
        hit = None
        if lowered in _ASKERS:
            hit = _longest(words, i + 1, lowered)
            text_start = i
        if hit is None and word[:1].isupper() and previous not in _NOT_THE_ASKERS | _ASKERS:
            hit = _longest(words, i, "")
            text_start = i
            following = words[hit[2]] if hit and hit[2] < len(words) else ""
            if hit and following[:1].isupper() and "'" not in hit[0] and "’" not in hit[0]:
                hit = None  # "Grandma Rose", "Uncle Jim": a name, the gazetteer's
        if hit is None:
            i += 1
            continue
        _, chain, end = hit
        found.append(KinPhrase(" ".join(words[text_start:end]), chain))
        i = end
    return found


def named_kin_phrases(text: str) -> list[tuple[str, KinPhrase]]:
    """Kin phrases after a capitalised name's possessive, with that name: "Bea's grandson" ->
    ("Bea", grandson). A kin word as the name ("Mum's brother") is the asker's (`kin_phrases`)."""
    found: list[tuple[str, KinPhrase]] = []
    for m in _POSSESSIVE.finditer(text):
        anchor = m.group(1)
        if not anchor[:1].isupper() or parse_kin(anchor, mention=True) is not None:
            continue
        words = [w.group().rstrip("'’-") for w in _WORD.finditer(text[m.end() :])]
        hit = _longest(words, 0, "")
        if hit is not None:
            found.append((anchor, KinPhrase(f"{anchor}'s {hit[0]}", hit[1])))
    return found


def _direct(
    people: set[UUID], kin: Kin, relationships: Sequence[Relationship], genders: dict[UUID, str | None]
) -> set[UUID]:
    """Who is `kin` to any of `people` by a recorded relationship; a gendered word also takes a
    relative whose gender nothing records (never one recorded as the other gender)."""
    strict = {o for p in people for o in kin_of(p, kin, relationships, genders)}
    if strict or kin.gender is None:
        return strict
    loose = {o for p in people for o in kin_of(p, Kin(kin.relation, None), relationships, genders)}
    return {o for o in loose if genders.get(o) is None}


def _step(
    people: set[UUID], kin: Kin, relationships: Sequence[Relationship], genders: dict[UUID, str | None]
) -> set[UUID]:
    """`_direct`, else through the two links that make the relation (a grandparent is a
    parent's parent, an uncle a parent's brother), the gender on the second."""
    found = _direct(people, kin, relationships, genders)
    for first, second in () if found else DECOMPOSE.get(kin.relation, ()):
        middle = _direct(people, Kin(first, None), relationships, genders)
        found |= _direct(middle, Kin(second, kin.gender), relationships, genders) - people
    return found


def namesakes(person: Person, persons: Sequence[Person]) -> set[UUID]:
    """`person` and their node in each other legacy among `persons`: the one there whose full
    name is theirs or one of their aliases, or has theirs among its aliases (each legacy keeps
    its own Person nodes; the grandson a linked legacy records is the asker). A legacy with two
    such people gives none: better nothing than a guess."""
    mine = {person.name.casefold(), *(a.casefold() for a in person.aliases)}
    found: dict[UUID, list[UUID]] = {}
    for other in persons:
        if other.legacy_id == person.legacy_id or other.id == person.id:
            continue
        theirs = {other.name.casefold(), *(a.casefold() for a in other.aliases)}
        if person.name.casefold() in theirs or other.name.casefold() in mine:
            found.setdefault(other.legacy_id, []).append(other.id)
    return {person.id} | {ids[0] for ids in found.values() if len(ids) == 1}


def resolve_kin(
    phrases: Sequence[KinPhrase],
    asker: UUID,
    persons: Sequence[Person],
    relationships: Sequence[Relationship],
    also: Collection[UUID] = (),
) -> list[AskerKin]:
    """Each phrase followed link by link from the asker ("my uncle's wife": the asker's uncles,
    then their wives); the composed relation ("aunt") when the links are not recorded. `also`:
    the asker's nodes in linked legacies (`namesakes`), each followed on its own records; a
    relative found only from one of them is `linked`."""
    selves = {asker, *also}
    by_id = {p.id: p for p in persons}
    genders = gender_evidence(persons, relationships)
    out: list[AskerKin] = []
    for phrase in phrases:
        found: dict[UUID, bool] = {}
        for node in sorted(selves, key=lambda n: (n != asker, str(n))):  # the asker's own first
            people = _follow({node}, phrase.chain, relationships, genders)
            if not people and len(phrase.chain) > 1:
                composed = parse_kin(phrase.text, mention=True)
                people = _step({node}, composed, relationships, genders) if composed else set()
            for pid in people - selves:
                found.setdefault(pid, node != asker)
        for pid in sorted(found, key=str):
            if pid in by_id and all(a.person.id != pid for a in out):
                out.append(AskerKin(phrase.text, by_id[pid], linked=found[pid]))
    return out[:MAX_PEOPLE]


def _follow(
    people: set[UUID],
    chain: Sequence[Kin],
    relationships: Sequence[Relationship],
    genders: dict[UUID, str | None],
) -> set[UUID]:
    for kin in chain:
        people = _step(people, kin, relationships, genders)
    return people


def _names(person: Person) -> set[str]:
    """How a question may name `person`: full name, first name, aliases (case folded)."""
    return {
        person.name.casefold(),
        *person.name.casefold().split()[:1],
        *(a.casefold() for a in person.aliases),
    }


def resolve_named_kin(
    phrases: Sequence[tuple[str, KinPhrase]], persons: Sequence[Person], relationships: Sequence[Relationship]
) -> list[AskerKin]:
    """Each phrase followed from the person its name is (full name, first name or alias; the
    same person's node in each linked legacy): "Bea's grandson" -> Bea's grandsons. A name two
    people of one legacy share resolves nothing."""
    by_id = {p.id: p for p in persons}
    genders = gender_evidence(persons, relationships)
    out: list[AskerKin] = []
    for anchor, phrase in phrases:
        key = anchor.casefold()
        named = [p for p in persons if key in _names(p)]
        legacies = [p.legacy_id for p in named]
        if len(set(legacies)) != len(legacies):  # two people of one legacy: better nothing than a guess
            continue
        ids = {p.id for p in named}  # one per legacy: the same person in linked legacies
        found = _follow(ids, phrase.chain, relationships, genders) - ids if ids else set()
        for pid in sorted(found, key=str):
            if pid in by_id and all(a.person.id != pid for a in out):
                out.append(AskerKin(phrase.text, by_id[pid], anchor))
    return out


def asker_kin(
    text: str,
    user_id: UUID,
    legacy_id: UUID,
    store: StoryStore,
    *,
    cross_legacy: bool = True,
    others: bool = True,
) -> list[AskerKin]:
    """The people `text` names relative to the user asking (when the user is a known person)
    or, with `others`, to a person it names ("Bea's grandson"), among the persons of the legacy,
    its actively linked legacies and the asker's own relatives; nothing when the text has no kin
    phrase (and then no store read). `cross_legacy=False`: the persons of the legacy alone (the
    persona stays in it)."""
    phrases, named = kin_phrases(text), named_kin_phrases(text) if others else []
    if not phrases and not named:
        return []
    user = store.get_user(user_id) if phrases else None
    asker = user.person_id if user is not None else None
    if asker is None and not named:  # the user is no known person: no one is their relative
        return []
    legacy_ids = [legacy_id, *(linked_legacies(store, legacy_id) if cross_legacy else ())]
    persons = {p.id: p for p in store.persons_of(legacy_ids)}
    own = (persons.get(asker) or store.get_person(asker)) if asker is not None else None
    if own is not None:
        persons[own.id] = own
    relationships = store.relationships_of(sorted(persons, key=str))
    # the asker's recorded relatives, in the order of their relationships
    related = list(
        dict.fromkeys(
            pid
            for rel in relationships
            if own is not None and own.id in (rel.from_person_id, rel.to_person_id)
            for pid in (rel.from_person_id, rel.to_person_id)
            if pid != own.id
        )
    )
    for pid in related:  # the asker's relatives in legacies outside the request's
        if pid not in persons:
            person = store.get_person(pid)
            if person is not None and (cross_legacy or person.legacy_id == legacy_id):
                persons[pid] = person
    everyone = list(persons.values())
    out: list[AskerKin] = []
    if own is not None and phrases:
        # a relative of the asker is never the asker, whatever their name ("John Smith Sr.")
        selves = namesakes(own, [p for p in everyone if p.id not in related]) - {own.id}
        out = resolve_kin(phrases, own.id, everyone, relationships, also=selves)
    for found in resolve_named_kin(named, everyone, relationships):
        if all(a.person.id != found.person.id for a in out):
            out.append(found)
    if out and len(legacy_ids) > 1:
        subjects = subjects_of(store, legacy_ids[1:])
        out = their_own(out, [persons[s] for s in subjects if s in persons])
    return out[:MAX_PEOPLE]


def their_own(kin: Sequence[AskerKin], subjects: Sequence[Person]) -> list[AskerKin]:
    """A relative found as a person of one legacy whose full name is a linked legacy's subject's
    is that subject, as the gazetteer reads their name: "my father-in-law", Kees in his
    daughter-in-law's legacy, is Kees of his own legacy, whose stories are his own account (and
    never name him). Two subjects of one name: neither."""
    by_name: dict[str, Person | None] = {}
    for subject in subjects:
        key = name_key(subject.name)
        by_name[key] = None if key in by_name else subject
    out: list[AskerKin] = []
    for k in kin:
        own = by_name.get(name_key(k.person.name))
        found = replace(k, person=own) if own is not None else k
        if all(o.person.id != found.person.id for o in out):
            out.append(found)
    return out


def with_asker_kin(intent: QueryIntent, kin: Sequence[AskerKin]) -> QueryIntent:
    """The intent with the asker's relatives as person matches; a name the gazetteer matched
    for the same words ("Dad" as someone's alias) gives way to the asker's own relative."""
    if not kin:
        return intent
    phrases = {k.mention.casefold() for k in kin}
    kept = [m for m in intent.matches if m.mention.casefold() not in phrases]
    ids = {m.node_id for m in kept}
    added = [
        EntityMatch(mention=k.mention, node_id=str(k.person.id), label="Person", name=k.person.name)
        for k in kin
        if str(k.person.id) not in ids
    ]
    people = tuple(dict.fromkeys([*intent.entities.people, *(k.person.name for k in kin)]))
    return intent.model_copy(
        update={
            "matches": (*kept, *added),
            "entities": intent.entities.model_copy(update={"people": people}),
        }
    )


def with_asker_names(text: str, kin: Sequence[AskerKin], subject_id: UUID | None) -> str:
    """The retrieval text with the asker's relatives named: "What did my brother build?" + "Tomás
    Silva". A phrase naming the legacy's subject goes, as the subject's names do (every story is
    about them); with nothing left, the text as it was. People named relative to someone else
    ("Bea's grandson"), and relatives found only through the asker's node in a linked legacy,
    seed the graph only (docs/evaluation.md, "Named kin", "The asker in a linked legacy")."""
    out = text
    for k in kin:
        if k.anchor is None and k.person.id == subject_id:
            out = re.sub(rf"\b{re.escape(k.mention)}(?:['’]s?)?(?!\w)", " ", out, flags=re.IGNORECASE)
        elif k.anchor is not None or k.linked:
            # measured: their name in the text pulled other stories ahead (a linked legacy's
            # grandfather: his own stories do not name him, the stories about him do)
            continue
        elif k.person.name.casefold() not in out.casefold():
            out = f"{out} {k.person.name}"
    out = " ".join(out.split())
    return out if re.search(r"\w", out) else text
