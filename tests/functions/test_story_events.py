"""StoryEvents handler on the embedded engines: every sample event, duplicates, reordering,
deletes racing updates, and bad events that leave stored data unchanged."""

import json
from copy import deepcopy
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from heirloom.contracts.ingestion import GraphSyncInput
from heirloom.contracts.records import Story
from heirloom.domain import ingestion, story_graph
from heirloom.errors import InvalidRequest, NotFound
from heirloom.steps.chunk_embed import chunk_embed_step
from heirloom.steps.extract_entities import extract_step
from heirloom.steps.graph_sync import graph_sync_step
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.integration.test_sample_story_events import STORY_EVENT_ORDER
from tests.support.sample import real_extractor
from tests.support.services import services_with

#: a version later than any the sample holds (a timestamp from the future is refused)
LATER = datetime.now(UTC).replace(microsecond=0).isoformat()

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
    assert changes == ["created", "created", "created", "created", "updated", "created", "created", "updated",
                       "created", "updated", "deleted", "deleted", "updated", "deleted"]  # fmt: skip
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
        # a time from the future would make every real change after it look older (skipped)
        (lambda e: e["detail"]["story"].update(updated_at="9024-05-01T00:00:00Z"), InvalidRequest, "future"),
        (lambda e: e.update(time="9024-05-01T00:00:00Z"), InvalidRequest, "time.*future"),
        # read back as a BC date, which psycopg cannot read
        (
            lambda e: e["detail"]["story"].update(created_at="0001-01-01T00:00:00+14:00"),
            InvalidRequest,
            "1000",
        ),
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
    assert edge == []  # a revoked link joins nothing: no LINKED_TO edge


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


def _places(ports, sid):
    rows = ports.graph.run("MATCH (:Story {id: $id})-->(x:Place) RETURN x.name AS name", {"id": sid})
    return {r["name"] for r in rows}


def _unresolved(ports, sid):
    """The people the story names that no person of its legacy is (one display string)."""
    return ports.graph.run("MATCH (s:Story {id: $id}) RETURN s.unresolved_people AS u", {"id": sid})[0]["u"]


def test_a_linked_legacys_person_is_a_person_in_its_stories_while_the_link_is_active(extracting):
    """Virginia's record is in Rosa's legacy and a story of Dominic's legacy names her: the model
    reads her as a place until a link makes Rosa's legacy's names known to extraction. Her record
    arriving, the link made and the link removed each re-link the story."""
    send, ports = extracting
    send(sample("legacy_created"))
    story = sample("story_created")
    story["detail"]["story"]["content"] = "Virginia came down from Dayton every spring with a pie for Dom."
    send(story)
    sid = story["detail"]["story"]["id"]
    person = sample("person_created")
    person["detail"]["person"] |= {"id": NEW_PERSON, "name": "Virginia Ferraro", "aliases": []}
    assert send(person) == "created"
    assert "Virginia" in _places(ports, sid)  # no link: Rosa's legacy's names are not read
    link = sample("link_created")
    link["detail"]["link"]["status"] = "active"
    assert send(link) == "created"
    assert "Virginia" not in _places(ports, sid)
    assert "Virginia" in _unresolved(ports, sid)  # a person, resolved within the story's legacy only
    assert send(sample("link_removed")) == "updated"  # kept, revoked
    assert "Virginia" in _places(ports, sid)


def _virginia_named_across_a_link(extracting, monkeypatch):
    """Virginia's record in Rosa's legacy, a story of Dominic's naming her, and a list that
    records the story ids of each re-linking from here on."""
    send, ports = extracting
    send(sample("legacy_created"))
    person = sample("person_created")
    person["detail"]["person"] |= {"id": NEW_PERSON, "name": "Virginia Ferraro", "aliases": []}
    send(person)
    story = sample("story_created")
    story["detail"]["story"]["content"] = "Virginia came down from Dayton every spring with a pie for Dom."
    send(story)
    relinked: list[set[str]] = []
    relink = story_graph.relink

    def recording(ports, stories, start_ingestion=None):
        ids = relink(ports, stories, start_ingestion)
        relinked.append({str(i) for i in ids})
        return ids

    monkeypatch.setattr(story_graph, "relink", recording)
    return send, ports, story["detail"]["story"]["id"], relinked


def test_a_pending_link_re_links_nothing_until_it_is_accepted(extracting, monkeypatch):
    send, ports, sid, relinked = _virginia_named_across_a_link(extracting, monkeypatch)
    assert send(sample("link_created")) == "created"  # pending: nothing the extraction reads
    assert relinked == [] and "Virginia" in _places(ports, sid)
    assert send(sample("link_updated")) == "updated"  # accepted: the story names Rosa's Virginia
    assert len(relinked) == 1 and sid in relinked[0]
    assert "Virginia" not in _places(ports, sid)


