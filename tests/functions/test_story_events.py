"""StoryEvents handler on the embedded engines: every sample event, duplicates, reordering,
deletes racing updates, and bad events that leave stored data unchanged."""

import json
from dataclasses import replace
from pathlib import Path
from uuid import UUID

import pytest

from heirloom.errors import InvalidRequest, NotFound
from heirloom.steps.chunk_embed import chunk_embed_step
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.integration.test_sample_story_events import STORY_EVENT_ORDER
from tests.support.sample import real_extractor
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events" / "story_events"
SAMPLE = ROOT / "examples" / "sample-legacy"


def sample(name, **detail_changes):
    event = json.loads((EVENTS / f"{name}.json").read_text())
    event["detail"].update(detail_changes)
    return event


def story_id():
    return sample("story_created")["detail"]["story"]["id"]


def test_every_sample_event_applies_in_order(send, ports):
    changes = [send(sample(name)) for name in STORY_EVENT_ORDER]
    assert changes == ["created", "created", "created", "created", "created", "created", "updated", "created",
                       "updated", "deleted", "deleted"]  # fmt: skip
    assert ports.stories.get_story(story_id()) is None


def test_duplicates_change_nothing(send, ports):
    assert send(sample("story_created")) == "created"
    chunks = ports.vectors.chunks_of(story_id())
    assert send(sample("story_created")) == "unchanged"
    assert ports.vectors.chunks_of(story_id()) == chunks


def test_an_older_update_never_overwrites_a_newer_one(send, ports):
    send(sample("story_created"))
    send(sample("story_updated"))
    newer = ports.stories.get_story(story_id())
    assert send(sample("story_created")) == "skipped"  # the older version, delivered late
    assert ports.stories.get_story(story_id()) == newer
    assert "grace in Italian" in ports.vectors.chunks_of(story_id())[-1].text


def test_a_late_update_does_not_revive_a_deleted_story(send, ports):
    send(sample("story_created"))
    send(sample("story_deleted"))
    assert send(sample("story_updated")) == "skipped"
    assert ports.stories.get_story(story_id()) is None and ports.vectors.chunks_of(story_id()) == []
    assert ports.graph.run("MATCH (s:Story {id: $id}) RETURN s", {"id": story_id()}) == []


# a delete older than the stored version: tests/functions/test_access_ordering.py (deletes are final)


@pytest.mark.parametrize(
    "mutate,error,reason",
    [
        (lambda e: e.update({"detail-type": "Story Exploded"}), InvalidRequest, "unknown detail-type"),
        (lambda e: e.update({"source": "someone.else"}), InvalidRequest, "source"),
        (lambda e: e["detail"]["story"].pop("title"), InvalidRequest, "story.title"),
        (lambda e: e["detail"]["story"].update(visibility="secret"), InvalidRequest, "visibility"),
        (lambda e: e["detail"].update(schema_version="9"), InvalidRequest, "schema_version"),
        (
            lambda e: e["detail"]["story"].update(legacy_id="00000000-0000-4000-8000-00000000dead"),
            NotFound,
            "legacy",
        ),
        (lambda e: e.pop("detail"), InvalidRequest, "detail"),
    ],
)
def test_bad_events_are_refused_and_store_nothing(send, ports, mutate, error, reason):
    before = ports.stories.counts()
    event = sample("story_created")
    mutate(event)
    with pytest.raises(error, match=reason):
        send(event)
    assert ports.stories.counts() == before


def test_with_an_ingestion_workflow_content_is_handed_over_not_processed_inline(ports):
    load_dataset(ports, SAMPLE)
    started = []
    services = services_with(ingestion=ports, start_ingestion=started.append)
    handler = load_handler("story_events")
    out = handler(sample("story_created"), LambdaContext("StoryEvents"), services=services)
    assert out["change"] == "created" and [str(s) for s in started] == [story_id()]
    assert ports.stories.get_story(story_id()) is not None and ports.vectors.chunks_of(story_id()) == []
    handler(sample("story_created"), LambdaContext("StoryEvents"), services=services)
    assert len(started) == 2  # the story is still behind: a redelivery hands it over again
    chunk_embed_step(ports, UUID(story_id()))  # the workflow ran
    handler(sample("story_created"), LambdaContext("StoryEvents"), services=services)
    assert len(started) == 2  # a duplicate of a processed story starts nothing


def test_a_delete_delivered_before_its_create_keeps_the_story_deleted(send, ports):
    send(sample("story_deleted"))  # EventBridge delivered the delete first
    assert send(sample("story_created")) == "skipped"
    assert send(sample("story_updated")) == "skipped"
    assert ports.stories.get_story(story_id()) is None and ports.vectors.chunks_of(story_id()) == []
    assert ports.graph.run("MATCH (s:Story {id: $id}) RETURN s", {"id": story_id()}) == []


def at(event, when):
    """The event as emitted at `when` (the envelope's time)."""
    event["time"] = when
    return event


MEMBER = sample("member_added")["detail"]["member"]


def test_a_late_member_added_never_restores_a_removed_member(send, ports):
    send(sample("legacy_created"))
    send(sample("user_created"))
    added = at(sample("member_added"), "2019-11-03T18:30:05Z")
    removed = at(sample("member_removed"), "2019-11-04T09:00:00Z")
    assert send(added) == "created" and send(removed) == "deleted"
    assert send(added) == "skipped"  # the older event, redelivered late
    assert ports.stories.role_of(UUID(MEMBER["user_id"]), UUID(MEMBER["legacy_id"])) is None
    later = at(sample("member_added"), "2019-11-05T09:00:00Z")  # a real re-invitation
    assert send(later) == "created"
    assert ports.stories.role_of(UUID(MEMBER["user_id"]), UUID(MEMBER["legacy_id"])) is not None


