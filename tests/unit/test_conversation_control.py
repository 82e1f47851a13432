"""The conversation-control rules (docs/decisions/0021) over the in-memory ports: a member's
own conversations alone, memory off keeping facts out of `own_facts`, the story visibility a
role may create, and a leaving member's memory forgotten by `ingestion.remove_member`."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import ContextRequest, Intent, QueryIntent
from heirloom.contracts.conversation import ConversationStoryBody
from heirloom.contracts.records import Legacy, Member, Person, Role, User, Visibility
from heirloom.domain import ingestion
from heirloom.domain.conversation_memory import (
    ConversationPorts,
    conversations_for,
    delete_conversation,
    delete_fact,
    facts_for,
    own_facts,
    story_from_conversation,
)
from heirloom.errors import AccessDenied, NotFound
from tests.support.conversations import plant

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def world():
    services = memory_services()
    legacy, subject = uuid4(), uuid4()
    services.stories.upsert_legacy(Legacy(id=legacy, name="Ada", subject_person_id=subject))
    services.stories.upsert_person(Person(id=subject, legacy_id=legacy, name="Ada Marsh"))
    users = {}
    for role in Role:
        users[role] = uuid4()
        services.stories.upsert_user(User(id=users[role], name=role.value))
        services.stories.upsert_member(Member(legacy_id=legacy, user_id=users[role], role=role))
    services.conversations.set_memory(legacy, True)
    ports = ConversationPorts(stories=services.stories, conversations=services.conversations)
    return services, ports, legacy, users


def test_every_role_sees_and_deletes_its_own_alone(world):
    _, ports, legacy, users = world
    planted = {
        role: plant(ports.conversations, legacy, user, f"T{role.value}", T0) for role, user in users.items()
    }
    for role, user in users.items():
        assert [c.conversation_id for c in conversations_for(ports, legacy, user).conversations] == [
            planted[role][0]
        ]
        for other, (cid, fid) in planted.items():
            if other is role:
                continue
            with pytest.raises(NotFound):
                facts_for(ports, legacy, user, cid)
            with pytest.raises(NotFound):
                delete_conversation(ports, legacy, user, cid)
            with pytest.raises(NotFound):
                delete_fact(ports, legacy, user, fid)
    cid, fid = planted[Role.ADMIRER]
    admirer = users[Role.ADMIRER]
    assert [f.target for f in facts_for(ports, legacy, admirer, cid).facts] == ["Tadmirer"]
    assert delete_fact(ports, legacy, admirer, fid).conversation_id == cid
    assert facts_for(ports, legacy, admirer, cid).facts == ()
    assert delete_conversation(ports, legacy, admirer, cid).messages == 1
    with pytest.raises(NotFound):
        facts_for(ports, legacy, admirer, cid)
    with pytest.raises(AccessDenied):
        conversations_for(ports, legacy, uuid4())  # not a member


def test_memory_off_keeps_facts_out_of_own_facts(world):
    services, ports, legacy, users = world
    plant(ports.conversations, legacy, users[Role.ADVOCATE], "Tom Reed", T0)
    request = ContextRequest(
        legacy_id=legacy, user_id=users[Role.ADVOCATE], persona="biographer", query="Ada?"
    )
    intent = QueryIntent(intent=Intent.RELATIONAL, confidence=1.0)
    assert [f.object for f in own_facts(services.conversations, request, intent, 5)] == ["Tom Reed"]
    services.conversations.set_memory(legacy, False)
    assert own_facts(services.conversations, request, intent, 5) == ()
    assert conversations_for(ports, legacy, users[Role.ADVOCATE]).conversations[0].facts == 1  # kept


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("visibility", list(Visibility))
def test_a_story_takes_a_visibility_the_role_reads(world, role, visibility):
    _, ports, legacy, users = world
    cid, _ = plant(ports.conversations, legacy, users[role], "Tom Reed", T0)
    body = ConversationStoryBody(title="Ada", visibility=visibility)
    if role is Role.ADMIRER and visibility is Visibility.PRIVATE:
        with pytest.raises(AccessDenied, match="may not create a private story"):
            story_from_conversation(ports, legacy, users[role], cid, body)
        assert ports.stories.stories_of(legacy) == []
    else:
        made = story_from_conversation(ports, legacy, users[role], cid, body)
        assert made.visibility is visibility
        assert [s.visibility for s in ports.stories.stories_of(legacy)] == [visibility]


def test_a_removed_member_is_forgotten_and_a_skipped_removal_forgets_nothing(world):
    services, ports, legacy, users = world
    leaving, staying = users[Role.ADMIRER], users[Role.ADVOCATE]
    cid, _ = plant(ports.conversations, legacy, leaving, "Tom Reed", T0)
    kept, _ = plant(ports.conversations, legacy, staying, "Tom Reed", T0)
    assert services.ingestion.conversations is services.conversations
    ingestion.remove_member(services.ingestion, legacy, leaving)
    assert services.conversations.messages(cid) == [] and len(services.conversations.messages(kept)) == 1
    later = datetime(2026, 2, 1, tzinfo=UTC)
    services.stories.upsert_member(Member(legacy_id=legacy, user_id=leaving, role=Role.ADMIRER), later)
    again, _ = plant(ports.conversations, legacy, leaving, "Tom Reed", T0)
    ingestion.remove_member(services.ingestion, legacy, leaving, datetime(2026, 1, 15, tzinfo=UTC))
    assert services.stories.role_of(leaving, legacy) is Role.ADMIRER  # the older removal skipped
    assert len(services.conversations.messages(again)) == 1