def test_only_a_link_starting_or_ending_active_re_links(extracting, monkeypatch):
    """What is shared through an active link changes no extraction: re-extracting every story
    that names someone across it would be work for nothing."""
    send, ports, sid, relinked = _virginia_named_across_a_link(extracting, monkeypatch)
    accepted = sample("link_updated")
    assert send(accepted) == "created"  # its first event: active at once
    assert len(relinked) == 1 and sid in relinked[0]
    shared = sample("link_updated")
    shared["time"] = "2019-11-03T20:00:00Z"
    shared["detail"]["link"] |= {"share_mode": "selective", "shared_story_ids": [sid]}
    assert send(shared) == "updated"
    assert len(relinked) == 1  # still active between the same legacies
    assert send(sample("link_removed")) == "updated"
    assert len(relinked) == 2 and sid in relinked[1]
    assert "Virginia" in _places(ports, sid)


def test_a_person_added_across_an_active_link_re_links_the_stories_naming_them(extracting):
    send, ports = extracting
    send(sample("legacy_created"))
    link = sample("link_created")
    link["detail"]["link"]["status"] = "active"
    send(link)
    story = sample("story_created")
    story["detail"]["story"]["content"] = "Virginia came down from Dayton every spring with a pie for Dom."
    send(story)
    sid = story["detail"]["story"]["id"]
    assert "Virginia" in _places(ports, sid)
    person = sample("person_created")
    person["detail"]["person"] |= {"id": NEW_PERSON, "name": "Virginia Ferraro", "aliases": []}
    send(person)
    assert "Virginia" not in _places(ports, sid)
    assert "Virginia" in _unresolved(ports, sid)  # a person, resolved within the story's legacy only


@pytest.mark.parametrize(
    ("content", "name", "detail"),
    [
        ("My brother fixed the porch roof the summer before the flood.", "Nico Kline", "brother"),
        # a kin word of another language, as "my grandmother" would be
        ("Every Easter minha avó baked sweet bread in the wood oven.", "Lurdes Kline", "grandmother"),
    ],
)
def test_a_relationship_added_later_resolves_the_narrators_kin_words(extracting, content, name, detail):
    send, ports = extracting
    story = sample("story_created")
    story["detail"]["story"]["content"] = content
    send(story)
    sid = story["detail"]["story"]["id"]
    person = sample("person_created")
    person["detail"]["person"] |= {
        "id": NEW_PERSON,
        "legacy_id": story["detail"]["story"]["legacy_id"],
        "name": name,
        "aliases": [],
    }
    send(person)
    assert NEW_PERSON not in _mentions(ports, sid)  # the kin word names no one yet
    author = ports.stories.get_user(UUID(story["detail"]["story"]["author_user_id"]))
    rel = sample("relationship_added")
    rel["detail"]["relationship"] = {
        "from_person_id": str(author.person_id),
        "to_person_id": NEW_PERSON,
        "type": "FAMILY_OF",
        "detail": detail,
    }
    assert send(rel) == "created"
    assert NEW_PERSON in _mentions(ports, sid)


TONY_BROTHER = "0b5c7d9e-2f4a-4c6b-8d1e-3a5f7b9c1d2e"


@pytest.mark.parametrize(("speaker", "brother"), [("Tony", TONY_BROTHER), ("Tess", NEW_PERSON)])
def test_a_kin_word_in_a_transcript_turn_is_the_speakers(extracting, speaker, brother):
    send, ports = extracting
    story = sample("story_created")  # by Tess, the author; Tony is a known person
    story["detail"]["story"]["content"] = (
        f"Carol: Who fixed the porch roof?\n\n{speaker}: My brother fixed it the summer before the flood."
    )
    send(story)
    legacy, author = story["detail"]["story"]["legacy_id"], story["detail"]["story"]["author_user_id"]
    tess = str(ports.stories.get_user(UUID(author)).person_id)
    for pid, name, of in ((NEW_PERSON, "Nico Kline", tess), (TONY_BROTHER, "Ottavio Ferraro", TONY_PERSON)):
        person = sample("person_created")
        person["detail"]["person"] |= {"id": pid, "legacy_id": legacy, "name": name, "aliases": []}
        send(person)
        rel = sample("relationship_added")
        rel["detail"]["relationship"] = {
            "from_person_id": of,
            "to_person_id": pid,
            "type": "FAMILY_OF",
            "detail": "brother",
        }
        send(rel)
    mentioned = _mentions(ports, story["detail"]["story"]["id"]) & {NEW_PERSON, TONY_BROTHER}
    assert mentioned == {brother}  # the speaker's brother, never the author's for another speaker


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


