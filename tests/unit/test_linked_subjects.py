"""A linked legacy's subject named through the asker's kin word ("what did my mother write") is
evidence for `cross_legacy` as their name is (decision 0027); an active or revoked link counts,
a pending one and a persona that stays home do not, and no story's content decides it."""

from __future__ import annotations

from uuid import uuid4

import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.memory import memory_services
from heirloom.contracts.context import ContextRequest, Intent, IntentAnalysisInput
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
from heirloom.domain.access_filter import scope_for
from heirloom.domain.gazetteer import Gazetteer, GazetteerEntry
from heirloom.domain.intent import entity_features
from heirloom.domain.intent_step import EmbeddingIntentClassifier, IntentRequest
from heirloom.domain.linked_subjects import linked_subjects, names_linked_subject
from heirloom.steps import intent_analysis, story_events
from tests.support.events import story_created

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
        "What did my mother write about Bergen in 1962?",  # the asker's kin word and a year
        "What did Mum remember about the storm in 1962?",  # a kin word used as a name
        "What did Mina write about Bergen in 1962?",  # named: as before
    ],
)
def test_a_linked_subjects_own_account_is_cross_legacy(services, query):
    out = intent_of(services, query)
    assert out.intent is Intent.CROSS_LEGACY
    assert str(MINA) in {m.node_id for m in out.matches}


def test_a_question_about_the_linked_subject_keeps_its_kind(services):
    # no account asked for: the cues decide, as the intent set and the datasets label them
    assert intent_of(services, "When did my mother leave Bergen, in 1962?").intent is Intent.TEMPORAL
    assert intent_of(services, "What did Bram write about Bergen in 1962?").intent is not Intent.CROSS_LEGACY


def test_a_pending_link_never_counts():
    svc = _services("pending")
    assert intent_of(svc, "What did my mother write about Bergen in 1962?").intent is not Intent.CROSS_LEGACY
    assert linked_subjects(svc.stories, HOME) == (TOBIAS,)  # the revoked link's subject only


def test_a_revoked_link_names_the_question_but_opens_nothing():
    svc = _services("revoked")
    out = intent_of(svc, "What did my mother write about Bergen in 1962?")
    assert out.intent is Intent.CROSS_LEGACY  # still a question about her own account
    scope = scope_for(svc.stories, ASKER, HOME)
    assert scope.legacy_ids == (HOME,)  # and the read scope has no grant for her legacy


def test_a_persona_that_stays_home_keeps_the_cues(services):
    query = "What did my mother write about Bergen in 1962?"
    assert intent_of(services, query, "colleague").intent is not Intent.CROSS_LEGACY


def test_a_private_story_is_never_what_makes_it_cross_legacy(services):
    # the linked legacy's private story says that Mina is "Nan" and who Rui was; the label reads
    # the records (links, subjects, names, relationships), never a story
    secret = "Rui Tavares was Mina's first husband. The grandchildren call Mina Nan."
    story_events.run(story_created(uuid4(), HERS, AUTHOR, "Before Bram", secret, "private"), services)
    assert intent_of(services, "What did Nan write about Bergen in 1962?").intent is not Intent.CROSS_LEGACY
    assert intent_of(services, "What did Rui Tavares write in 1962?").intent is not Intent.CROSS_LEGACY


def test_kin_resolving_to_a_linked_subject_is_told_apart(services):
    mina = services.stories.get_person(MINA)
    bram = services.stories.get_person(BRAM)
    assert names_linked_subject([mina], linked_subjects(services.stories, HOME))
    assert not names_linked_subject([bram], linked_subjects(services.stories, HOME))


def test_the_learned_classifiers_linked_feature_takes_the_asker_kin():
    gazetteer = Gazetteer.build(
        [GazetteerEntry("n1", "Person", "Wilhelmina Okafor", ("Mina",), "linked", True)]
    )
    linked = 3  # FEATURE_NAMES.index("linked")
    assert entity_features("When did my mother leave?", gazetteer, "", "primary")[linked] == 0.0
    assert entity_features("When did my mother leave?", gazetteer, "", "primary", linked=True)[linked] == 1.0
    assert entity_features("When did Mina leave?", gazetteer, "", "primary")[linked] == 1.0


def test_the_learned_classifier_is_given_the_asker_kin_as_its_linked_feature():
    seen: list[tuple[float, ...]] = []

    class Spy:
        def predict(self, vector, feats, query, exclude=(), masked=""):
            seen.append(feats)
            return Intent.CROSS_LEGACY, 0.9

    class Models:
        def get(self, embedder):
            return Spy()

    gazetteer = Gazetteer.build([GazetteerEntry("n1", "Person", "Bram Okafor", (), "primary")])
    learned = EmbeddingIntentClassifier(HashingEmbedder(), Models())
    for linked_kin in (False, True):
        query = "What did my mother write?"
        learned.classify(IntentRequest(query, (), gazetteer, "Bram Okafor", "primary", linked_kin=linked_kin))
    assert [f[3] for f in seen] == [0.0, 1.0]
