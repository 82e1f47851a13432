"""Names a legacy has established (decision 0040): which names a story gives, where another
story writes them, and which changes of a story's names re-link the others."""

from heirloom.contracts.extraction import ExtractedEntities, ExtractedObject, NamedThing
from heirloom.domain import named_things

BISCUIT = NamedThing(name="Biscuit", type="animal")
DANNY_BOY = NamedThing(name="Danny Boy", type="work")


def _objects(*things: tuple[str, str]) -> ExtractedEntities:
    return ExtractedEntities(
        objects=tuple(ExtractedObject(name=n, type=t, confidence=0.8) for n, t in things)
    )


def test_a_story_establishes_the_animals_and_works_it_names_not_other_things() -> None:
    entities = _objects(
        ("Biscuit", "animal"), ("Danny Boy", "work"), ("the piano", "instrument"), ("rex", "animal")
    )
    assert named_things.established(entities) == (BISCUIT, DANNY_BOY)


def test_a_name_is_recalled_where_the_text_writes_it_whole_with_its_case() -> None:
    others = (BISCUIT, DANNY_BOY)
    found, unresolved = named_things.recall(
        ExtractedEntities(), "Biscuit was sick all week.", others, {}, ["Biscuit", "Odile"]
    )
    assert [(o.name, o.type) for o in found.objects] == [("Biscuit", "animal")]
    assert unresolved == ["Odile"]  # the animal's name is no unknown person
    for text in (
        "We ate biscuits with tea.",
        "Ginger-Biscuit the pony",
        "BISCUIT",
        "Danny Boyle directed it.",
    ):
        assert named_things.recall(ExtractedEntities(), text, others, {}, [])[0].objects == ()


def test_a_name_the_story_writes_as_a_known_person_or_already_has_is_not_recalled() -> None:
    text = "Biscuit said grace and Danny Boy was sung."
    found, _ = named_things.recall(
        _objects(("Danny Boy", "work")), text, (BISCUIT, DANNY_BOY), {"Biscuit": "p1"}, []
    )
    assert [o.name for o in found.objects] == ["Danny Boy"]


def test_only_a_name_no_other_story_establishes_changes_the_legacy() -> None:
    assert named_things.changed((), (BISCUIT,), ()) == (BISCUIT,)
    assert named_things.changed((BISCUIT,), (), ()) == (BISCUIT,)
    assert named_things.changed((), (BISCUIT,), (BISCUIT,)) == ()  # another story already says it
    assert named_things.changed((BISCUIT,), (BISCUIT, DANNY_BOY), ()) == (DANNY_BOY,)