def _edges_between(ports, a, b):
    rows = ports.graph.run(
        "MATCH (:Person {id: $a})-[r]->(:Person {id: $b}) RETURN r.kind AS kind, r.detail AS detail",
        {"a": a, "b": b},
    )
    return sorted((r["kind"], r["detail"]) for r in rows)


def test_a_relationship_whose_type_changes_replaces_its_edge(send, ports):
    for name in ("legacy_created", "person_created", "relationship_added"):
        send(sample(name))
    rel = sample("relationship_added")["detail"]["relationship"]
    a, b = rel["from_person_id"], rel["to_person_id"]
    assert ("KNEW", "") in _edges_between(ports, a, b)
    assert send(sample("relationship_updated")) == "updated"
    assert send(sample("relationship_updated")) == "unchanged"  # a duplicate
    edges = _edges_between(ports, a, b)
    assert ("FRIENDS_WITH", "met at the cannery") in edges and not any(k == "KNEW" for k, _ in edges)
    kinds = {r.type.value for r in ports.stories.relationships_of([UUID(a)]) if str(r.to_person_id) == b}
    assert kinds == {"FRIENDS_WITH"}
    assert send(sample("relationship_removed")) == "deleted"
    assert _edges_between(ports, a, b) == [] and not ports.stories.relationships_of([UUID(a)])
    assert send(sample("relationship_removed")) == "unchanged"


def test_a_relationship_update_naming_an_unknown_person_is_refused_and_changes_nothing(send, ports):
    for name in ("legacy_created", "person_created", "relationship_added"):
        send(sample(name))
    bad = sample("relationship_updated")
    bad["detail"]["relationship"]["to_person_id"] = NEW_PERSON
    with pytest.raises(NotFound):
        send(bad)
    rel = sample("relationship_added")["detail"]["relationship"]
    assert ("KNEW", "") in _edges_between(ports, rel["from_person_id"], rel["to_person_id"])


def test_a_removed_relationship_unlinks_the_narrators_kin_words_without_re_embedding(extracting):
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
    author = ports.stories.get_user(UUID(story["detail"]["story"]["author_user_id"]))
    pair = {"from_person_id": str(author.person_id), "to_person_id": NEW_PERSON}
    added = sample("relationship_added")
    added["detail"]["relationship"] = {**pair, "type": "FAMILY_OF", "detail": "brother"}
    send(added)
    assert NEW_PERSON in _mentions(ports, sid)
    chunks = ports.vectors.chunks_of(sid)
    removed = sample("relationship_removed")
    removed["detail"] |= {**pair, "type": "FAMILY_OF"}
    assert send(removed) == "deleted"
    assert NEW_PERSON not in _mentions(ports, sid)  # re-linked ...
    assert ports.vectors.chunks_of(sid) == chunks  # ... without re-embedding


TONY_USER, TONY_PERSON = "f9f73f65-a2af-4fbd-ae39-c336dfc8126b", "9e58660f-0bc3-4b97-afdb-830a8e2f6df0"


def _remembers(ports, person_id):
    rows = ports.graph.run(
        "MATCH (:Person {id: $id})-[r:REMEMBERS]->(s:Person)"
        " RETURN s.id AS subject, r.legacy_id AS legacy, r.role AS role, r.kind AS kind",
        {"id": person_id},
    )
    return sorted((r["subject"], r["legacy"], r["role"], r["kind"]) for r in rows)


def test_a_member_remembers_the_subject_until_removed(send, ports):
    loaded = _remembers(ports, TONY_PERSON)  # written by the sample legacy's load
    dominic = (
        "5fc816f8-511e-4903-ac59-9661f0b7e055",
        "f8156de7-80fc-4f32-a0b0-5596b12c22c1",
        "creator",
        "REMEMBERS",
    )
    assert dominic in loaded
    send(sample("legacy_created"))
    send(sample("person_created"))
    member = sample("member_added")
    member["detail"]["member"] |= {"user_id": TONY_USER, "role": "admirer"}
    assert send(member) == "created"
    rosa = ("2a7c9e1b-3d5f-4a6b-8c9d-0e1f2a3b4c5d", MEMBER["legacy_id"], "admirer", "REMEMBERS")
    assert _remembers(ports, TONY_PERSON) == sorted([*loaded, rosa])
    removed = at(sample("member_removed"), "2019-11-04T09:00:00Z")
    removed["detail"]["user_id"] = TONY_USER
    assert send(removed) == "deleted"
    assert _remembers(ports, TONY_PERSON) == loaded
    assert send(member) == "skipped"  # the late add re-admits no one and writes no edge
    assert _remembers(ports, TONY_PERSON) == loaded


