"""The story-gender pass of the gazetteer build (intent_step._with_story_genders) skips the
stories that cannot name a person the records give no gender, without tokenizing them; the
genders it finds are those of reading every public story."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heirloom.adapters.memory import MemoryStoryStore
from heirloom.contracts.records import Story, Visibility
from heirloom.domain.gazetteer import _keys, may_name, words_pattern
from heirloom.domain.intent import said_gender
from heirloom.domain.intent_step import build_gazetteer
from heirloom_dev.loader import read_dataset

EXAMPLES = Path(__file__).parents[2] / "examples"


def _load(name: str) -> tuple[MemoryStoryStore, list[Story]]:
    """The set's records as the loader reads them, into memory (no ingestion: only records)."""
    dataset = read_dataset(EXAMPLES / name)
    store = MemoryStoryStore()
    for item in dataset.legacies:
        store.upsert_legacy(item.record)
    for item in dataset.persons:
        store.upsert_person(item.record)
    for item in dataset.users:
        store.upsert_user(item.record)
    stories = [item.record for item in dataset.stories]
    for story in stories:
        store.upsert_story(story, "h")
    return store, stories


@pytest.mark.parametrize("name", ["sample-legacy", "conversations", "long-chats"])
def test_the_genders_are_those_every_public_story_gives(name: str) -> None:
    store, stories = _load(name)
    found = 0
    for legacy_id in dict.fromkeys(s.legacy_id for s in stories):
        built, _ = build_gazetteer(legacy_id, store, None)
        # the reference: the records' gazetteer, every public story read in full
        records, _ = build_gazetteer(legacy_id, _without_stories(store), None)
        genderless = {e.node_id for e in records.entries if e.label == "Person" and not e.gender}
        seen: dict[str, set[str]] = {}
        for story in store.stories_of(legacy_id):
            if story.visibility is Visibility.PUBLIC:
                said_gender(story.content, records.find(story.content), seen)
        said = {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}
        expected = {n: said.get(n) for n in genderless}
        assert {e.node_id: e.gender for e in built.entries if e.node_id in genderless} == expected
        found += sum(1 for g in expected.values() if g)
    assert found  # the set's stories give some of them a gender: the comparison has something to compare


def _without_stories(store: MemoryStoryStore) -> MemoryStoryStore:
    """The same records with no stories: the gazetteer before the story-gender pass."""
    bare = MemoryStoryStore()
    for legacy in store.legacies.values():
        bare.upsert_legacy(legacy)
    for person in store.persons_of(list(store.legacies)):
        bare.upsert_person(person)
    return bare


def test_a_story_that_cannot_name_them_is_skipped_and_one_that_may_is_not() -> None:
    pattern = words_pattern({"sue", "bell"})
    assert may_name("Sue’s kitchen was warm.", pattern)
    assert may_name("We rang Marcus BELL at noon.", pattern)
    assert not may_name("The issue with the belly of the boat.", pattern)
    assert may_name("The issue with Mémé's boat.", pattern)  # folding may move a word boundary
    assert not may_name("Anything at all.", words_pattern(set()))


@given(
    st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "Zs", "Mn", "So"]), max_size=60)
)
def test_a_word_a_text_holds_is_never_skipped(text: str) -> None:
    for key in _keys(text):
        assert may_name(text, words_pattern({key})), (text, key)
