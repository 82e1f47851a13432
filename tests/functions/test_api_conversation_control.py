"""A member's control over their conversation memory (docs/decisions/0021) through the API
handler on the embedded engines: their conversations listed, a conversation's facts read, a
conversation or one fact deleted; another member's (whatever the role, the creator and admins
included) never listed, read or deleted and answered as missing; memory turned off keeps the
facts out of every context; a member who leaves has their memory of the legacy deleted (the
StoryEvents handler); a story made of a conversation only with a visibility the role may create."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heirloom.adapters.factory import _spacy_extractor
from heirloom.adapters.postgres import PgStoryStore
from heirloom.adapters.postgres.conversations import PgConversationStore
from heirloom.contracts.context import ContextRequest, Intent
from heirloom.contracts.conversation import PAGE_DEFAULT, PAGE_MAX, ConversationFact, ConversationMessage
from heirloom.contracts.records import Member, Role, User
from heirloom_dev.loader import load_dataset
from tests.support import pipeline
from tests.support.apigw import legacy_caller
from tests.support.conversations import WINDOW, plant, say
from tests.support.dataset import MiniDataset
from tests.support.services import context_services

pytestmark = pytest.mark.integration

EXTRACTOR = _spacy_extractor()
QUESTION = "Who did Ada marry?"
NO_FACTS = {"facts": [], "next_cursor": None}


@pytest.fixture
def world(ports, tmp_path):
    """The mini legacy with a member of every role (creator, admin, advocate, admirer, and a
    second admirer); conversation memory on."""
    mini = MiniDataset()
    load_dataset(ports, mini.write(tmp_path / "ds"))
    roles = {"creator": mini.creator, "admirer": mini.admirer}
    for role in (Role.ADMIN, Role.ADVOCATE, Role.ADMIRER):
        user = uuid.uuid4()
        ports.stories.upsert_user(User(id=user, name=f"The {role.value}", person_id=None))
        ports.stories.upsert_member(Member(legacy_id=UUID(mini.legacy), user_id=user, role=role))
        roles[role.value if role.value not in roles else f"second {role.value}"] = str(user)
    conversations = PgConversationStore(ports.stories.db)
    services = context_services(
        ports,
        conversations=conversations,
        extractor=EXTRACTOR,
        start_ingestion=lambda story_id: None,
    )
    call = legacy_caller(services, mini.legacy)
    assert call("POST", "/conversation-memory", mini.creator, {"enabled": True})[0] == 200

    def context(user: str, query: str = QUESTION) -> str:
        request = ContextRequest(legacy_id=mini.legacy, user_id=user, persona="biographer", query=query)
        return str(pipeline.assemble(services, request, Intent.RELATIONAL)["formatted_context"])

    return call, context, mini, roles, conversations


def test_a_member_lists_reads_and_deletes_their_own_conversation(world):
    call, context, mini, _, conversations = world
    wedding, other = str(uuid.uuid4()), str(uuid.uuid4())
    say(call, mini.admirer, wedding, WINDOW)
    say(call, mini.admirer, other, ["The barn had a red door."])
    status, page = call("GET", "/conversations", mini.admirer)
    assert status == 200 and page["next_cursor"] is None
    listed = page["conversations"]
    assert [(c["conversation_id"], c["messages"], c["facts"]) for c in listed] == [
        (other, 1, 0),
        (wedding, 4, 1),
    ]
    assert all(c["first_message_at"] <= c["last_message_at"] for c in listed)
    status, page = call("GET", f"/conversations/{wedding}/facts", mini.admirer)
    assert status == 200 and page["next_cursor"] is None
    assert [(f["source"], f["target"], f["sentence"]) for f in page["facts"]] == [
        ("Ada Marsh", "Tom Reed", "She married Tom Reed in 1950.")
    ]
    assert call("GET", f"/conversations/{other}/facts", mini.admirer) == (200, NO_FACTS)
    assert "Tom Reed" in context(mini.admirer)

    status, body = call("DELETE", f"/conversations/{wedding}", mini.admirer)
    assert (status, body) == (200, {"conversation_id": wedding, "messages": 4, "facts": 1})
    assert conversations.messages(UUID(wedding)) == []
    assert conversations.facts_of(UUID(mini.legacy), UUID(mini.admirer), 100) == []
    assert "Tom Reed" not in context(mini.admirer)
    assert [
        c["conversation_id"] for c in call("GET", "/conversations", mini.admirer)[1]["conversations"]
    ] == [other]
    for method, path in (("DELETE", f"/conversations/{wedding}"), ("GET", f"/conversations/{wedding}/facts")):
        status, body = call(method, path, mini.admirer)
        assert status == 404 and body["error"] == "NotFound", (method, body)
    status, body = call("DELETE", "/conversations/not-a-uuid", mini.admirer)
    assert status == 400


def test_a_deleted_conversation_id_stays_deleted(world):
    """A message to a deleted conversation never starts a new one under its id: 409 with the
    reason to its owner, 404 to anyone else (as another member's conversation), nothing stored."""
    call, context, mini, roles, conversations = world
    cid = str(uuid.uuid4())
    say(call, mini.admirer, cid, WINDOW)
    assert call("DELETE", f"/conversations/{cid}", mini.admirer)[0] == 200
    status, body = call("POST", f"/conversations/{cid}/messages", mini.admirer, {"content": WINDOW[-1]})
    assert (status, body["error"]) == (409, "Conflict")
    assert "was deleted" in body["reason"] and "new id" in body["reason"]
    for role, user in roles.items():
        if user != mini.admirer:
            status, body = call("POST", f"/conversations/{cid}/messages", user, {"content": "Hello."})
            assert (status, body["error"]) == (404, "NotFound"), role
    assert conversations.messages(UUID(cid)) == []
    assert conversations.facts_of(UUID(mini.legacy), UUID(mini.admirer), 100) == []
    assert call("GET", "/conversations", mini.admirer) == (200, {"conversations": [], "next_cursor": None})
    assert "Tom Reed" not in context(mini.admirer)
    for method, path in (("GET", f"/conversations/{cid}/facts"), ("DELETE", f"/conversations/{cid}")):
        assert call(method, path, mini.admirer)[0] == 404
    say(call, mini.admirer, str(uuid.uuid4()), WINDOW[:1])  # a new id starts a new one


def test_one_fact_is_deleted_and_its_message_stays(world):
    call, context, mini, _, conversations = world
    cid = str(uuid.uuid4())
    say(call, mini.admirer, cid, WINDOW)
    [fact] = call("GET", f"/conversations/{cid}/facts", mini.admirer)[1]["facts"]
    status, body = call("DELETE", f"/conversation-facts/{fact['id']}", mini.admirer)
    assert (status, body) == (200, {"fact_id": fact["id"], "conversation_id": cid})
    assert call("GET", f"/conversations/{cid}/facts", mini.admirer) == (200, NO_FACTS)
    assert len(conversations.messages(UUID(cid))) == 4
    assert "Tom Reed" not in context(mini.admirer)
    status, body = call("DELETE", f"/conversation-facts/{fact['id']}", mini.admirer)
    assert status == 404 and body["error"] == "NotFound"


def test_no_role_lists_reads_or_deletes_another_members_conversation(world):
    """Every member owns a conversation; every other member, the creator and admins included,
    finds it missing (404, the same answer as an unknown id) and leaves it whole."""
    call, context, mini, roles, conversations = world
    tokens = {role: f"Zq{uuid.uuid4().hex[:8]}" for role in roles}
    planted = {role: plant(conversations, mini.legacy, user, tokens[role]) for role, user in roles.items()}
    unknown = (uuid.uuid4(), uuid.uuid4())
    for role, user in roles.items():
        listed = [c["conversation_id"] for c in call("GET", "/conversations", user)[1]["conversations"]]
        assert listed == [str(planted[role][0])], role
        for owner, (cid, fid) in [*planted.items(), ("nobody", unknown)]:
            if owner == role:
                continue
            answers = [
                call("GET", f"/conversations/{cid}/facts", user),
                call("DELETE", f"/conversations/{cid}", user),
                call("DELETE", f"/conversation-facts/{fid}", user),
                call("POST", f"/conversations/{cid}/story", user, {"title": "Mine now"}),
            ]
            if owner != "nobody":  # an unknown id is a new conversation of the poster's
                answers.append(call("POST", f"/conversations/{cid}/messages", user, {"content": "Hello."}))
            assert {status for status, _ in answers} == {404}, (role, owner, answers)
            assert {body["error"] for _, body in answers} == {"NotFound"}
    for role, user in roles.items():  # all still whole, each in its owner's context alone
        cid, fid = planted[role]
        assert len(conversations.messages(cid)) == 1
        [fact] = call("GET", f"/conversations/{cid}/facts", user)[1]["facts"]
        assert fact["id"] == str(fid)
        shown = context(user, f"Who did Ada marry, {' or '.join(tokens.values())}?")
        assert [t for t in tokens.values() if t in shown] == [tokens[role]], role
    stranger = str(uuid.uuid4())
    status, body = call("GET", "/conversations", stranger)
    assert status == 403 and body["error"] == "AccessDenied"  # not a member of the legacy


def test_memory_off_keeps_the_facts_out_of_every_context_until_on_again(world):
    call, context, mini, _, _ = world
    cid = str(uuid.uuid4())
    say(call, mini.admirer, cid, WINDOW)
    assert "Tom Reed" in context(mini.admirer)
    assert call("POST", "/conversation-memory", mini.creator, {"enabled": False})[0] == 200
    assert "Tom Reed" not in context(mini.admirer)
    # kept, and still the owner's to see and delete
    assert [f["target"] for f in call("GET", f"/conversations/{cid}/facts", mini.admirer)[1]["facts"]] == [
        "Tom Reed"
    ]
    assert call("GET", "/conversations", mini.admirer)[1]["conversations"][0]["facts"] == 1
    assert call("POST", "/conversation-memory", mini.creator, {"enabled": True})[0] == 200
    assert "Tom Reed" in context(mini.admirer)


@pytest.fixture
def planted() -> dict[str, dict[UUID, str]]:
    """Every conversation planted so far, by owner role: conversation -> its fact's token
    (hypothesis runs its examples on one world)."""
    return {}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_the_routes_show_and_delete_a_members_own_alone(world, planted, data):
    call, _, mini, roles, conversations = world
    for owner in data.draw(st.lists(st.sampled_from(sorted(roles)), max_size=3), label="owners"):
        token = f"Zq{uuid.uuid4().hex[:8]}"
        cid, _ = plant(conversations, mini.legacy, roles[owner], token)
        planted.setdefault(owner, {})[cid] = token
    role = data.draw(st.sampled_from(sorted(roles)), label="requester")
    user, own = roles[role], planted.get(role, {})
    limit = data.draw(st.integers(1, 3), label="page size")
    listed = [c for page in pages(call, "/conversations", user, "conversations", limit) for c in page]
    assert sorted(UUID(c["conversation_id"]) for c in listed) == sorted(own)  # each once, theirs alone
    # another member's cursor pages on through the caller's own conversations only
    other = roles[data.draw(st.sampled_from(sorted(roles)), label="cursor's owner")]
    cursor = call("GET", "/conversations", other, query={"limit": "1"})[1]["next_cursor"]
    if cursor is not None:
        status, page = call("GET", "/conversations", user, query={"cursor": cursor})
        assert status == 200 and {UUID(c["conversation_id"]) for c in page["conversations"]} <= set(own)
    every = [(owner, cid) for owner, cids in planted.items() for cid in cids]
    for owner, cid in every:
        status, facts = call("GET", f"/conversations/{cid}/facts", user)
        if owner == role:
            assert status == 200 and [f["target"] for f in facts["facts"]] == [planted[owner][cid]]
        else:
            assert status == 404 and planted[owner][cid] not in json.dumps(facts)
    if every:
        # an index, not sampled_from(every): the world grows across examples, the draw must not
        owner, cid = every[data.draw(st.integers(0, 999), label="deleted") % len(every)]
        status, _ = call("DELETE", f"/conversations/{cid}", user)
        assert status == (200 if owner == role else 404)
        if owner == role:
            del planted[owner][cid]
        assert (conversations.messages(cid) == []) is (owner == role)
    for owner, cids in planted.items():  # what is left is whole
        for cid in cids:
            assert len(conversations.messages(cid)) == 1, owner


def pages(call, path: str, user: str, key: str, limit: int | None = None) -> list[list[Any]]:
    """Every page of a listing, following `next_cursor` to the end."""
    out, cursor = [], None
    while True:
        query = {k: str(v) for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
        status, page = call("GET", path, user, query=query or None)
        assert status == 200, page
        out.append(page[key])
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def test_conversations_and_facts_come_in_pages_that_add_up_to_the_whole(world):
    """`limit` per page (50 unless given), `next_cursor` to the next page: the pages hold every
    conversation (or fact) once, in the listing's order, ties of time broken by id; another
    member's cursor shows the caller only their own."""
    call, _, mini, _, conversations = world
    at = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    # 53 conversations, three of them at one time (their order is their ids')
    mine = set()
    for i in range(53):
        mine.add(
            plant(conversations, mini.legacy, mini.admirer, f"Zq{i}", at + timedelta(minutes=min(i, 50)))[0]
        )
    whole = pages(call, "/conversations", mini.admirer, "conversations", limit=PAGE_MAX)
    assert len(whole) == 1 and len(whole[0]) == 53
    order = [(c["last_message_at"], c["conversation_id"]) for c in whole[0]]
    assert order == sorted(order, reverse=True) and {UUID(c) for _, c in order} == mine
    default = pages(call, "/conversations", mini.admirer, "conversations")
    assert [len(p) for p in default] == [PAGE_DEFAULT, 3]
    paged = pages(call, "/conversations", mini.admirer, "conversations", limit=4)
    assert [len(p) for p in paged] == [4] * 13 + [1]
    assert [c for p in paged for c in p] == whole[0]

    cursor = call("GET", "/conversations", mini.admirer, query={"limit": "2"})[1]["next_cursor"]
    theirs = plant(conversations, mini.legacy, mini.creator, "Zqtheirs", at - timedelta(days=1))[0]
    status, page = call("GET", "/conversations", mini.creator, query={"cursor": cursor})
    assert status == 200 and [c["conversation_id"] for c in page["conversations"]] == [str(theirs)]

    cid = uuid.uuid4()
    for seq, n in ((1, 4), (2, 3)):  # 7 facts over two messages
        message = ConversationMessage(
            conversation_id=cid, seq=seq, legacy_id=mini.legacy, user_id=mini.admirer, role="user",
            content=f"Ada Marsh met {n} people.", sent_at=at,
        )  # fmt: skip
        facts = [
            ConversationFact(
                id=uuid.uuid4(),
                conversation_id=cid,
                seq=seq,
                legacy_id=mini.legacy,
                user_id=mini.admirer,
                source="Ada Marsh",
                relation="MET",
                target=f"Zq{seq}{i}",
                verb="met",
                sentence=message.content,
                confidence=0.9,
                told_at=at,
            )
            for i in range(n)
        ]
        assert conversations.add_message(message, facts)
    path = f"/conversations/{cid}/facts"
    [every] = pages(call, path, mini.admirer, "facts")
    assert [(f["seq"], f["id"]) for f in every] == sorted((f["seq"], f["id"]) for f in every)
    assert [len(p) for p in pages(call, path, mini.admirer, "facts", limit=2)] == [2, 2, 2, 1]
    assert [f for p in pages(call, path, mini.admirer, "facts", limit=3) for f in p] == every
    assert pages(call, path, mini.admirer, "facts", limit=7) == [every]


def test_a_bad_limit_or_cursor_is_400_with_a_reason(world):
    call, _, mini, _, conversations = world
    cid, _ = plant(conversations, mini.legacy, mini.admirer, "Zqone")
    other, _ = plant(conversations, mini.legacy, mini.admirer, "Zqtwo")
    plant(conversations, mini.legacy, mini.admirer, "Zqthree")
    listing = call("GET", "/conversations", mini.admirer, query={"limit": "1"})[1]["next_cursor"]

    def forged(*keys: str) -> str:
        return base64.urlsafe_b64encode(json.dumps(keys).encode()).decode()

    bad = [
        ({"limit": "0"}, "limit"),
        ({"limit": str(PAGE_MAX + 1)}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": forged("conversations", "yesterday", str(cid))}, "cursor"),
        ({"cursor": forged("conversations", "2024-05-01T09:00:00", str(cid))}, "cursor"),  # no offset
        ({"cursor": forged(f"facts:{cid}", "one", str(cid))}, "cursor"),
        ({"cursor": forged("conversations", "2024-05-01T09:00:00+00:00")}, "cursor"),
        ({"cursor": "x" * 201}, "cursor"),
        ({"cursor": ""}, "cursor"),
    ]
    for path in ("/conversations", f"/conversations/{cid}/facts"):
        for query, field in bad:
            status, body = call("GET", path, mini.admirer, query=query)
            assert (status, body["error"]) == (400, "InvalidRequest"), (path, query, body)
            assert field in body["reason"], (path, query, body)
    # a cursor is for its own listing: the conversations' is no facts cursor, nor one
    # conversation's facts cursor another's
    facts_cursor = forged(f"facts:{cid}", "1", str(cid))
    assert call("GET", f"/conversations/{cid}/facts", mini.admirer, query={"cursor": facts_cursor})[0] == 200
    for path, cursor in (
        (f"/conversations/{cid}/facts", listing),
        (f"/conversations/{other}/facts", facts_cursor),
        ("/conversations", facts_cursor),
    ):
        status, body = call("GET", path, mini.admirer, query={"cursor": cursor})
        assert (status, body["error"]) == (400, "InvalidRequest") and "cursor" in body["reason"], path


@pytest.mark.parametrize(
    ("role", "visibility", "status"),
    [
        ("admirer", "private", 403),
        ("admirer", "public", 200),
        ("admirer", "personal", 200),
        ("advocate", "private", 200),
        ("admin", "private", 200),
        ("creator", "public", 200),
    ],
)
def test_a_story_gets_only_a_visibility_the_role_may_create(world, role, visibility, status):
    call, _, _, roles, _ = world
    user, cid = roles[role], str(uuid.uuid4())
    say(call, user, cid, WINDOW[:1])
    got, body = call("POST", f"/conversations/{cid}/story", user, {"title": "Ada", "visibility": visibility})
    assert got == status, body
    if status == 403:
        assert body["error"] == "AccessDenied" and "may not create a private story" in body["reason"]
        assert "public" in body["reason"] and "personal" in body["reason"]
        assert [s for s in mini_stories(world) if s.title == "Ada"] == []  # nothing stored
    else:
        assert body["visibility"] == visibility
        [story] = [s for s in mini_stories(world) if s.title == "Ada"]
        assert story.visibility == visibility and str(story.author_user_id) == user


def mini_stories(world) -> list[Any]:
    _, _, mini, _, conversations = world
    return PgStoryStore(conversations.db).stories_of(UUID(mini.legacy))


# -- a member who leaves: the StoryEvents handler --------------------------------------------
EVENTS = Path(__file__).parents[2] / "events" / "story_events"


def event(name: str, when: str) -> dict[str, Any]:
    out = json.loads((EVENTS / f"{name}.json").read_text())
    out["time"] = when
    return out


def test_a_member_who_leaves_loses_their_conversation_memory_of_that_legacy(send, ports):
    added = event("member_added", "2019-11-03T18:30:05Z")
    member = added["detail"]["member"]
    legacy, user = member["legacy_id"], member["user_id"]
    send(event("legacy_created", "2019-11-01T00:00:00Z"))
    send(event("user_created", "2019-11-01T00:00:00Z"))
    assert send(added) == "created"
    conversations = PgConversationStore(ports.stories.db)
    conversations.set_memory(UUID(legacy), True)
    leaving = [plant(conversations, legacy, user, f"Zq{i}") for i in range(2)]
    other = uuid.uuid4()  # a member who stays
    ports.stories.upsert_user(User(id=other, name="Stays", person_id=None))
    ports.stories.upsert_member(Member(legacy_id=UUID(legacy), user_id=other, role=Role.ADMIRER))
    staying = plant(conversations, legacy, str(other), "Zqstays")

    assert send(event("member_removed", "2019-11-04T09:00:00Z")) == "deleted"
    for cid, _ in leaving:
        assert conversations.messages(cid) == []
    assert conversations.conversations_of(UUID(legacy), UUID(user)) == []
    assert len(conversations.messages(staying[0])) == 1
    assert [f.id for f in conversations.facts_of(UUID(legacy), other, 10)] == [staying[1]]

    # re-invited later: a removal older than the new membership is skipped and forgets nothing
    assert send(event("member_added", "2019-11-05T09:00:00Z")) == "created"
    again = plant(conversations, legacy, user, "Zqagain")
    assert send(event("member_removed", "2019-11-04T10:00:00Z")) == "skipped"
    assert len(conversations.messages(again[0])) == 1
    for cid, _ in leaving:  # what leaving deleted stays deleted
        assert conversations.deleted_owner(cid) == (UUID(legacy), UUID(user))


def test_the_visibility_rule_is_what_each_role_reads():
    from heirloom.contracts.records import READS_PRIVATE, Visibility
    from heirloom.domain.access import CREATES

    for role in Role:
        assert Visibility.PERSONAL in CREATES[role] and Visibility.PUBLIC in CREATES[role]
        assert (Visibility.PRIVATE in CREATES[role]) is (role in READS_PRIVATE)
    assert CREATES[Role.ADMIRER] == {Visibility.PUBLIC, Visibility.PERSONAL}