def test_a_removed_link_leaves_no_edge_and_stays_removed(send, ports):
    for name in ("legacy_created", "link_created", "link_updated"):
        send(sample(name))
    link_id = sample("link_updated")["detail"]["link"]["id"]
    query = "MATCH (:Legacy)-[r:LINKED_TO]->(:Legacy) WHERE r.link_id = $id RETURN r.status AS s"
    assert ports.graph.run(query, {"id": link_id}) == [{"s": "active"}]
    assert send(sample("link_removed")) == "updated"
    assert ports.graph.run(query, {"id": link_id}) == []
    (link,) = [x for x in ports.stories.links_of(UUID(MEMBER["legacy_id"])) if str(x.id) == link_id]
    assert (link.status.value, link.shared_story_ids) == ("revoked", ())
    assert send(sample("link_updated")) == "skipped"  # delivered late: the link stays removed
    assert ports.graph.run(query, {"id": link_id}) == []


DOMINIC = "5fc816f8-511e-4903-ac59-9661f0b7e055"


def test_an_update_of_the_title_alone_re_extracts_the_story(extracting):
    """A story_updated event whose only change is the title re-extracts the story (decision
    0029): the person the new title names by an alias is mentioned `in_title`; a redelivery
    extracts nothing again."""
    send, ports = extracting
    created = sample("story_created")
    sid = created["detail"]["story"]["id"]
    assert send(created) == "created"
    updated = sample("story_updated")
    updated["detail"]["story"] |= {
        "content": created["detail"]["story"]["content"],
        "title": "Uncle Dom and the roast",
    }
    assert DOMINIC not in _mentions(ports, sid) or not _in_title(ports, sid, DOMINIC)
    assert send(updated) == "updated"
    assert _in_title(ports, sid, DOMINIC) is True
    synced = ports.stories.graph_synced(UUID(sid))
    assert send(updated) == "unchanged" and ports.stories.graph_synced(UUID(sid)) == synced


def _in_title(ports, sid, person_id):
    rows = ports.graph.run(
        "MATCH (:Story {id: $id})-[r:MENTIONS]->(p:Person {id: $p}) RETURN r.in_title AS t",
        {"id": sid, "p": person_id},
    )
    return rows[0]["t"] if rows else None


CAT_STORY = "3c1d5e7f-9a2b-4c4d-8e6f-0a1b2c3d4e5f"


def _things(ports, sid):
    rows = ports.graph.run(
        "MATCH (:Story {id: $id})-[:REFERENCES]->(o:Object) RETURN o.name AS name, o.type AS type",
        {"id": sid},
    )
    return sorted((r["name"], r["type"]) for r in rows)


def _cat_story(content="When we moved to Wren Court our cat Biscuit came too, in a basket."):
    event = sample("story_created")
    event["detail"]["story"] |= {"id": CAT_STORY, "title": "Moving day", "content": content}
    return event


def test_a_name_another_story_gives_an_animal_links_the_stories_that_write_it_alone(extracting):
    """Decision 0040: "Biscuit" alone says nothing of what Biscuit is; once another story of the
    legacy calls Biscuit our cat, the earlier story is re-linked to the same animal (without
    re-embedding), a later one at its own sync, and the link goes when that story does."""
    send, ports = extracting
    alone = sample("story_created")
    alone["detail"]["story"]["content"] = "Biscuit hid in the boiler cupboard and we took the door off."
    send(alone)
    sid = alone["detail"]["story"]["id"]
    assert _things(ports, sid) == []
    chunks = ports.vectors.chunks_of(sid)
    assert send(_cat_story()) == "created"
    assert _things(ports, CAT_STORY) == [("Biscuit", "animal")]
    assert _things(ports, sid) == [("Biscuit", "animal")]  # re-linked ...
    assert ports.vectors.chunks_of(sid) == chunks  # ... without re-embedding
    deleted = sample("story_deleted")
    deleted["detail"]["story_id"] = CAT_STORY
    assert send(deleted) == "deleted"
    assert _things(ports, sid) == []  # no story says what Biscuit is any more


def test_a_later_story_writing_an_established_name_links_it_at_its_own_sync(extracting):
    send, ports = extracting
    send(_cat_story())
    later = sample("story_created")
    later["detail"]["story"]["content"] = "Biscuit was sick all week. Biscuits and tea did nothing for Mum."
    send(later)
    assert _things(ports, later["detail"]["story"]["id"]) == [("Biscuit", "animal")]
    edited = _cat_story("When we moved to Wren Court the neighbours brought a basket of biscuits.")
    edited["detail-type"] = "Story Updated"
    edited["detail"]["story"]["updated_at"] = LATER
    send(edited)  # the one story that said what Biscuit is no longer does
    assert _things(ports, later["detail"]["story"]["id"]) == []


