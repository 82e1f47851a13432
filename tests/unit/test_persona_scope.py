"""`include_cross_legacy: false` holds on every path: vector search, the access filter (which
also gates graph hits and facts), the asker's relatives and the connections flow. The colleague
persona is the one that stays in its legacy; the family persona reaches the active link."""

from __future__ import annotations

from uuid import uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.connections import ConnectionsPlanInput, ConnectionsPlanOutput, ConnectionsRequest
from heirloom.contracts.context import (
    AccessFilterInput,
    Candidate,
    ContextRequest,
    GraphBranch,
    GraphHit,
    GraphResults,
    Intent,
    IntentAnalysisInput,
    QueryIntent,
    VectorSearchInput,
)
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
from heirloom.domain.asker import asker_kin
from heirloom.domain.personas import load_personas
from heirloom.errors import NotFound
from heirloom.services import Services
from heirloom.steps import access_filter, connections_plan, intent_analysis, story_events, vector_search
from tests.support.events import story_created

LEGACY, LINKED = uuid4(), uuid4()
SUBJECT, OPA, ME, USER = uuid4(), uuid4(), uuid4(), uuid4()
HOME_STORY, LINKED_STORY = uuid4(), uuid4()


@pytest.fixture
def svc() -> Services:
    services = memory_services()
    store = services.stories
    for pid, legacy, name in ((SUBJECT, LEGACY, "Rosa Silva"), (OPA, LINKED, "Henk de Vries")):
        store.upsert_person(Person(id=pid, legacy_id=legacy, name=name))
    store.upsert_person(Person(id=ME, legacy_id=LEGACY, name="Ana Silva"))
    store.upsert_relationship(
        Relationship(
            from_person_id=ME, to_person_id=OPA, type=RelationshipType.FAMILY_OF, detail="grandfather"
        )
    )
    store.upsert_legacy(Legacy(id=LEGACY, name="Rosa", subject_person_id=SUBJECT))
    store.upsert_legacy(Legacy(id=LINKED, name="Henk", subject_person_id=OPA))
    store.upsert_link(
        Link(id=uuid4(), legacy_a_id=LEGACY, legacy_b_id=LINKED, status="active", share_mode="all")
    )
    store.upsert_user(User(id=USER, name="Ana", person_id=ME))
    for legacy in (LEGACY, LINKED):
        store.upsert_member(Member(legacy_id=legacy, user_id=USER, role=Role.CREATOR))
    story_events.run(
        story_created(HOME_STORY, LEGACY, USER, "The bakery", "Rosa ran the bakery on the harbour."), services
    )
    story_events.run(
        story_created(LINKED_STORY, LINKED, USER, "The harbour", "Henk sailed out of the harbour."), services
    )
    return services


def _request(persona: str, query: str = "Tell me about the harbour") -> ContextRequest:
    return ContextRequest(legacy_id=LEGACY, user_id=USER, persona=persona, query=query)  # type: ignore[arg-type]


def test_the_personas_disagree_on_linked_legacies():
    personas = load_personas()
    assert personas["colleague"].traversal.include_cross_legacy is False
    assert personas["family"].traversal.include_cross_legacy is True


@pytest.mark.parametrize(("persona", "reaches"), [("family", True), ("colleague", False)])
def test_vector_search_reads_linked_legacies_only_for_a_persona_that_includes_them(svc, persona, reaches):
    hits = vector_search.run(VectorSearchInput(request=_request(persona)), svc).hits
    legacies = {h.legacy_id for h in hits}
    assert LEGACY in legacies
    assert (LINKED in legacies) is reaches


@pytest.mark.parametrize(("persona", "reaches"), [("family", True), ("colleague", False)])
def test_the_access_filter_drops_linked_graph_hits_whatever_the_intent(svc, persona, reaches):
    request = _request(persona)
    # a cross_legacy intent whose traversal (or a stale cache) brought a linked-legacy story
    graph = GraphBranch(
        intent=QueryIntent(intent=Intent.CROSS_LEGACY, confidence=0.9),
        graph=GraphResults(
            hits=(
                GraphHit(story_id=LINKED_STORY, template="cross_legacy", hops=1),
                GraphHit(story_id=HOME_STORY, template="general", hops=1),
            )
        ),
    )
    vectors = vector_search.run(VectorSearchInput(request=request), svc)
    filtered = access_filter.run(AccessFilterInput(request=request, branches=(graph, vectors)), svc)
    stories = {c.story_id for c in filtered.candidates if isinstance(c, Candidate)}
    assert HOME_STORY in stories
    assert (LINKED_STORY in stories) is reaches


def test_the_askers_relatives_stay_in_the_legacy_when_the_persona_does(svc):
    store = svc.stories
    found = asker_kin("What did my grandfather build?", USER, LEGACY, store)
    assert [k.person.id for k in found] == [OPA]
    assert asker_kin("What did my grandfather build?", USER, LEGACY, store, cross_legacy=False) == []
    for persona, expected in (("family", True), ("colleague", False)):
        intent = intent_analysis.run(
            IntentAnalysisInput(request=_request(persona, "What did my grandfather build?")), svc
        )
        assert (str(OPA) in {m.node_id for m in intent.matches}) is expected


def test_connections_open_a_linked_story_only_for_a_persona_that_reaches_it(svc):
    def plan(persona: str) -> ConnectionsPlanOutput:
        conn = ConnectionsRequest(
            kind="opening", legacy_id=LEGACY, user_id=USER, persona=persona, story_id=LINKED_STORY
        )  # type: ignore[arg-type]
        return connections_plan.run(ConnectionsPlanInput(connections=conn), svc)

    assert plan("family").story_title == "The harbour"
    with pytest.raises(NotFound):
        plan("colleague")
