"""Questions about a linked legacy's subject (decision 0027): named, or through the asker's kin
word, they are `cross_legacy` ahead of time, place and open-question cues; only an active link
counts, and no story's content decides it."""

from __future__ import annotations

from uuid import uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import ContextRequest, EntityMatch, Intent, IntentAnalysisInput, QueryIntent
from heirloom.contracts.events import StoryEvent
from heirloom.contracts.records import (
    Legacy,
    Link,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    User,
)
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry
from heirloom.domain.intent import entity_features
from heirloom.domain.linked_subjects import linked_subjects, with_linked_subject
from heirloom.settings import Settings
from heirloom.steps import intent_analysis, story_events

# invented: Bram Okafor's legacy is asked; his wife Wilhelmina ("Mina") has her own, linked
HOME, HERS, OTHER = uuid4(), uuid4(), uuid4()
BRAM, MINA, KID, RUI, TOBIAS = (uuid4() for _ in range(5))
ASKER, AUTHOR = uuid4(), uuid4()


def person(pid, name, legacy, aliases=()):
    return Person(id=pid, legacy_id=legacy, name=name, aliases=aliases)


def family(a, b, detail):
    return Relationship(from_person_id=a, to_person_id=b, type=RelationshipType.FAMILY_OF, detail=detail)


def _services(status="active"):
    svc = memory_services()
    store = svc.stories
    for p in (
        person(BRAM, "Bram Okafor", HOME),
        person(KID, "Sunniva Okafor", HOME),
        person(MINA, "Wilhelmina Okafor", HERS, aliases=("Mina",)),
        person(TOBIAS, "Tobias Renn", OTHER),
    ):
        store.upsert_person(p)
    store.upsert_relationship(family(KID, BRAM, "father"))
    store.upsert_relationship(family(KID, MINA, "mother"))
    store.upsert_legacy(Legacy(id=HOME, name="Bram", subject_person_id=BRAM))
    store.upsert_legacy(Legacy(id=HERS, name="Mina", subject_person_id=MINA))
    store.upsert_legacy(Legacy(id=OTHER, name="Tobias", subject_person_id=TOBIAS))
    store.upsert_link(Link(id=uuid4(), legacy_a_id=HOME, legacy_b_id=HERS, status=status, share_mode="all"))
    store.upsert_link(
        Link(id=uuid4(), legacy_a_id=OTHER, legacy_b_id=HOME, status="revoked", share_mode="all")
    )
    store.upsert_user(User(id=ASKER, name="Sunniva", person_id=KID))
    store.upsert_member(Member(legacy_id=HOME, user_id=ASKER, role=Role.CREATOR))
    store.upsert_user(User(id=AUTHOR, name="Mina's sister", person_id=None))
    store.upsert_member(Member(legacy_id=HERS, user_id=AUTHOR, role=Role.CREATOR))
    return svc


@pytest.fixture
def services():
    return _services()


def intent_of(svc, query, persona="family"):
    request = ContextRequest(legacy_id=HOME, user_id=ASKER, persona=persona, query=query)
    return intent_analysis.run(IntentAnalysisInput(request=request), svc)


@pytest.mark.parametrize(
    "query",
    [
        "When did Mina leave Bergen, in 1962?",  # a nickname and a year
        "Where did Wilhelmina Okafor live in 1970?",  # the full name and a place question
        "When did my mother leave Bergen, in 1962?",  # the asker's kin word
        "Where did Mum grow up?",  # a kin word used as a name
    ],
)
def test_a_linked_subject_makes_the_question_cross_legacy(services, query):
    out = intent_of(services, query)
    assert out.intent is Intent.CROSS_LEGACY
    assert str(MINA) in {m.node_id for m in out.matches}


def test_without_the_linked_subject_the_cues_decide(services):
    assert intent_of(services, "When did Bram leave Bergen, in 1962?").intent is Intent.TEMPORAL


