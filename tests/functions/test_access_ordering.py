"""Access-changing records in the one order of heirloom.domain.ordering, whatever order the
story events arrive in: time, then the source's sequence, then the more restrictive state;
deletes final; `heirloom load` never gives back what an event took away. On the embedded
engines, through the StoryEvents handler and the loader."""

import json
import threading
from itertools import permutations
from pathlib import Path
from uuid import UUID

import pytest

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.domain.access_filter import scope_for
from heirloom.domain.ingestion import IngestionPorts
from heirloom.errors import AccessDenied
from heirloom.ports import EmbeddedChunk
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support.containers import run_until_waiting
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events" / "story_events"
SAMPLE = ROOT / "examples" / "sample-legacy"
T = "2019-11-04T09:00:00Z"


def sample(name, when=T, sequence=None):
    event = json.loads((EVENTS / f"{name}.json").read_text())
    event["time"] = when
    if sequence is not None:
        event["detail"]["sequence"] = sequence
    return event


def rows(name):
    return [json.loads(line) for line in (SAMPLE / f"{name}.jsonl").read_text().splitlines() if line.strip()]


LINK = sample("link_created")["detail"]["link"]
NEW_LEGACY = UUID(LINK["legacy_b_id"])  # the sample Legacy Created's
SAMPLE_LEGACY = UUID(LINK["legacy_a_id"])
NEW_CREATOR = UUID(sample("member_added")["detail"]["member"]["user_id"])
PRIVATE = next(
    s for s in rows("stories") if s["legacy_id"] == str(SAMPLE_LEGACY) and s["visibility"] == "private"
)


def link_event(kind, status, when=T, sequence=None, **link):
    event = sample("link_created" if kind == "created" else "link_updated", when, sequence)
    event["detail"]["link"].update(status=status, **link)
    return event


def reads_private_story(ports):
    """Does the creator of the new legacy read the sample legacy's private story across the link?"""
    scope = scope_for(ports.stories, NEW_CREATOR, NEW_LEGACY)
    (meta,) = ports.stories.story_meta([UUID(PRIVATE["id"])])
    return scope.allows(meta)


def graph_link_status(ports):
    rows_ = ports.graph.run(
        "MATCH (:Legacy)-[r:LINKED_TO]->(:Legacy) WHERE r.link_id = $id RETURN r.status AS s",
        {"id": LINK["id"]},
    )
    return [r["s"] for r in rows_]


def _setup_new_legacy(send):
    for name in ("legacy_created", "user_created"):
        send(sample(name))
    send(sample("member_added", "2019-11-03T18:30:05Z"))


def test_a_redelivered_link_created_never_undoes_a_revocation_of_the_same_second(send, ports):
    """Finding 1: Link Created (active, T), Link Updated (revoked, T), Link Created redelivered."""
    _setup_new_legacy(send)
    assert send(link_event("created", "active")) == "created"
    assert reads_private_story(ports)  # the creator of a linked legacy reads private stories
    assert send(link_event("updated", "revoked")) == "updated"
    assert send(link_event("created", "active")) == "unchanged"  # the redelivery
    assert not reads_private_story(ports)
    assert [x.status.value for x in ports.stories.links_of(NEW_LEGACY)] == ["revoked"]
    assert graph_link_status(ports) == []  # a revoked link has no edge


@pytest.mark.parametrize("order", list(permutations(range(3))))
def test_link_changes_of_one_second_end_at_the_most_restrictive_whatever_the_order(send, ports, order):
    _setup_new_legacy(send)
    shares = [PRIVATE["id"], rows("stories")[0]["id"]]
    events = [
        link_event("created", "active", share_mode="all"),
        link_event("updated", "active", share_mode="selective", shared_story_ids=shares),
        link_event("updated", "pending", share_mode="selective", shared_story_ids=shares[:1]),
    ]
    for i in (*order, *order):  # each delivered twice
        send(events[i])
    (link,) = ports.stories.links_of(NEW_LEGACY)
    assert (link.status.value, link.share_mode.value, [str(x) for x in link.shared_story_ids]) == (
        "pending",
        "selective",
        shares[:1],
    )


