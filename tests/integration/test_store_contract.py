"""The story store and the vector index, held to one contract: every test runs on PostgreSQL and
on the in-memory adapters (heirloom.adapters.memory), so the unit tier's fakes cannot drift."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from heirloom.adapters.memory import MemoryStoryStore
from heirloom.adapters.postgres import PgStoryStore, PgVectorIndex
from heirloom.contracts.extraction import NamedThing
from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    ShareMode,
    Story,
    User,
    Visibility,
)
from heirloom.domain.access import resolve_scope
from heirloom.domain.chunking import digest_of
from heirloom.ports import Change, EmbeddedChunk


@pytest.fixture(params=["postgres", "memory"])
def pair(request):
    if request.param == "memory":
        store = MemoryStoryStore()
        return store, store.vector_index("test-model")
    db = request.getfixturevalue("db")
    return PgStoryStore(db), PgVectorIndex(db, model_id="test-model")


def _seed(store):
    legacy, person, user = uuid4(), uuid4(), uuid4()
    store.upsert_legacy(Legacy(id=legacy, name="L", subject_person_id=person))
    store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada", aliases=("Nana",)))
    store.upsert_user(User(id=user, name="U"))
    return legacy, person, user


def test_story_store_round_trips_and_reports_changes(pair):
    store, _ = pair
    legacy, person, user = _seed(store)
    assert store.get_person(person).aliases == ("Nana",)
    assert (
        store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada", aliases=("Nana",)))
        is Change.UNCHANGED
    )
    assert (
        store.upsert_person(Person(id=person, legacy_id=legacy, name="Ada B", aliases=())) is Change.UPDATED
    )
    assert store.upsert_member(Member(legacy_id=legacy, user_id=user, role=Role.ADMIRER)) is Change.CREATED
    assert store.role_of(user, legacy) is Role.ADMIRER
    assert store.upsert_member(Member(legacy_id=legacy, user_id=user, role=Role.ADMIN)) is Change.UPDATED
    assert store.member_legacy_ids(user) == [legacy]
    assert store.member_user_ids(legacy) == [user]
    t = datetime(2024, 1, 1, tzinfo=UTC)
    story = Story(
        id=uuid4(),
        legacy_id=legacy,
        author_user_id=user,
        title="T",
        content="Body.",
        visibility=Visibility.PRIVATE,
        created_at=t,
        updated_at=t,
    )
    assert store.upsert_story(story, "h1") is Change.CREATED
    assert store.upsert_story(story, "h1") is Change.UNCHANGED
    assert store.get_story(story.id) == story and store.get_story_hash(story.id) == "h1"
    meta = store.story_meta([story.id])[0]
    assert meta.visibility is Visibility.PRIVATE and meta.author_user_id == user
    other_person = uuid4()
    store.upsert_person(Person(id=other_person, legacy_id=legacy, name="Bo"))
    rel = Relationship(
        from_person_id=person, to_person_id=other_person, type=RelationshipType.KNEW, detail="x"
    )
    assert store.upsert_relationship(rel) is Change.CREATED
    assert store.relationships_of([other_person]) == [rel]
    assert store.remove_relationship(person, other_person, "FRIENDS_WITH") is Change.UNCHANGED
    assert store.remove_relationship(person, other_person, "KNEW") is Change.DELETED
    assert store.relationships_of([other_person]) == []
    assert store.upsert_relationship(rel) is Change.CREATED
    assert store.remove_member(legacy, user) is Change.DELETED
    assert store.member_user_ids(legacy) == []
    assert store.role_of(user, legacy) is None
    assert store.delete_story(story.id) is Change.DELETED and store.get_story(story.id) is None


def test_memberships_through_a_person_are_those_whose_social_edge_ends_at_it(pair):
    """The member's person or the legacy's subject; a removed membership is not one."""
    store, _ = pair
    legacy, subject, user = _seed(store)
    other, _, _ = _seed(store)
    member_person, second = uuid4(), uuid4()
    store.upsert_person(Person(id=member_person, legacy_id=other, name="Bo"))
    store.upsert_user(User(id=user, name="U", person_id=member_person))
    store.upsert_user(User(id=second, name="V"))
    for legacy_id, user_id in ((legacy, user), (legacy, second), (other, user)):
        store.upsert_member(Member(legacy_id=legacy_id, user_id=user_id, role=Role.ADMIRER))
    by_subject = sorted([(legacy, user), (legacy, second)], key=lambda k: (str(k[0]), str(k[1])))
    assert store.memberships_through(subject) == by_subject
    by_user = sorted([(legacy, user), (other, user)], key=lambda k: (str(k[0]), str(k[1])))
    assert store.memberships_through(member_person) == by_user
    store.remove_member(other, user)
    assert store.memberships_through(member_person) == [(legacy, user)]
    assert store.memberships_through(uuid4()) == []


def test_link_shares_round_trip(pair):
    store, _ = pair
    a, _, _ = _seed(store)
    b, _, _ = _seed(store)
    s1, s2 = uuid4(), uuid4()
    link = Link(
        id=uuid4(),
        legacy_a_id=a,
        legacy_b_id=b,
        status=LinkStatus.ACTIVE,
        share_mode=ShareMode.SELECTIVE,
        shared_story_ids=tuple(sorted([s1, s2])),
    )
    assert store.upsert_link(link) is Change.CREATED
    assert store.links_of(b) == [link] == [store.get_link(link.id)]
    assert store.upsert_link(link) is Change.UNCHANGED
    narrowed = link.model_copy(update={"shared_story_ids": (s1,)})
    assert store.upsert_link(narrowed) is Change.UPDATED
    assert store.links_of(a)[0].shared_story_ids == (s1,)
    assert store.get_link(link.id) == narrowed and store.get_link(uuid4()) is None


def test_vector_search_applies_the_read_scope_in_sql(pair):
    store, index = pair
    legacy, _, author = _seed(store)
    reader = uuid4()
    store.upsert_user(User(id=reader, name="R"))
    t = datetime(2024, 1, 1, tzinfo=UTC)
    ids = {}
    for vis in Visibility:
        for who, uid in (("author", author), ("reader", reader)):
            sid = uuid4()
            ids[(vis, who)] = sid
            store.upsert_story(
                Story(
                    id=sid,
                    legacy_id=legacy,
                    author_user_id=uid,
                    title="t",
                    content="c",
                    visibility=vis,
                    created_at=t,
                    updated_at=t,
                ),
                "h",
            )
            index.replace_chunks(
                sid,
                [EmbeddedChunk(index=0, text="c", token_count=1, embedding=tuple([1.0] + [0.0] * 63))],
                "h",
            )
    assert index.count() == 6 and index.indexed_hash(ids[(Visibility.PUBLIC, "author")]) == "h"
    admirer = resolve_scope(user_id=reader, legacy_id=legacy, role=Role.ADMIRER, links=[])
    found = {h.story_id for h in index.search([1.0] + [0.0] * 63, admirer, k=10)}
    assert found == {
        ids[(Visibility.PUBLIC, "author")],
        ids[(Visibility.PUBLIC, "reader")],
        ids[(Visibility.PERSONAL, "reader")],
    }
    advocate = resolve_scope(user_id=reader, legacy_id=legacy, role=Role.ADVOCATE, links=[])
    found = {h.story_id for h in index.search([1.0] + [0.0] * 63, advocate, k=10)}
    assert ids[(Visibility.PRIVATE, "author")] in found and ids[(Visibility.PERSONAL, "author")] not in found
    hits = index.search([1.0] + [0.0] * 63, advocate, k=10)
    assert all(abs(h.similarity - 1.0) < 1e-6 for h in hits)
    # "as of" a time: only stories created by then (the word search shares the SQL, `scope_sql`)
    at_creation = advocate.model_copy(update={"as_of": t})
    assert {h.story_id for h in index.search([1.0] + [0.0] * 63, at_creation, k=10)} == found
    before = advocate.model_copy(update={"as_of": t - timedelta(seconds=1)})
    assert index.search([1.0] + [0.0] * 63, before, k=10) == []


T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _story(legacy, author, *, at=T0, visibility=Visibility.PUBLIC, title="t", sid=None):
    return Story(
        id=sid or uuid4(),
        legacy_id=legacy,
        author_user_id=author,
        title=title,
        content="c",
        visibility=visibility,
        created_at=T0,
        updated_at=at,
    )


def test_story_versions_apply_in_time_order_and_a_tie_keeps_the_more_restrictive(pair):
    store, _ = pair
    legacy, _, author = _seed(store)
    newer = _story(legacy, author, at=T0 + timedelta(hours=1), title="new")
    assert store.upsert_story(newer, "h2") is Change.CREATED
    older = newer.model_copy(update={"updated_at": T0, "title": "old"})
    assert store.upsert_story(older, "h1") is Change.SKIPPED
    assert store.get_story(newer.id).title == "new"
    private = newer.model_copy(update={"visibility": Visibility.PRIVATE})
    assert store.upsert_story(private, "h2") is Change.UPDATED
    assert store.upsert_story(newer, "h2") is Change.SKIPPED  # same stamp, less restrictive
    assert store.get_story(newer.id).visibility is Visibility.PRIVATE


def test_a_delete_is_final_even_for_a_create_delivered_after_it(pair):
    store, index = pair
    legacy, _, author = _seed(store)
    story = _story(legacy, author)
    store.upsert_story(story, "h")
    assert not store.story_deleted(story.id)
    index.replace_chunks(
        story.id, [EmbeddedChunk(index=0, text="c", token_count=1, embedding=(1.0,) * 64)], "h"
    )
    assert store.delete_story(story.id) is Change.DELETED and index.count() == 0
    assert store.story_deleted(story.id)
    assert (
        store.upsert_story(story.model_copy(update={"updated_at": T0 + timedelta(days=1)}), "h")
        is Change.SKIPPED
    )
    early = uuid4()  # deleted before its create arrived
    assert store.delete_story(early, legacy_id=legacy) is Change.UNCHANGED
    assert store.upsert_story(_story(legacy, author, sid=early), "h") is Change.SKIPPED
    assert store.get_story(early) is None and store.story_deleted(early)


def test_membership_changes_and_removals_are_ordered(pair):
    store, _ = pair
    legacy, _, user = _seed(store)
    member = Member(legacy_id=legacy, user_id=user, role=Role.ADMIN)
    assert store.upsert_member(member, T0, 1) is Change.CREATED
    assert store.remove_member(legacy, user, T0 + timedelta(seconds=1)) is Change.DELETED
    # a redelivered add older than the removal stays undone
    assert store.upsert_member(member, T0, 1) is Change.SKIPPED and store.role_of(user, legacy) is None
    later = member.model_copy(update={"role": Role.ADMIRER})
    assert store.upsert_member(later, T0 + timedelta(seconds=2)) is Change.CREATED
    # at one stamp the lesser role stays
    assert store.upsert_member(member, T0 + timedelta(seconds=2)) is Change.UNCHANGED
    assert store.role_of(user, legacy) is Role.ADMIRER


def test_relationship_changes_and_removals_are_ordered(pair):
    store, _ = pair
    legacy, person, _ = _seed(store)
    other = uuid4()
    store.upsert_person(Person(id=other, legacy_id=legacy, name="Bo"))
    rel = Relationship(from_person_id=person, to_person_id=other, type=RelationshipType.KNEW, detail="b")
    key = (person, other, "KNEW")
    assert store.remove_relationship(*key, T0 + timedelta(seconds=1)) is Change.UNCHANGED  # arrives first
    # its own older add, delivered late, stays undone; so does a dataset record
    assert store.upsert_relationship(rel, T0) is Change.SKIPPED and store.relationships_of([other]) == []
    assert store.upsert_relationship(rel) is Change.SKIPPED
    assert store.upsert_relationship(rel, T0 + timedelta(seconds=2), 1) is Change.CREATED
    assert store.remove_relationship(*key, T0 + timedelta(seconds=2), 0) is Change.SKIPPED  # older sequence
    # at one stamp the greater version stays; a removal wins
    older = rel.model_copy(update={"detail": "a"})
    assert store.upsert_relationship(older, T0 + timedelta(seconds=2), 1) is Change.SKIPPED
    assert store.relationships_of([other]) == [rel]
    assert store.remove_relationship(*key, T0 + timedelta(seconds=2), 1) is Change.DELETED
    assert store.upsert_relationship(rel, T0 + timedelta(seconds=2), 1) is Change.SKIPPED
    assert store.relationships_of([other]) == []


def test_a_link_revoked_at_the_same_moment_stays_revoked(pair):
    store, _ = pair
    a, _, _ = _seed(store)
    b, _, _ = _seed(store)
    active = Link(
        id=uuid4(), legacy_a_id=a, legacy_b_id=b, status=LinkStatus.ACTIVE, share_mode=ShareMode.ALL
    )
    revoked = active.model_copy(update={"status": LinkStatus.REVOKED})
    assert store.upsert_link(revoked, T0, 5) is Change.CREATED
    assert store.upsert_link(active, T0, 5) is Change.UNCHANGED  # the narrower state stays
    assert store.upsert_link(active, T0, 4) is Change.SKIPPED
    assert store.links_of(a)[0].status is LinkStatus.REVOKED


def test_the_ledger_lists_stories_whose_index_or_graph_is_behind(pair):
    store, index = pair
    legacy, _, author = _seed(store)
    done, behind = _story(legacy, author), _story(legacy, author)
    for story in (done, behind):
        store.upsert_story(story, "h")
    # the ledgers hold the story digest (title and content hash) that Python computes; the
    # store's planner computes the same from the stored row (in SQL for PostgreSQL)
    digest = digest_of(done.title, "h")
    index.replace_chunks(
        done.id, [EmbeddedChunk(index=0, text="c", token_count=1, embedding=(1.0,) * 64)], f"{digest}:v1"
    )
    store.mark_graph_synced(done.id, digest, "x1", "fp")
    ask = {"after": None, "limit": 10, "embedder": "test-model", "chunk_format": "v1"}
    assert store.stories_needing_processing(**ask, extractor_version="x1") == [behind.id]
    assert sorted(store.stories_needing_processing(**ask, extractor_version="x2"), key=str) == sorted(
        [done.id, behind.id], key=str
    )
    assert store.graph_synced(done.id) == (digest, "x1") and store.graph_fingerprints()[done.id] == "fp"
    # a new title with the same content puts the story behind (its index and its graph)
    retitled = done.model_copy(
        update={"title": "Grand-mère’s orchard", "updated_at": done.updated_at + timedelta(seconds=1)}
    )
    store.upsert_story(retitled, "h")
    assert sorted(store.stories_needing_processing(**ask, extractor_version="x1"), key=str) == sorted(
        [done.id, behind.id], key=str
    )
    store.upsert_story(
        retitled.model_copy(
            update={"title": done.title, "updated_at": retitled.updated_at + timedelta(seconds=1)}
        ),
        "h",
    )
    assert store.stories_needing_processing(**ask, extractor_version="x1") == [behind.id]
    store.forget_graph_synced([done.id])
    assert store.graph_synced(done.id) is None


@pytest.fixture(params=["postgres", "memory"])
def conversation_pair(request):
    from heirloom.adapters.memory_conversations import MemoryConversationStore
    from heirloom.adapters.postgres.conversations import PgConversationStore

    if request.param == "memory":
        return MemoryStoryStore(), MemoryConversationStore()
    db = request.getfixturevalue("db")
    return PgStoryStore(db), PgConversationStore(db)


def test_conversation_store_keeps_messages_in_order_and_facts_per_owner(conversation_pair):
    from heirloom.contracts.conversation import ConversationFact, ConversationMessage

    stories, conversations = conversation_pair
    legacy, _, user = _seed(stories)
    other = uuid4()
    assert conversations.memory_enabled(legacy) is False
    conversations.set_memory(legacy, True)
    assert conversations.memory_enabled(legacy) is True
    cid = uuid4()

    def message(seq, owner=user, conversation=cid):
        return ConversationMessage(
            conversation_id=conversation, seq=seq, legacy_id=legacy, user_id=owner, role="user",
            content=f"message {seq}", sent_at=T0 + timedelta(minutes=seq),
        )  # fmt: skip

    def fact(m, target):
        return ConversationFact(
            id=uuid4(), conversation_id=m.conversation_id, seq=m.seq, legacy_id=legacy, user_id=m.user_id,
            source="Ada", relation="MET", target=target, verb="met", sentence=m.content, confidence=0.8,
            told_at=m.sent_at,
        )  # fmt: skip

    for seq in (1, 2, 3, 4, 5):
        m = message(seq)
        assert conversations.add_message(m, [fact(m, f"T{seq}")])
    assert conversations.add_message(message(5), [fact(message(5), "again")]) is False  # nothing stored
    assert [m.seq for m in conversations.messages(cid)] == [1, 2, 3, 4, 5]
    assert [m.seq for m in conversations.messages(cid, 3)] == [3, 4, 5]
    theirs = message(1, owner=other, conversation=uuid4())
    assert conversations.add_message(theirs, [fact(theirs, "theirs")])
    assert [f.target for f in conversations.facts_of(legacy, user, 3)] == ["T5", "T4", "T3"]
    assert [f.target for f in conversations.facts_of(legacy, other, 10)] == ["theirs"]
    assert conversations.messages(uuid4()) == []


def test_conversation_store_lists_and_deletes_by_owner_only(conversation_pair):
    from heirloom.contracts.conversation import ConversationFact, ConversationMessage

    stories, conversations = conversation_pair
    legacy, _, user = _seed(stories)
    other = uuid4()

    def conversation(owner, n):
        cid, facts = uuid4(), []
        for seq in range(1, n + 1):
            m = ConversationMessage(
                conversation_id=cid, seq=seq, legacy_id=legacy, user_id=owner, role="user",
                content=f"message {seq}", sent_at=T0 + timedelta(minutes=seq),
            )  # fmt: skip
            f = ConversationFact(
                id=uuid4(), conversation_id=cid, seq=seq, legacy_id=legacy, user_id=owner, source="Ada",
                relation="MET", target=f"T{seq}", verb="met", sentence=m.content, confidence=0.8,
                told_at=m.sent_at,
            )  # fmt: skip
            assert conversations.add_message(m, [f])
            facts.append(f)
        return cid, facts

    mine, my_facts = conversation(user, 3)
    short, _ = conversation(user, 1)
    theirs, their_facts = conversation(other, 2)
    listed = conversations.conversations_of(legacy, user)
    assert [(c.conversation_id, c.messages, c.facts) for c in listed] == [(mine, 3, 3), (short, 1, 1)]
    assert (listed[0].first_message_at, listed[0].last_message_at) == (
        T0 + timedelta(minutes=1),
        T0 + timedelta(minutes=3),
    )
    assert [f.target for f in conversations.facts_in(legacy, user, mine)] == ["T1", "T2", "T3"]
    # pages: at most `limit`, those after a (last message time, id) or (seq, id)
    first = listed[0]
    assert conversations.conversations_of(legacy, user, 1) == listed[:1]
    assert (
        conversations.conversations_of(legacy, user, 5, (first.last_message_at, first.conversation_id))
        == listed[1:]
    )
    assert [f.target for f in conversations.facts_in(legacy, user, mine, 2)] == ["T1", "T2"]
    assert [f.target for f in conversations.facts_in(legacy, user, mine, 5, (1, my_facts[0].id))] == [
        "T2",
        "T3",
    ]
    assert conversations.facts_in(legacy, user, theirs) == []  # not the user's
    # someone else's: nothing removed
    assert conversations.delete_conversation(legacy, user, theirs) == (0, 0)
    assert conversations.delete_fact(legacy, user, their_facts[0].id) is None
    assert len(conversations.messages(theirs)) == 2
    assert conversations.delete_fact(legacy, user, my_facts[0].id) == my_facts[0]
    assert [f.target for f in conversations.facts_in(legacy, user, mine)] == ["T2", "T3"]
    assert conversations.deleted_owner(mine) is None
    assert conversations.delete_conversation(legacy, user, mine) == (3, 2)
    assert conversations.messages(mine) == [] and conversations.facts_in(legacy, user, mine) == []
    assert conversations.deleted_owner(mine) == (legacy, user)
    again = ConversationMessage(
        conversation_id=mine, seq=1, legacy_id=legacy, user_id=user, role="user", content="again",
        sent_at=T0,
    )  # fmt: skip
    assert conversations.add_message(again, []) is False  # the id stays deleted
    assert conversations.messages(mine) == []
    assert conversations.forget_member(legacy, user) == 1
    assert conversations.deleted_owner(short) == (legacy, user)
    assert conversations.deleted_owner(theirs) is None
    assert conversations.conversations_of(legacy, user) == []
    assert [c.conversation_id for c in conversations.conversations_of(legacy, other)] == [theirs]
    assert [f.target for f in conversations.facts_of(legacy, other, 10)] == ["T2", "T1"]


def test_forgetting_a_member_waits_for_a_write_to_one_of_their_conversations(db):
    """`forget_member` takes every conversation's lock before it deletes: a message being
    appended (its conversation's lock held) finishes first and is deleted with the rest."""
    from heirloom.adapters.postgres import PgDatabase
    from heirloom.adapters.postgres.conversations import PgConversationStore
    from heirloom.adapters.postgres.rows import advisory_lock
    from heirloom.contracts.conversation import ConversationMessage
    from tests.support.containers import run_until_waiting

    legacy, _, user = _seed(PgStoryStore(db))
    store = PgConversationStore(db)
    first, second = sorted([uuid4(), uuid4()], key=str)
    for cid in (first, second):
        store.add_message(
            ConversationMessage(
                conversation_id=cid, seq=1, legacy_id=legacy, user_id=user, role="user", content="hi",
                sent_at=T0,
            ),
            [],
        )  # fmt: skip
    other_db = PgDatabase(db.url, embedding_dim=64)
    forgotten: list[int] = []
    with db.transaction() as conn:  # a writer of the second conversation, mid-append
        advisory_lock(conn, f"conversation:{second}")
        run = run_until_waiting(
            lambda: forgotten.append(PgConversationStore(other_db).forget_member(legacy, user)),
            db.url,
            close=other_db.close,
            polls=500,
        )
        assert run.waiting, "forget_member did not wait for the conversation's lock"
        conn.execute(
            "INSERT INTO conversation_messages (conversation_id, seq, legacy_id, user_id, role, content, sent_at)"
            " VALUES (%s, 2, %s, %s, 'user', 'late', %s)",
            (second, legacy, user, T0),
        )
    run.finish(30)
    assert forgotten == [3]
    assert store.messages(first) == [] and store.messages(second) == []
    assert store.deleted_owner(first) == store.deleted_owner(second) == (legacy, user)


def test_known_relationships_are_read_by_either_person_with_both_names_and_legacies(pair):
    store, _ = pair
    legacy, person, _ = _seed(store)
    other_legacy, other, third = uuid4(), uuid4(), uuid4()
    store.upsert_legacy(Legacy(id=other_legacy, name="M", subject_person_id=other))
    store.upsert_person(Person(id=other, legacy_id=other_legacy, name="Bo"))
    store.upsert_person(Person(id=third, legacy_id=legacy, name="Cy"))
    knew = Relationship(from_person_id=other, to_person_id=person, type=RelationshipType.KNEW, detail="b")
    family = Relationship(
        from_person_id=person, to_person_id=third, type=RelationshipType.FAMILY_OF, since="1950"
    )
    store.upsert_relationship(knew)
    store.upsert_relationship(family)
    assert store.known_relationships([]) == []
    # to the person (only the to-index finds it) and from the person, each with both persons
    got = {
        (r.from_name, r.type, r.to_name, r.detail, r.since): r for r in store.known_relationships([person])
    }
    assert set(got) == {("Bo", "KNEW", "Ada", "b", None), ("Ada", "FAMILY_OF", "Cy", None, "1950")}
    assert got["Bo", "KNEW", "Ada", "b", None].from_legacy_id == other_legacy
    assert got["Bo", "KNEW", "Ada", "b", None].to_legacy_id == legacy
    assert [(r.from_name, r.to_name) for r in store.known_relationships([other, uuid4()])] == [("Bo", "Ada")]
    store.remove_relationship(other, person, "KNEW")
    assert [r.type for r in store.known_relationships([person, other])] == ["FAMILY_OF"]


def test_a_storys_named_things_are_kept_with_its_legacy_and_go_with_it(pair):
    store, _ = pair
    legacy, _, user = _seed(store)
    t = datetime(2024, 1, 1, tzinfo=UTC)
    stories = [
        Story(id=uuid4(), legacy_id=legacy, author_user_id=user, title=f"T{i}", content="Body.",
              visibility=Visibility.PUBLIC, created_at=t, updated_at=t)
        for i in range(2)
    ]  # fmt: skip
    for story in stories:
        store.upsert_story(story, "h")
    biscuit, hymn = NamedThing(name="Biscuit", type="animal"), NamedThing(name="Ave Maria", type="work")
    store.set_named_things(stories[0].id, [biscuit, hymn])
    store.set_named_things(stories[1].id, [])
    store.mark_graph_synced(stories[0].id, "d", "v")  # the sync mark leaves the names alone
    store.forget_graph_synced([stories[0].id])
    assert store.named_things_of(legacy) == {stories[0].id: (biscuit, hymn)}
    assert store.named_things_of(uuid4()) == {}
    store.set_named_things(stories[0].id, [hymn])
    assert store.named_things_of(legacy) == {stories[0].id: (hymn,)}
    store.delete_story(stories[0].id)
    assert store.named_things_of(legacy) == {}