@pytest.mark.parametrize("status", ["revoked", "pending"])
def test_a_link_that_is_not_active_never_makes_it_cross_legacy(status):
    svc = _services(status)
    for query in ("When did Mina leave Bergen, in 1962?", "When did my mother leave Bergen, in 1962?"):
        assert intent_of(svc, query).intent is Intent.TEMPORAL
    # the revoked link's subject, named by his full name, is no one's linked subject
    assert intent_of(svc, "When did Tobias Renn leave Bergen, in 1962?").intent is not Intent.CROSS_LEGACY
    assert {p.id for p in linked_subjects(svc.stories, HOME)} == set()


def test_a_persona_that_stays_home_keeps_the_cues(services):
    assert (
        intent_of(services, "When did my mother leave Bergen, in 1962?", "colleague").intent
        is Intent.TEMPORAL
    )


def _story(legacy, title, content, visibility):
    at = "2024-05-01T00:00:00+00:00"
    story = {
        "id": str(uuid4()),
        "legacy_id": str(legacy),
        "author_user_id": str(AUTHOR),
        "title": title,
        "content": content,
        "visibility": visibility,
        "created_at": at,
        "updated_at": at,
    }
    return StoryEvent.model_validate(
        {
            "version": "0",
            "id": str(uuid4()),
            "source": Settings().workflow.event_source,
            "account": "123456789012",
            "time": at,
            "region": "us-east-1",
            "resources": [],
            "detail-type": "Story Created",
            "detail": {"schema_version": "1", "story": story},
        }
    )


def test_a_private_story_is_never_what_makes_it_cross_legacy(services):
    # the linked legacy's private story says who "Rui" is and that Mina is "Nan"; the label
    # reads the records (subjects, names, relationships), never a story
    secret = "Rui Tavares was Mina's first husband. The grandchildren call Mina Nan."
    story_events.run(_story(HERS, "Before Bram", secret, "private"), services)
    assert intent_of(services, "When did Nan leave Bergen, in 1962?").intent is Intent.TEMPORAL
    assert (
        intent_of(services, "When did Rui Tavares leave Bergen, in 1962?").intent is not Intent.CROSS_LEGACY
    )


def test_precedence_over_time_place_and_open_questions_only():
    mina = person(MINA, "Wilhelmina Okafor", HERS)
    match = EntityMatch(mention="Mina", node_id=str(MINA), label="Person", name=mina.name)
    for intent in (Intent.TEMPORAL, Intent.SPATIAL, Intent.GENERAL):
        out = with_linked_subject(QueryIntent(intent=intent, matches=(match,), confidence=0.9), [mina])
        assert (out.intent, out.confidence) == (Intent.CROSS_LEGACY, 0.9)
    for intent in (Intent.RELATIONAL, Intent.ENTITY_FOCUSED):  # how two got on; a named thing
        assert with_linked_subject(QueryIntent(intent=intent, matches=(match,)), [mina]).intent is intent
    # the asker's kin word is a reference, not a relation cue
    kin = with_linked_subject(QueryIntent(intent=Intent.RELATIONAL), [mina], [str(MINA)])
    assert kin.intent is Intent.CROSS_LEGACY
    # the same name as a node of the asked legacy is the same person
    twin = match.model_copy(update={"node_id": "another-node"})
    assert with_linked_subject(QueryIntent(intent=Intent.TEMPORAL, matches=(twin,)), [mina]).intent is (
        Intent.CROSS_LEGACY
    )
    assert (
        with_linked_subject(QueryIntent(intent=Intent.TEMPORAL, matches=(match,)), []).intent
        is Intent.TEMPORAL
    )


def test_the_learned_classifiers_linked_feature_takes_the_asker_kin():
    gazetteer = Gazetteer.build(
        [GazetteerEntry("n1", "Person", "Wilhelmina Okafor", ("Mina",), "linked", True)]
    )
    linked = 3  # FEATURE_NAMES.index("linked")
    assert entity_features("When did my mother leave?", gazetteer, "", "primary")[linked] == 0.0
    assert entity_features("When did my mother leave?", gazetteer, "", "primary", linked=True)[linked] == 1.0
    assert entity_features("When did Mina leave?", gazetteer, "", "primary")[linked] == 1.0