def test_the_source_sequence_orders_changes_of_the_same_second(send, ports):
    _setup_new_legacy(send)
    send(link_event("created", "pending", sequence=1))
    assert send(link_event("updated", "active", sequence=3)) == "updated"
    assert send(link_event("updated", "revoked", sequence=2)) == "skipped"  # older, though more restrictive
    assert reads_private_story(ports)
    assert send(link_event("updated", "revoked", sequence=4)) == "updated"
    assert send(link_event("updated", "active", sequence=3)) == "skipped"
    assert not reads_private_story(ports)


MEMBER = sample("member_added")["detail"]["member"]


def role(ports):
    r = ports.stories.role_of(UUID(MEMBER["user_id"]), UUID(MEMBER["legacy_id"]))
    return r.value if r else None


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1)])
def test_member_changes_of_one_second_end_at_the_lesser_role_and_a_removal_wins(send, ports, order):
    for name in ("legacy_created", "user_created"):
        send(sample(name))
    admin = sample("member_added")
    admin["detail"]["member"]["role"] = "admin"
    admirer = sample("member_added")
    admirer["detail"]["member"]["role"] = "admirer"
    for i in order[:2]:
        send([admin, admirer, sample("member_removed")][i])
    assert role(ports) == ("admirer" if set(order[:2]) == {0, 1} else None)
    for i in order:
        send([admin, admirer, sample("member_removed")][i])
    assert role(ports) is None
    assert send(admin) == "skipped"
    readmitted = sample("member_added", "2019-11-04T09:00:01Z")
    assert send(readmitted) == "created" and role(ports) == "creator"


STORY = sample("story_created")["detail"]["story"]


def test_story_versions_of_one_time_keep_the_more_restrictive_visibility(send, ports):
    public, private = sample("story_updated"), sample("story_updated")
    public["detail"]["story"]["visibility"] = "public"
    private["detail"]["story"]["visibility"] = "private"
    send(public)
    assert send(private) == "updated"
    assert send(public) == "skipped"  # the redelivery of the wider version
    assert ports.stories.get_story(UUID(STORY["id"])).visibility.value == "private"


def test_a_delete_is_final_even_for_a_newer_update(send, ports):
    """Finding 7 (tombstones): an update newer than the delete does not resurrect the story."""
    send(sample("story_created"))
    send(sample("story_deleted"))  # deleted_at 2019-11-05T10:00
    newer = sample("story_updated")
    newer["detail"]["story"]["updated_at"] = "2019-11-06T10:00:00Z"
    assert send(newer) == "skipped"
    assert ports.stories.get_story(UUID(STORY["id"])) is None and ports.vectors.chunks_of(STORY["id"]) == []
    assert ports.graph.run("MATCH (s:Story {id: $id}) RETURN s", {"id": STORY["id"]}) == []


def test_a_delete_older_than_the_stored_version_still_deletes(send, ports):
    send(sample("story_created"))
    send(sample("story_updated"))  # updated_at 2019-11-04T09:00
    older = sample("story_deleted")
    older["detail"]["deleted_at"] = "2019-11-03T20:00:00Z"
    assert send(older) == "deleted"
    assert ports.stories.get_story(UUID(STORY["id"])) is None and ports.vectors.chunks_of(STORY["id"]) == []


def test_reloading_the_dataset_never_gives_back_what_events_removed(send, ports):
    """Finding 2: after events remove a member, demote an advocate and shorten a selective
    share list, `heirloom load` of the same dataset restores none of them, and says so."""
    members, (selective, _pending) = rows("members"), rows("links")
    admirer = next(m for m in members if m["role"] == "admirer")
    advocate = next(m for m in members if m["role"] == "advocate")
    removed = sample("member_removed")
    removed["detail"].update(legacy_id=admirer["legacy_id"], user_id=admirer["user_id"])
    demoted = sample("member_added")
    demoted["detail"]["member"] = {**advocate, "role": "admirer"}
    shortened = sample("link_updated")
    shortened["detail"]["link"] = {**selective, "shared_story_ids": selective["shared_story_ids"][:1]}
    assert [send(e) for e in (removed, demoted, shortened)] == ["deleted", "updated", "updated"]

    report = load_dataset(ports, SAMPLE)
    store = ports.stories
    assert store.role_of(UUID(admirer["user_id"]), UUID(admirer["legacy_id"])) is None
    assert store.role_of(UUID(advocate["user_id"]), UUID(advocate["legacy_id"])).value == "admirer"
    (link,) = [x for x in store.links_of(UUID(selective["legacy_a_id"])) if str(x.id) == selective["id"]]
    assert [str(x) for x in link.shared_story_ids] == selective["shared_story_ids"][:1]
    assert report.changed == 0
    assert len(report.skipped) == 3
    assert {line.split(":")[0] for line in report.skipped} == {"members.jsonl", "links.jsonl"}


