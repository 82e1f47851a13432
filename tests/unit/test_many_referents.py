"""Decision 0041: a wedding or a funeral named by its head alone is its story's own event, never
one node with another story's; a question cannot name it; curation suggests no merge of two."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from uuid import UUID

import pytest

from heirloom.contracts.curation import EntityRef
from heirloom.contracts.extraction import ExtractedEntities, ExtractedEvent
from heirloom.contracts.records import Story, Visibility
from heirloom.domain.entity_sync import entity_id, plan_story_entities
from heirloom.domain.intent_step import entity_entries
from heirloom.domain.merge_suggestions import EntityInfo, suggest
from heirloom.domain.names import one_of_many

LEGACY = UUID(int=1)
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def story(n: int) -> Story:
    return Story(
        id=UUID(int=n), legacy_id=LEGACY, author_user_id=UUID(int=9), title="A story", content="text",
        visibility=Visibility.PUBLIC, created_at=T0, updated_at=T0,
    )  # fmt: skip


def event_ids(n: int, *names: str) -> dict[str, str]:
    events = tuple(ExtractedEvent(name=name, type="wedding", confidence=0.9) for name in names)
    plan = plan_story_entities(story(n), ExtractedEntities(events=events), {}, [])
    return {row["name"]: row["id"] for row in plan.by_label["Event"]}


@pytest.mark.parametrize(
    ("label", "name", "many"),
    [
        ("Event", "wedding", True),
        ("Event", "the Funeral", True),
        ("Event", "wake", True),
        ("Event", "Okerlund wedding", False),
        ("Event", "wedding in 1952", False),
        ("Event", "Dom's wedding", False),
        ("Event", "flood", False),  # a town's one flood
        ("Object", "wedding", False),
    ],
)
def test_one_of_many_is_a_bare_wedding_or_funeral_event(label: str, name: str, many: bool) -> None:
    assert one_of_many(label, name) is many


def test_two_stories_weddings_are_two_events_their_named_ones_one() -> None:
    first = event_ids(1, "wedding", "Okerlund wedding", "flood")
    second = event_ids(2, "the wedding", "Okerlund wedding", "flood")
    assert first["wedding"] != second["the wedding"]
    assert first["Okerlund wedding"] == second["Okerlund wedding"]
    assert first["flood"] == second["flood"]
    assert event_ids(1, "Wedding") == {"Wedding": first["wedding"]}  # the same story: one node


def test_a_merge_recorded_against_the_shared_wedding_still_applies() -> None:
    """An admin merged the one "wedding" node of before into "Dom's wedding": kept."""
    shared = entity_id(str(LEGACY), "Event", "wedding")
    events = (ExtractedEvent(name="the wedding", type="wedding", confidence=0.9),)
    plan = plan_story_entities(story(1), ExtractedEntities(events=events), {}, [], {shared: "doms-wedding"})
    assert [row["id"] for row in plan.redirected["Event"]] == ["doms-wedding"]
    assert plan.by_label["Event"] == []


def test_a_question_cannot_name_a_storys_own_wedding() -> None:
    rows = [
        {"id": "e1", "label": "Event", "name": "wedding", "legacy": "L"},
        {"id": "e2", "label": "Event", "name": "Okerlund wedding", "legacy": "L"},
        {"id": "e2", "label": "Event", "name": "the wedding", "alias": True, "legacy": "L"},
        {"id": "o1", "label": "Object", "name": "wedding", "legacy": "L"},
    ]
    entries = {(e.node_id, e.name, e.aliases) for e in entity_entries(rows)}
    assert entries == {("e2", "Okerlund wedding", ()), ("o1", "wedding", ())}


def info(name: str, story_id: int) -> EntityInfo:
    ref = EntityRef(id=str(uuid.uuid5(LEGACY, f"{story_id}{name}")), label="Event", name=name, aliases=())
    return EntityInfo(ref=ref, stories=frozenset({str(UUID(int=story_id))}))


def test_curation_suggests_no_merge_of_two_storys_weddings() -> None:
    ours, theirs, doms = info("wedding", 1), info("the wedding", 2), info("Dom's wedding", 3)
    found = suggest([ours, theirs, doms], legacy_id=LEGACY, readable=lambda s: True, kept_apart=set())
    pairs = {frozenset((s.a.name, s.b.name)) for s in found}
    assert frozenset(("wedding", "the wedding")) not in pairs
    assert frozenset(("Dom's wedding", "wedding")) in pairs  # which wedding it was: a person decides