LUCIA = "d9fae9ea-c655-4158-be31-0f7567d461b3"  # the sample's second legacy


def test_a_moved_story_takes_its_names_from_the_legacy_it_left_to_the_one_it_joins(extracting):
    """A story event may move a story: the legacy it left no longer links the name in the
    stories that write it alone, and the legacy it joins does, whichever came first."""
    send, ports = extracting
    here = sample("story_created")
    here["detail"]["story"]["content"] = "Biscuit hid in the boiler cupboard and we took the door off."
    there = sample("story_created")
    there["detail"]["story"] |= {"id": "7e2a9c41-5b3d-4f6e-8a1c-2d3e4f5a6b7c", "legacy_id": LUCIA,
                                 "content": "Biscuit slept all winter and would not go out."}  # fmt: skip
    for event in (here, there, _cat_story()):
        send(event)
    here_id, there_id = here["detail"]["story"]["id"], there["detail"]["story"]["id"]
    assert (_things(ports, here_id), _things(ports, there_id)) == ([("Biscuit", "animal")], [])
    chunks = ports.vectors.chunks_of(here_id)
    moved = _cat_story()
    moved["detail-type"] = "Story Updated"
    moved["detail"]["story"] |= {"legacy_id": LUCIA, "updated_at": LATER}
    assert send(moved) == "updated"
    assert _things(ports, CAT_STORY) == [("Biscuit", "animal")]
    assert _things(ports, here_id) == []  # re-linked without it ...
    assert ports.vectors.chunks_of(here_id) == chunks  # ... and without re-embedding
    assert _things(ports, there_id) == [("Biscuit", "animal")]


def test_a_personal_storys_name_is_not_linked_in_a_story_others_read(extracting):
    send, ports = extracting
    personal = _cat_story()
    personal["detail"]["story"]["visibility"] = "personal"
    send(personal)
    public = sample("story_created")
    public["detail"]["story"] |= {"content": "Biscuit was sick all week.", "visibility": "public"}
    send(public)
    assert _things(ports, CAT_STORY) == [("Biscuit", "animal")]
    assert _things(ports, public["detail"]["story"]["id"]) == []


def test_a_visibility_change_links_a_storys_names_again(extracting):
    """Found by an access audit: which established names a story may link depends on its
    visibility and theirs (decision 0040), but a change of visibility alone synced nothing. A
    private story kept the animal a private story named once it was made public; a public story
    made personal kept giving its name to stories others read."""
    send, ports = extracting

    def updated(event, visibility):
        later = deepcopy(event)
        later["detail-type"] = "Story Updated"
        later["detail"]["story"] |= {"visibility": visibility, "updated_at": LATER}
        return later

    source, story = _cat_story(), sample("story_created")
    story["detail"]["story"]["content"] = "Biscuit was sick all week."
    for event in (source, story):
        event["detail"]["story"]["visibility"] = "private"
        assert send(event) == "created"
    sid = story["detail"]["story"]["id"]
    assert _things(ports, sid) == [("Biscuit", "animal")]  # private to private: carried
    chunks = ports.vectors.chunks_of(sid)
    assert send(updated(story, "public")) == "updated"
    assert _things(ports, sid) == []  # a private story's name reaches no public one ...
    assert ports.vectors.chunks_of(sid) == chunks  # ... and nothing was embedded again
    assert send(updated(source, "public")) == "updated"
    assert _things(ports, sid) == [("Biscuit", "animal")]  # now everyone reads what Biscuit is


def test_with_an_ingestion_workflow_the_sync_hands_the_stories_writing_a_new_name_over(extracting):
    _, ports = extracting
    alone = sample("story_created")["detail"]["story"]
    ingestion.apply_story(ports, Story.model_validate(alone | {"content": "Biscuit slept on the piano."}))
    cat = Story.model_validate(_cat_story()["detail"]["story"])
    ingestion.apply_story(ports, cat, process=False)
    started: list[UUID] = []
    extraction = extract_step(ports, cat.id)
    result = graph_sync_step(ports, GraphSyncInput(story_id=cat.id, results=(extraction,)), started.append)
    assert result.status == "synced"
    assert started == [UUID(alone["id"])]
    assert ports.stories.graph_synced(UUID(alone["id"])) is None  # the workflow will rebuild it