def test_reloading_after_a_story_is_deleted_keeps_it_deleted_and_says_so(send, ports):
    story = rows("stories")[0]
    deleted = sample("story_deleted")
    deleted["detail"].update(
        story_id=story["id"], legacy_id=story["legacy_id"], deleted_at="2019-11-05T10:00:00Z"
    )
    assert send(deleted) == "deleted"
    report = load_dataset(ports, SAMPLE)
    assert ports.stories.get_story(UUID(story["id"])) is None
    assert report.skipped == [
        "stories.jsonl:1: a newer version of this story is stored, or it was deleted; kept"
    ]


# -- concurrency ------------------------------------------------------------------------------


def test_two_writers_of_one_story_s_chunks_queue_instead_of_crashing(db, ports):
    """Finding 8: two loads (or deliveries) replacing one story's chunks at once: the second
    used to fail with UniqueViolation on story_chunks_pkey; now it waits for the first."""
    load_dataset(ports, SAMPLE)
    story = UUID(rows("stories")[0]["id"])
    chunk = EmbeddedChunk(index=0, text="one", token_count=1, embedding=tuple([0.1] * 64))
    first = PgVectorIndex(db, model_id=ports.vectors.model_id)
    second = PgVectorIndex(PgDatabase(db.url, embedding_dim=64), model_id=ports.vectors.model_id)

    def other_writer():
        second.replace_chunks(story, [chunk.model_copy(update={"text": "two"})], "h2")

    with db.transaction():  # the first writer's transaction, held open around its write
        first.replace_chunks(story, [chunk], "h1")
        run = run_until_waiting(other_writer, db.url, close=second.db.close, polls=500)
        assert run.waiting, "the second writer did not wait for the first"
    run.finish(30)
    assert [c.text for c in ports.vectors.chunks_of(story)] == ["two"]


