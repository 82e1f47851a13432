"""Names a legacy has established (decision 0040): which names a story gives, where another
story writes them, and which changes of a story's names re-link the others."""

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from heirloom.contracts.access import StoryMeta
from heirloom.contracts.extraction import ExtractedEntities, ExtractedObject, NamedThing
from heirloom.contracts.records import Story, Visibility
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


def test_the_names_a_story_gave_or_stopped_giving_are_its_change() -> None:
    assert named_things.changed((), (BISCUIT,)) == (BISCUIT,)
    assert named_things.changed((BISCUIT,), ()) == (BISCUIT,)
    assert named_things.changed((BISCUIT,), (BISCUIT,)) == ()
    assert named_things.changed((BISCUIT,), (BISCUIT, DANNY_BOY)) == (DANNY_BOY,)


AUTHOR, OTHER = uuid4(), uuid4()
T = datetime(2024, 1, 1, tzinfo=UTC)


def _story(visibility: Visibility, author: UUID = AUTHOR) -> Story:
    return Story(id=uuid4(), legacy_id=uuid4(), author_user_id=author, title="T", content="Biscuit.",
                 visibility=visibility, created_at=T, updated_at=T)  # fmt: skip


def _meta(story: Story) -> StoryMeta:
    return StoryMeta(id=story.id, legacy_id=story.legacy_id, author_user_id=story.author_user_id,
                     visibility=story.visibility, title=story.title, updated_at=T, created_at=T)  # fmt: skip


@pytest.mark.parametrize(
    ("source", "target", "carried"),
    [
        (_story(Visibility.PUBLIC, OTHER), _story(Visibility.PUBLIC), True),
        (_story(Visibility.PUBLIC, OTHER), _story(Visibility.PERSONAL), True),
        (_story(Visibility.PRIVATE, OTHER), _story(Visibility.PRIVATE), True),
        (_story(Visibility.PRIVATE, OTHER), _story(Visibility.PUBLIC), False),
        (_story(Visibility.PRIVATE, OTHER), _story(Visibility.PERSONAL), False),
        (_story(Visibility.PRIVATE), _story(Visibility.PERSONAL), True),
        (_story(Visibility.PERSONAL), _story(Visibility.PERSONAL), True),
        (_story(Visibility.PERSONAL), _story(Visibility.PUBLIC), False),
        (_story(Visibility.PERSONAL, OTHER), _story(Visibility.PERSONAL), False),
    ],
)
def test_a_name_reaches_only_a_story_whose_readers_all_read_the_one_that_gave_it(
    source, target, carried
) -> None:
    assert named_things.carries(_meta(source), target) is carried
    found = named_things.others_of({source.id: (BISCUIT,)}, {source.id: _meta(source)}, target)
    assert found == ((BISCUIT,) if carried else ())
