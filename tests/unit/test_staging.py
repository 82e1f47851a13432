"""Staging's pure rules over the in-memory curation store: what an extraction may write while
its legacy has staging on (approved only, edits applied, relationships following an edited name,
dropped with a waiting or rejected target), and which decisions survive a new text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from heirloom.adapters.memory_curation import MemoryCurationStore
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
)
from heirloom.contracts.records import Story, Visibility
from heirloom.domain.staging import admit, check_edit, sentences_naming
from heirloom.errors import InvalidRequest

T = datetime(2024, 1, 1, tzinfo=UTC)
ENTITIES = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9),),
    places=(ExtractedPlace(name="mill", type="workplace", confidence=0.9),),
    events=(ExtractedEvent(name="flood", type="disaster", confidence=0.9),),
    objects=(ExtractedObject(name="fiddle", type="instrument", confidence=0.9),),
    relationships=(
        ExtractedRelationship(subject="Ada", predicate="WORKED_AT", object="mill", confidence=0.9),
        ExtractedRelationship(subject="Ada", predicate="OWNED", object="fiddle", confidence=0.9),
        ExtractedRelationship(subject="Ada", predicate="PARTICIPATED_IN", object="flood", confidence=0.9),
    ),
)


def story(content: str = "Ada worked at the mill. The flood came in spring! Her fiddle survived.") -> Story:
    return Story(
        id=uuid.UUID(int=5),
        legacy_id=uuid.UUID(int=1),
        author_user_id=uuid.UUID(int=2),
        title="t",
        content=content,
        visibility=Visibility.PUBLIC,
        created_at=T,
        updated_at=T,
    )


def decide(store: MemoryCurationStore, name: str, status: str, **edit: str) -> None:
    item = next(i for i in store.items.values() if i.name == name and i.status == "pending")
    store.decide(item.model_copy(update={"status": status, "decided_by": uuid.UUID(int=3), **edit}))


def test_nothing_staged_is_written_and_relationships_wait_with_their_target():
    store = MemoryCurationStore()
    admitted, pending = admit(store, story(), ENTITIES, "h1", "v1")
    assert pending == 3
    assert (admitted.places, admitted.events, admitted.objects, admitted.relationships) == ((), (), (), ())
    assert admitted.people == ENTITIES.people  # persons resolve to known records, not staged
    assert {i.name: i.sentences for i in store.items.values()} == {
        "mill": ("Ada worked at the mill.",),
        "flood": ("The flood came in spring!",),
        "fiddle": ("Her fiddle survived.",),
    }
    assert store.extraction(story().id) == ("h1", "v1", ENTITIES)


def test_approved_items_enter_edited_and_their_relationships_follow_the_new_name():
    store = MemoryCurationStore()
    admit(store, story(), ENTITIES, "h1", "v1")
    decide(store, "mill", "approved", final_name="Harlow mill", final_type="building")
    decide(store, "flood", "rejected")
    admitted, pending = admit(store, story(), ENTITIES, "h1", "v1")
    assert pending == 1
    assert [(p.name, p.type) for p in admitted.places] == [("Harlow mill", "building")]
    assert admitted.events == () and admitted.objects == ()
    assert [(r.predicate, r.object) for r in admitted.relationships] == [("WORKED_AT", "Harlow mill")]


def test_a_rejection_holds_for_the_same_text_an_approval_for_every_text():
    store = MemoryCurationStore()
    admit(store, story(), ENTITIES, "h1", "v1")
    decide(store, "mill", "approved")
    decide(store, "flood", "rejected")
    again, _ = admit(store, story(), ENTITIES, "h1", "v2")  # re-extracted, same text
    assert [e.name for e in again.places] == ["mill"] and again.events == ()
    changed, pending = admit(store, story("Ada left the mill before the flood."), ENTITIES, "h2", "v2")
    assert [e.name for e in changed.places] == ["mill"]  # approval carried over
    assert changed.events == () and pending == 2  # flood and fiddle wait again
    flood = [i for i in store.items.values() if i.name == "flood"]
    assert sorted(i.status for i in flood) == ["pending", "rejected"]
    fiddles = [i for i in store.items.values() if i.name == "fiddle"]
    assert [i.content_hash for i in fiddles] == ["h2"]  # the undecided one of h1 is superseded


@pytest.mark.parametrize(
    ("label_name", "edit"), [("mill", {"final_type": "spaceship"}), ("flood", {"final_type": "war "})]
)
def test_an_edit_outside_the_labels_types_is_refused(label_name, edit):
    store = MemoryCurationStore()
    admit(store, story(), ENTITIES, "h1", "v1")
    item = next(i for i in store.items.values() if i.name == label_name)
    with pytest.raises(InvalidRequest):
        check_edit(item.model_copy(update={"status": "approved", **edit}))
    check_edit(item.model_copy(update={"status": "approved", "final_name": "x"}))


def test_sentences_naming_folds_case_and_caps_the_count():
    text = "The Mill burned. We rebuilt the mill. A mill again? Mill number four."
    assert sentences_naming(text, "mill", limit=2) == ("The Mill burned.", "We rebuilt the mill.")
    assert sentences_naming(text, "barn") == ()
