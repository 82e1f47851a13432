"""People a message describes instead of naming, found through the known relationships."""

from uuid import uuid4

from heirloom.contracts.records import Person
from heirloom.domain.described import described_nouns, described_people
from heirloom.domain.story_graph import named_people

ROWS = [
    {
        "via_id": "p-viv",
        "via": "Vera Kask",
        "relationship": "FRIENDS_WITH",
        "detail": "roommate at nursing school",
    },
    {
        "via_id": "p-mark",
        "via": "Mark Bell",
        "relationship": "KNEW",
        "detail": "neighbour across Juno Avenue",
    },
    {"via_id": "p-tom", "via": "Tom Ash", "relationship": "FAMILY_OF", "detail": "older brother"},
    {"via_id": "p-ann", "via": "Ann Roe", "relationship": "WORKED_WITH", "detail": "staff nurse on the ward"},
]


def test_described_nouns_are_heads_of_descriptions_not_every_word():
    assert described_nouns("What did the neighbor whose boy she patched up do?") >= {"neighbor"}
    assert "roommate" in described_nouns("Who was Ada's roommate at school?")
    assert described_nouns("When did she finish nursing school?") == set()
    # a name's words describe no one: "the Juno Avenue" is matched as a name, if at all
    assert described_nouns("What happened on the Juno Avenue porch?") == set()
    assert described_people("Who lived on the Juno Avenue?", ROWS) == []


def test_a_described_person_is_found_by_the_words_of_the_relationship():
    assert described_people("What did the neighbour do after the funeral?", ROWS) == ["p-mark"]
    assert described_people("What did the neighbor do after the funeral?", ROWS) == ["p-mark"]
    assert described_people("Who was her roommate?", ROWS) == ["p-viv"]
    assert described_people("What did her older brother do in the war?", ROWS) == ["p-tom"]
    # the relationship type counts as a description too
    assert described_people("What did her friend say?", ROWS) == ["p-viv"]


def test_nothing_described_or_the_person_is_named():
    assert described_people("What was she like?", ROWS) == []
    assert described_people("When did she become a nurse?", ROWS) == []
    assert described_people("What did her roommate Vera say?", ROWS, exclude=["p-viv"]) == []
    # the asker's own relative: resolved through the asker's relationships, not the subject's
    assert described_people("What did my older brother do in the war?", ROWS) == []
    assert described_people("Did my friend ever call?", ROWS) == []


def test_named_people_finds_aliases_the_model_missed_and_skips_ambiguous_names():
    legacy = uuid4()
    fran = Person(id=uuid4(), legacy_id=legacy, name="Frances Okerlund Strand", aliases=("Frannie",))
    jim1 = Person(id=uuid4(), legacy_id=legacy, name="Jim Farrow", aliases=("Uncle Jim",))
    jim2 = Person(id=uuid4(), legacy_id=legacy, name="Jim Ash", aliases=())
    text = "Frannie brought the pie. Uncle Jim carved. Jim laughed."
    found = named_people(text, [fran, jim1, jim2])
    assert found["Frannie"] == str(fran.id)
    assert found["Uncle Jim"] == str(jim1.id)
    assert "Jim" not in found  # two known Jims: left to the resolver


def test_relationship_type_words_are_already_word_keys():
    from heirloom.domain.described import _KIND_WORDS, _stem

    assert all(_stem(w) == w for words in _KIND_WORDS.values() for w in words)
