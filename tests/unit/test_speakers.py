"""Kin phrases in transcript turns are the speaker's, not the author's (decision 0033)."""

import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from heirloom.adapters.memory import MemoryStoryStore
from heirloom.contracts.extraction import ExtractedEntities
from heirloom.contracts.records import Person, Story, User, Visibility
from heirloom.domain import people
from heirloom.domain.people import ResolutionMethod, resolve_people
from heirloom.domain.speakers import _narrators, resolve_spoken_people, speaker_persons, transcript_turns
from heirloom.domain.story_graph import resolve_mentions
from heirloom_dev.loader import read_dataset
from tests.support.kin import family, person

ODILE, BEA = person("Odile Marchand", "Odie"), person("Beata Nowak", "Bea")
ODILES_DAUGHTER, BEAS_DAUGHTER, ODILES_BROTHER = (
    person("Claire Marchand"),
    person("Ewa Nowak"),
    person("Paul Roy"),
)
KNOWN = [ODILE, BEA, ODILES_DAUGHTER, BEAS_DAUGHTER, ODILES_BROTHER]
RELS = [family(ODILE, ODILES_DAUGHTER, "daughter"), family(BEA, BEAS_DAUGHTER, "daughter"),
        family(ODILE, ODILES_BROTHER, "brother")]  # fmt: skip


def resolve(text: str, *mentions: str) -> dict[str, uuid.UUID | None]:
    resolved, unresolved = resolve_spoken_people(list(mentions), text, KNOWN, RELS, ODILE.id)
    return {r.mention: r.person_id for r in resolved} | dict.fromkeys(unresolved)


def test_a_kin_phrase_in_another_speakers_turn_is_the_speakers_kin():
    text = "Odile: Did you hear from anyone?\n\nBea: My daughter rang on Tuesday."
    assert resolve(text, "My daughter") == {"My daughter": BEAS_DAUGHTER.id}  # not the author's


def test_the_author_speaking_resolves_as_today():
    text = "Bea: How are you keeping?\nOdile: My brother fixed the gate at last."
    assert resolve(text, "My brother") == {"My brother": ODILES_BROTHER.id}


def test_an_unknown_speaker_leaves_the_kin_phrase_unresolved():
    text = "Odile: Who was at the door?\nMarguerite: My daughter, with the shopping."
    assert resolve(text, "My daughter") == {"My daughter": None}


def test_a_kin_phrase_two_speakers_say_links_both_persons():
    text = "Odile: My daughter is coming Sunday.\nBea: My daughter too!"
    got = resolve(text, "My daughter")
    assert got == {"My daughter": ODILES_DAUGHTER.id, "Bea: My daughter": BEAS_DAUGHTER.id}


def test_names_resolve_in_a_transcript_as_anywhere():
    text = "Odile: Claire phoned.\nBea: Ewa Nowak did too."
    assert resolve(text, "Claire", "Ewa Nowak") == {
        "Claire": ODILES_DAUGHTER.id,
        "Ewa Nowak": BEAS_DAUGHTER.id,
    }


@pytest.mark.parametrize(
    "text",
    [
        "My daughter rang on Tuesday. We talked about the garden for an hour.",
        "Note: my daughter rang on Tuesday.",  # one labelled line is no transcript
        "Bea said it at the door: my daughter rang on Tuesday.\nWe laughed: the line was bad.",
    ],
)
def test_a_story_that_is_not_a_transcript_is_read_as_today(text):
    assert transcript_turns(text, KNOWN) is None
    expected = resolve_people(["my daughter"], KNOWN, RELS, ODILE.id)
    assert resolve_spoken_people(["my daughter"], text, KNOWN, RELS, ODILE.id) == expected
    assert expected[0][0].method is ResolutionMethod.KINSHIP


def test_turns_take_known_names_lines_that_continue_and_the_authors_preamble():
    text = "Recorded on Sunday.\nbea: Hello!\nStill Bea talking.\nFather Tom Reilly: Bless you."
    turns = transcript_turns(text, KNOWN)
    assert turns is not None
    assert [(t.speaker, t.text.strip()) for t in turns] == [
        ("", "Recorded on Sunday."),
        ("bea", "Hello!\nStill Bea talking."),  # a known alias, lower-case
        ("Father Tom Reilly", "Bless you."),
    ]