def test_two_concurrent_loads_of_one_dataset_both_succeed(db, ports):
    store_b = PgDatabase(db.url, embedding_dim=64)
    other = IngestionPorts(
        stories=PgStoryStore(store_b),
        vectors=PgVectorIndex(store_b, model_id=ports.vectors.model_id),
        graph=ports.graph,
        embedder=ports.embedder,
        tokenizer=ports.tokenizer,
    )
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def load(p):
        try:
            start.wait()
            load_dataset(p, SAMPLE)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(p,)) for p in (ports, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    store_b.close()
    assert not errors, errors
    assert ports.stories.counts()["stories"] == len(rows("stories"))
    assert load_dataset(ports, SAMPLE).changed == 0


def test_a_non_member_gets_nothing_after_a_removal_and_its_late_add(send, ports):
    _setup_new_legacy(send)
    send(sample("member_removed", "2019-11-04T09:00:00Z"))
    send(sample("member_added", "2019-11-04T09:00:00Z"))  # the same second: the removal wins
    with pytest.raises(AccessDenied):
        scope_for(ports.stories, NEW_CREATOR, NEW_LEGACY)


def test_two_concurrent_deliveries_of_one_story_with_its_facts_end_as_one_delivery(db, ports):
    """Two containers processing the same Story Created at once (chunks, entities, facts): both
    succeed, and the stored state is what one delivery, re-synced alone, leaves (the story's
    graph writes hold a per-story lock, decision 0020)."""
    from dataclasses import replace

    from tests.support.snapshot import snapshot
    from tests.support.worlds import ScriptedExtractor

    load_dataset(ports, SAMPLE)
    extractor = ScriptedExtractor(["Dominic Ferraro"])
    mine = replace(ports, extractor=extractor, extractor_version=extractor.version)
    second_db = PgDatabase(db.url, embedding_dim=64)
    theirs = replace(
        mine,
        stories=PgStoryStore(second_db),
        vectors=PgVectorIndex(second_db, model_id=ports.vectors.model_id),
    )
    story = {**rows("stories")[0], "id": "0b9a7f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "updated_at": "2024-06-01T10:00:00Z",
             "content": "Dominic Ferraro lived in Brackenford.\n\nDominic Ferraro owned Samovar. Emberfest was in 1951."}  # fmt: skip
    event = sample("story_created")
    event["detail"]["story"] = story
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def deliver(p, handler):
        try:
            start.wait()
            handler(event, LambdaContext("StoryEvents"), services=services_with(ingestion=p))
        except BaseException as exc:
            errors.append(exc)

    # one handler module per "container", loaded before the threads (Powertools' Logger setup
    # is not thread-safe)
    handlers = [load_handler("story_events") for _ in range(2)]
    threads = [
        threading.Thread(target=deliver, args=(p, h)) for p, h in zip((mine, theirs), handlers, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    second_db.close()
    assert not errors, errors
    together = snapshot(db, ports.graph)
    with db.transaction() as conn:  # forget what was built, and build it again alone
        conn.execute("UPDATE story_processing SET graph_hash = NULL, chunks_hash = NULL WHERE story_id = %s",
                     (story["id"],))  # fmt: skip
    handler = load_handler("story_events")
    handler(event, LambdaContext("StoryEvents"), services=services_with(ingestion=mine))
    alone = snapshot(db, ports.graph)
    assert together.nodes == alone.nodes and together.edges == alone.edges, together.diff(alone)
    assert together.tables["story_chunks"] == alone.tables["story_chunks"]


def test_a_delivery_waits_while_another_writer_holds_the_story_s_graph(db, ports):
    """Deterministic half of the test above: while one writer holds the story's graph lock, a
    delivery of that story blocks before its graph writes, then completes."""
    from dataclasses import replace

    from tests.support.worlds import ScriptedExtractor

    load_dataset(ports, SAMPLE)
    extractor = ScriptedExtractor(["Dominic Ferraro"])
    second_db = PgDatabase(db.url, embedding_dim=64)
    theirs = replace(
        ports,
        extractor=extractor,
        extractor_version=extractor.version,
        stories=PgStoryStore(second_db),
        vectors=PgVectorIndex(second_db, model_id=ports.vectors.model_id),
    )
    story = {**rows("stories")[0], "id": "5d1c2b3a-4e5f-4a6b-9c8d-7e6f5a4b3c2d", "updated_at": "2024-06-01T10:00:00Z",
             "content": "Dominic Ferraro lived in Brackenford."}  # fmt: skip
    event = sample("story_created")
    event["detail"]["story"] = story

    def deliver():
        load_handler("story_events")(
            event, LambdaContext("StoryEvents"), services=services_with(ingestion=theirs)
        )

    with ports.stories.story_graph_lock(UUID(story["id"])):
        run = run_until_waiting(deliver, db.url, close=second_db.close)
        assert run.waiting, "the delivery did not wait for the story's graph lock"
        assert (
            ports.graph.run(
                "MATCH (s:Story {id: $id})-[:MENTIONS]->(p) RETURN p.id AS p", {"id": story["id"]}
            )
            == []
        )
    run.finish()
    assert ports.stories.graph_synced(UUID(story["id"])) is not None


def test_a_story_sequence_orders_versions_of_the_same_updated_at(send, ports):
    private, public = sample("story_updated", sequence=1), sample("story_updated", sequence=2)
    private["detail"]["story"]["visibility"] = "private"
    public["detail"]["story"]["visibility"] = "public"  # a newer decision to share it
    send(public)
    assert send(private) == "skipped"
    assert ports.stories.get_story(UUID(STORY["id"])).visibility.value == "public"
    assert send(public) == "unchanged"


def test_a_late_person_event_or_a_reload_never_moves_a_person_back(send, ports):
    """A person's legacy decides who sees the known relationships it is in."""
    send(sample("legacy_created"))
    dominic = next(p for p in rows("persons") if p["name"] == "Dominic Ferraro")
    moved = sample("person_created", "2019-11-05T09:00:00Z")
    moved["detail"]["person"] = {**dominic, "legacy_id": str(NEW_LEGACY)}
    older = sample("person_created", "2019-11-04T09:00:00Z")
    older["detail"]["person"] = dominic
    assert send(moved) == "updated"
    assert send(older) == "skipped"
    report = load_dataset(ports, SAMPLE)
    assert ports.stories.get_person(UUID(dominic["id"])).legacy_id == NEW_LEGACY
    assert any(line.startswith("persons.jsonl:") for line in report.skipped)
    node = ports.graph.run("MATCH (p:Person {id: $id}) RETURN p.legacy_id AS l", {"id": dominic["id"]})
    assert node == [{"l": str(NEW_LEGACY)}]
