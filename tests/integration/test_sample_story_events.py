"""events/story_events/: one delivery of each detail type, through `heirloom invoke story_events
-e FILE` in the order a producer sends them, against the sample legacy (a stack of its own: the
sequence starts from the loaded legacy alone)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.test_sample_events import EVENTS, invoke, loaded_stack

#: events/story_events/: one delivery of each detail type, in the order a producer sends them
STORY_EVENT_ORDER = [
    "legacy_created",
    "person_created",
    "user_created",
    "relationship_added",
    "relationship_updated",
    "member_added",
    "link_created",
    "link_updated",
    "story_created",
    "story_updated",
    "member_removed",
    "relationship_removed",
    "link_removed",
    "story_deleted",
]


@pytest.fixture(scope="module")
def stack() -> Iterator[str]:
    yield from loaded_stack("none")


def test_the_story_event_samples_run_in_order_through_heirloom_invoke(stack, capsys):
    assert sorted(STORY_EVENT_ORDER) == sorted(p.stem for p in (EVENTS / "story_events").glob("*.json"))
    changes = [
        invoke("story_events", EVENTS / "story_events" / f"{name}.json", capsys)["change"]
        for name in STORY_EVENT_ORDER
    ]
    assert changes == ["created", "created", "created", "created", "updated", "created", "created", "updated",
                       "created", "updated", "deleted", "deleted", "updated", "deleted"]  # fmt: skip