class _CountingStore(MemoryStoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.person_reads = 0

    def get_person(self, person_id: uuid.UUID) -> Person | None:
        self.person_reads += 1
        return super().get_person(person_id)


@pytest.mark.parametrize(
    ("text", "reads"),
    [("Odile: Did you hear from Bea?\n\nLuc: She rang on Tuesday.", 1), ("Bea rang on Tuesday.", 0)],
)
def test_the_authors_person_outside_the_legacy_is_read_for_a_transcript_only(text, reads):
    """In a transcript the author may speak under their own name, so their Person is read when
    it is not among the legacy's persons; any other story is the author's as it stands."""
    store = _CountingStore()
    luc = person("Luc Marchand")
    author = User(id=uuid.uuid4(), name="Luc", person_id=luc.id)
    store.upsert_user(author)
    store.upsert_person(luc)
    now = datetime.now(UTC)
    story = Story(id=uuid.uuid4(), legacy_id=ODILE.legacy_id, author_user_id=author.id, title="A call",
                  content=text, visibility=Visibility.PUBLIC, created_at=now, updated_at=now)  # fmt: skip
    ports = SimpleNamespace(stories=store)
    mentions, _ = resolve_mentions(ports, story, ExtractedEntities(), [ODILE, BEA])  # type: ignore[arg-type]
    assert store.person_reads == reads
    assert "Bea" in mentions


def test_a_story_s_speakers_are_resolved_with_one_resolver_and_the_author_s_with_one_more(monkeypatch):
    """The known persons are prepared once per story, not once per speaker; each speaker the
    person `resolve_people` alone finds (the author's Person, outside the legacy, last)."""
    luc = person("Luc Marchand")
    speakers = ["Odile", "Bea", "Father Tom Reilly", "Luc", "Ewa Nowak", "Claire M", "Marguerite"]
    text = "\n".join(f"{s}: A line of mine." for s in speakers)
    expected = {}
    for speaker in speakers:
        found = resolve_people([speaker], KNOWN, ())[0] or resolve_people([speaker], [luc], ())[0]
        expected[speaker] = found[0].person_id if found else None
    assert expected["Luc"] == luc.id and expected["Marguerite"] is None
    built: list[int] = []
    real = people._Resolver

    def counting(**fields):
        built.append(len(fields["people"]))
        return real(**fields)

    monkeypatch.setattr(people, "_Resolver", counting)
    assert speaker_persons(text, KNOWN) == {pid for s, pid in expected.items() if pid and s != "Luc"}
    assert built == [len(KNOWN)]
    built.clear()
    mentions = ["Odile", "Ewa Nowak"]
    resolved, _ = resolve_spoken_people(mentions, text, KNOWN, RELS, luc.id, {luc.id: luc}.get)
    assert {r.person_id for r in resolved} == {ODILE.id, BEAS_DAUGHTER.id}
    assert built[:2] == [len(KNOWN), 1]  # the speakers'; the author's; then one per narrator


def test_every_transcript_s_speakers_resolve_as_resolve_people_finds_each_alone():
    """In every transcript of the conversations dev set, each speaker's person is the one a
    `resolve_people` call of its own finds (the author's Person after the legacy's), with the
    author among the legacy's persons and outside them."""
    data = read_dataset(Path(__file__).parents[2] / "examples" / "conversations")
    persons = {p.record.id: p.record for p in data.persons}
    authors = {u.record.id: u.record.person_id for u in data.users}
    checked = 0
    for story in (s.record for s in data.stories):
        legacy = [p for p in persons.values() if p.legacy_id == story.legacy_id]
        author = authors[story.author_user_id]
        for known in (legacy, [p for p in legacy if p.id != author]):
            turns = transcript_turns(story.content, known)
            if turns is None:
                continue
            expected: dict[str, uuid.UUID | None] = {"": author}
            for speaker in (t.speaker for t in turns if t.speaker):
                found = resolve_people([speaker], known, ())[0]
                if not found and author is not None and author not in {p.id for p in known}:
                    found = resolve_people([speaker], [persons[author]], ())[0]
                expected[speaker] = found[0].person_id if found else None
            assert _narrators(turns, known, author, persons.get) == expected, story.title
            checked += 1
    assert checked >= 30
