"""Pronouns of a follow-up question resolved with the gender the records (relationships, aliases)
or the legacy's public stories give, through the IntentAnalysis step on the in-memory adapters."""

from __future__ import annotations

from uuid import uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import ContextRequest, IntentAnalysisInput, Message, QueryIntent
from heirloom.contracts.records import Legacy, Member, Person, Relationship, RelationshipType, Role, User
from heirloom.services import Services
from heirloom.steps import intent_analysis, story_events
from tests.support.events import story_created
from tests.unit.test_persona_scope import USER

LEGACY = uuid4()
SUBJECT, TOMAS, INES, LEO = (uuid4() for _ in range(4))


@pytest.fixture
def svc() -> Services:
    services = memory_services()
    store = services.stories
    for pid, name in (
        (SUBJECT, "Rosa Silva"),
        (TOMAS, "Tomás Silva"),
        (INES, "Inês Silva"),
        (LEO, "Leo Costa"),
    ):
        store.upsert_person(Person(id=pid, legacy_id=LEGACY, name=name))
    for to, detail in ((TOMAS, "son"), (INES, "daughter")):  # the kin word records the gender
        store.upsert_relationship(
            Relationship(
                from_person_id=SUBJECT, to_person_id=to, type=RelationshipType.FAMILY_OF, detail=detail
            )
        )
    store.upsert_legacy(Legacy(id=LEGACY, name="Rosa", subject_person_id=SUBJECT))
    store.upsert_user(User(id=USER, name="Ana"))
    store.upsert_member(Member(legacy_id=LEGACY, user_id=USER, role=Role.CREATOR))
    return services


def _intent(svc: Services, query: str, said: str) -> QueryIntent:
    request = ContextRequest(
        legacy_id=LEGACY,
        user_id=USER,
        persona="family",
        query=query,
        history=(Message(role="user", content=said),),
    )
    return intent_analysis.run(IntentAnalysisInput(request=request), svc)


def _people(intent: QueryIntent) -> list[str]:
    return [m.node_id for m in intent.matches if m.label == "Person"]


def test_the_recorded_relationships_give_the_gender(svc):
    assert _people(_intent(svc, "What did he bring?", "Tomás and Inês came for lunch.")) == [str(TOMAS)]
    assert _people(_intent(svc, "What did she bring?", "Inês and Tomás came for lunch.")) == [str(INES)]


def test_a_person_of_unknown_gender_leaves_the_pronoun_undecided_until_a_story_tells(svc):
    undecided = _intent(svc, "Did she stay?", "Inês met Leo at the station.")
    assert _people(undecided) == [] and undecided.notes
    # a public story uses "He" for Leo: he cannot be "she"
    story_events.run(
        story_created(
            uuid4(), LEGACY, USER, "The roof", "Leo Costa fixed the roof in 1970. He never charged."
        ),
        svc,
    )
    svc.gazetteers._items.clear()  # rebuilt, as after the cache ttl
    decided = _intent(svc, "Did she stay?", "Inês met Leo at the station.")
    assert _people(decided) == [str(INES)] and decided.notes == ()
