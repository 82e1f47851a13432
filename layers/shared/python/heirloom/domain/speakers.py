"""Transcript speakers: in a story written as a conversation ("Bea: my daughter rang", one turn a
line), a kin phrase belongs to the turn's speaker, not to the story's author (decision 0033).

Works on the mentions as written, for every extractor: each mention is found in the turns that
contain it and resolved with that turn's speaker as the narrator."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from heirloom.contracts.records import Person, Relationship
from heirloom.domain.names import normalize_name
from heirloom.domain.people import ResolvedMention, person_resolver, resolve_people

#: a turn: a capitalised name of at most three words (or a known person's name or alias), ":"
_CAPITALISED_SPEAKER = re.compile(r"[^\W\d_][\w.'’-]*(?:\s+[^\W\d_][\w.'’-]*){0,2}")
#: a story is a transcript from this many turns on (one "Note: ..." line does not make one)
MIN_TURNS = 2


@dataclass(frozen=True)
class Turn:
    speaker: str  # as written before the ":"
    text: str  # the turn's lines, the speaker's label left out


@dataclass(frozen=True)
class KnownPersons:
    """A legacy's known persons with their names and aliases normalised once: built once for
    the many stories a relink reads (heirloom.domain.relink)."""

    persons: tuple[Person, ...]
    names: frozenset[str]  # each name and alias, normalised and casefolded

    @classmethod
    def of(cls, known: Sequence[Person]) -> KnownPersons:
        names = frozenset(normalize_name(n).casefold() for p in known for n in (p.name, *p.aliases))
        return cls(tuple(known), names)


def _prepared(known: Sequence[Person] | KnownPersons) -> KnownPersons:
    return known if isinstance(known, KnownPersons) else KnownPersons.of(known)


def _speaker(line: str, known_names: frozenset[str]) -> tuple[str, str] | None:
    """(speaker, rest of the line) when `line` opens a turn."""
    label, colon, rest = line.partition(":")
    label = label.strip()
    if not colon or not label or label != line[: len(label)]:
        return None
    capitalised = label[0].isupper() and all(w[0].isupper() for w in label.split())
    if (capitalised and _CAPITALISED_SPEAKER.fullmatch(label)) or normalize_name(
        label
    ).casefold() in known_names:
        return label, rest
    return None


def transcript_turns(text: str, known: Sequence[Person] | KnownPersons) -> list[Turn] | None:
    """The turns of a transcript, or None when `text` is not one. A line that opens no turn
    continues the turn before it; text before the first turn has no speaker (the author's)."""
    known_names = _prepared(known).names
    turns: list[Turn] = []
    lines: list[str] = []
    speaker = ""
    for line in text.splitlines():
        opened = _speaker(line, known_names)
        if opened is None:
            lines.append(line)
            continue
        if lines and (speaker or any(w.strip() for w in lines)):
            turns.append(Turn(speaker, "\n".join(lines)))
        speaker, lines = opened[0], [opened[1]]
    turns.append(Turn(speaker, "\n".join(lines)))
    return turns if sum(1 for t in turns if t.speaker) >= MIN_TURNS else None


def _said_in(mention: str, turn: Turn) -> bool:
    for form in dict.fromkeys((mention, normalize_name(mention, possessive=True))):
        if form and re.search(rf"(?<!\w){re.escape(form)}(?!\w)", turn.text, re.IGNORECASE):
            return True
    return False


def _narrators(
    turns: Sequence[Turn],
    known: Sequence[Person],
    author_person_id: UUID | None,
    read_person: Callable[[UUID], Person | None] | None,
) -> dict[str, UUID | None]:
    """Each speaker's person: the one known person the speaker's name resolves to, else the
    author's when the name is the author's (their Person, outside `known`, read by `read_person`
    at most once and only then), else None; "" (text outside turns): the author. Each resolver
    is built once for all the speakers."""
    out: dict[str, UUID | None] = {"": author_person_id}
    outside = author_person_id is not None and all(p.id != author_person_id for p in known)
    by_known = person_resolver(known)
    by_author: Callable[[str], UUID | None] | None = None
    for speaker in dict.fromkeys(t.speaker for t in turns if t.speaker):
        found = by_known(speaker)
        if found is None and outside and read_person is not None and author_person_id is not None:
            if by_author is None:
                person = read_person(author_person_id)
                by_author = person_resolver([person] if person is not None else [])
            found = by_author(speaker)
        out[speaker] = found
    return out


def speaker_persons(text: str, known: Sequence[Person] | KnownPersons) -> set[UUID]:
    """The known persons who speak in `text` (none when it is not a transcript)."""
    prepared = _prepared(known)
    turns = transcript_turns(text, prepared)
    if not turns:
        return set()
    return {pid for pid in _narrators(turns, prepared.persons, None, None).values() if pid}


def resolve_spoken_people(
    mentions: Sequence[str],
    text: str,
    known: Sequence[Person],
    relationships: Sequence[Relationship],
    author_person_id: UUID | None = None,
    read_person: Callable[[UUID], Person | None] | None = None,
) -> tuple[list[ResolvedMention], list[str]]:
    """`resolve_people` with each mention's narrator the speaker of the turns it is said in
    (`_narrators`; `read_person` reads the author's Person when it is not in `known`; an unknown
    speaker is no one, so a kin phrase stays unresolved). A story that
    is not a transcript is the author's, as `resolve_people` reads it. A mention two speakers
    resolve to different persons links both, the second written "Speaker: mention"."""
    turns = transcript_turns(text, known)
    if turns is None:
        return resolve_people(mentions, known, relationships, author_person_id)
    narrators = _narrators(turns, known, author_person_id, read_person)
    first: dict[str, str] = {}  # each distinct mention once, as resolve_people reports it
    for mention in mentions:
        first.setdefault(normalize_name(mention, possessive=True).casefold(), mention)
    distinct = [m for key, m in first.items() if key]
    # who says each mention (speaker, narrator); one found in no turn (an extractor rewrote it)
    # has no speaker to read it by
    said: dict[str, list[tuple[str, UUID | None]]] = {}
    for mention in distinct:
        speakers = dict.fromkeys(t.speaker for t in turns if _said_in(mention, t))
        said[mention] = [(s, narrators[s]) for s in speakers] or [("", None)]
    by_narrator: dict[UUID | None, list[str]] = {}
    for mention, pairs in said.items():
        for _, narrator in pairs:
            by_narrator.setdefault(narrator, []).append(mention)
    hits: dict[tuple[str, UUID | None], ResolvedMention] = {}
    for narrator, group in by_narrator.items():
        for hit in resolve_people(group, known, relationships, narrator)[0]:
            hits[(hit.mention, narrator)] = hit
    resolved: list[ResolvedMention] = []
    unresolved: list[str] = []
    for mention, pairs in said.items():
        ids: set[UUID] = set()
        for speaker, narrator in pairs:
            found = hits.get((mention, narrator))
            if found is not None and found.person_id not in ids:
                resolved.append(found if not ids else found._replace(mention=f"{speaker}: {mention}"))
                ids.add(found.person_id)
        if not ids:
            unresolved.append(mention)
    return resolved, unresolved