def test_a_removal_delivered_before_its_add_keeps_the_member_out(send, ports):
    send(sample("legacy_created"))
    send(sample("user_created"))
    send(at(sample("member_removed"), "2019-11-04T09:00:00Z"))
    assert send(at(sample("member_added"), "2019-11-03T18:30:05Z")) == "skipped"
    assert ports.stories.role_of(UUID(MEMBER["user_id"]), UUID(MEMBER["legacy_id"])) is None


def test_a_late_link_event_never_undoes_a_newer_status(send, ports):
    send(sample("legacy_created"))
    created = at(sample("link_created"), "2019-11-03T18:30:05Z")  # pending
    active = at(sample("link_updated"), "2019-11-04T09:00:00Z")
    revoked = at(sample("link_updated"), "2019-11-05T09:00:00Z")
    revoked["detail"]["link"]["status"] = "revoked"
    for event in (created, active, revoked, active, created):  # the last two: late duplicates
        send(event)
    (link,) = [x for x in ports.stories.links_of(UUID(MEMBER["legacy_id"]))]
    assert link.status.value == "revoked"
    edge = ports.graph.run("MATCH (:Legacy)-[r:LINKED_TO]->(:Legacy) WHERE r.link_id = $id RETURN r.status AS s",
                           {"id": str(link.id)})  # fmt: skip
    assert edge == [{"s": "revoked"}]


def _mentions(ports, sid):
    rows = ports.graph.run("MATCH (:Story {id: $id})-[:MENTIONS]->(p:Person) RETURN p.id AS id", {"id": sid})
    return {r["id"] for r in rows}


NEW_PERSON = "7e3a4c2b-1d0f-4e8a-9b6c-5a4d3e2f1a0b"


@pytest.fixture
def extracting(ports):
    """`send` over ports with the real local extractor (re-linking needs one)."""
    ports = replace(ports, extractor=real_extractor(), extractor_version=real_extractor().version)
    load_dataset(ports, SAMPLE)
    handler = load_handler("story_events")
    services = services_with(ingestion=ports)

    def deliver(event):
        return handler(event, LambdaContext("StoryEvents"), services=services)["change"]

    return deliver, ports


def test_a_person_added_after_the_story_that_names_them_is_linked_to_it(extracting):
    send, ports = extracting
    story = sample("story_created")
    story["detail"]["story"]["content"] = "Tavi came every Sunday with bread from the bakery on Vine Street."
    send(story)
    sid = story["detail"]["story"]["id"]
    assert NEW_PERSON not in _mentions(ports, sid)
    chunks = ports.vectors.chunks_of(sid)
    person = sample("person_created")
    person["detail"]["person"] |= {
        "id": NEW_PERSON,
        "legacy_id": story["detail"]["story"]["legacy_id"],
        "name": "Ottavio Bruni",
        "aliases": ["Tavi"],
    }
    assert send(person) == "created"
    assert NEW_PERSON in _mentions(ports, sid)  # re-linked ...
    assert ports.vectors.chunks_of(sid) == chunks  # ... without re-embedding
    assert send(person) == "unchanged"  # a duplicate re-links nothing and changes nothing
    assert NEW_PERSON in _mentions(ports, sid)


def test_a_relationship_added_later_resolves_the_narrators_kin_words(extracting):
    send, ports = extracting
    story = sample("story_created")
    story["detail"]["story"]["content"] = "My brother fixed the porch roof the summer before the flood."
    send(story)
    sid = story["detail"]["story"]["id"]
    person = sample("person_created")
    person["detail"]["person"] |= {
        "id": NEW_PERSON,
        "legacy_id": story["detail"]["story"]["legacy_id"],
        "name": "Nico Kline",
        "aliases": [],
    }
    send(person)
    assert NEW_PERSON not in _mentions(ports, sid)  # "my brother" names no one yet
    author = ports.stories.get_user(UUID(story["detail"]["story"]["author_user_id"]))
    rel = sample("relationship_added")
    rel["detail"]["relationship"] = {
        "from_person_id": str(author.person_id),
        "to_person_id": NEW_PERSON,
        "type": "FAMILY_OF",
        "detail": "brother",
    }
    assert send(rel) == "created"
    assert NEW_PERSON in _mentions(ports, sid)


def test_with_an_ingestion_workflow_relinking_is_handed_over(extracting):
    _, ports = extracting
    started = []
    services = services_with(ingestion=ports, start_ingestion=started.append)
    handler = load_handler("story_events")
    story = sample("story_created")
    story["detail"]["story"]["content"] = "Tavi came every Sunday."
    handler(story, LambdaContext("StoryEvents"), services=services)
    chunk_embed_step(ports, UUID(story_id()))
    started.clear()
    person = sample("person_created")
    person["detail"]["person"] |= {
        "id": NEW_PERSON,
        "legacy_id": story["detail"]["story"]["legacy_id"],
        "name": "Ottavio Bruni",
        "aliases": ["Tavi"],
    }
    handler(person, LambdaContext("StoryEvents"), services=services)
    assert [str(s) for s in started] == [story_id()]
    assert ports.stories.graph_synced(UUID(story_id())) is None  # the workflow will rebuild it
