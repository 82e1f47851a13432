"""Every step's `run`, on the in-memory adapters (heirloom.adapters.memory): no engine, no socket.

One legacy with a public and a personal story, a member who may read the public one and an
author who may read both; the stories go in through StoryEvents and the ingestion steps, the
question goes through the context steps in the workflow's order."""

from __future__ import annotations

import json
from uuid import UUID, uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.connections import (
    ConnectionsAssembleInput,
    ConnectionsPlanInput,
    ConnectionsRequest,
    StoryConnections,
)
from heirloom.contracts.context import (
    AccessFilterInput,
    AssembledContext,
    ContextRequest,
    GraphTraversalInput,
    IntentAnalysisInput,
    RankAssembleInput,
    VectorSearchInput,
)
from heirloom.contracts.ingestion import (
    BackfillPlanInput,
    BackfillRequest,
    GraphSyncInput,
    IngestFailure,
    IngestRequest,
)
from heirloom.contracts.records import Legacy, Member, Person, Role, User
from heirloom.domain.context_api import ContextBody, ContextCall
from heirloom.errors import AccessDenied, NotFound
from heirloom.services import Services
from heirloom.settings import Settings
from heirloom.steps import (
    access_filter,
    api,
    backfill_plan,
    chunk_embed,
    connections_assemble,
    connections_plan,
    extract_entities,
    graph_sync,
    graph_traversal,
    ingest_failed,
    ingest_object,
    intent_analysis,
    rank_assemble,
    story_events,
    vector_search,
)
from tests.support.events import story_created

LEGACY, SUBJECT, AUTHOR, READER = uuid4(), uuid4(), uuid4(), uuid4()
PUBLIC, PERSONAL = uuid4(), uuid4()
SOURCE = Settings().workflow.event_source


@pytest.fixture
def svc() -> Services:
    services = memory_services()
    store = services.stories
    store.upsert_person(Person(id=SUBJECT, legacy_id=LEGACY, name="Edith Marlowe"))
    store.upsert_legacy(Legacy(id=LEGACY, name="Edith", subject_person_id=SUBJECT))
    for user, role in ((AUTHOR, Role.CREATOR), (READER, Role.ADMIRER)):
        store.upsert_user(User(id=user, name=str(role)))
        store.upsert_member(Member(legacy_id=LEGACY, user_id=user, role=role))
    stories = (
        (PUBLIC, "The orchard", "Edith planted the apple orchard behind the farmhouse in 1952.", "public"),
        (PERSONAL, "My diary", "The orchard letters I never sent are in the blue tin box.", "personal"),
    )
    for sid, title, content, visibility in stories:
        applied = story_events.run(story_created(sid, LEGACY, AUTHOR, title, content, visibility), services)
        assert applied.change == "created"
    return services


def _context(svc: Services, user: UUID, query: str = "Tell me about the orchard") -> AssembledContext:
    request = ContextRequest(legacy_id=LEGACY, user_id=user, persona="biographer", query=query)
    intent = intent_analysis.run(IntentAnalysisInput(request=request), svc)
    vectors = vector_search.run(VectorSearchInput(request=request), svc)
    graph = graph_traversal.run(GraphTraversalInput(request=request, intent=intent), svc)
    filtered = access_filter.run(AccessFilterInput(request=request, branches=(graph, vectors)), svc)
    return rank_assemble.run(RankAssembleInput(request=request, filtered=filtered), svc)


def test_story_events_store_and_index_the_stories_inline(svc):
    assert {s.id for s in svc.stories.stories_of(LEGACY)} == {PUBLIC, PERSONAL}
    assert svc.vectors.chunks_of(PUBLIC) and svc.vectors.chunks_of(PERSONAL)


def test_the_context_steps_give_each_user_what_they_may_read(svc):
    author = _context(svc, AUTHOR)
    assert {s.story_id for s in author.metadata.sources} == {PUBLIC, PERSONAL}
    reader = _context(svc, READER)
    assert {s.story_id for s in reader.metadata.sources} == {PUBLIC}
    assert "blue tin box" not in reader.formatted_context and "apple orchard" in reader.formatted_context


def test_a_non_member_is_refused_by_the_access_filter(svc):
    with pytest.raises(AccessDenied):
        _context(svc, uuid4())


def test_the_ingestion_steps_find_the_stories_up_to_date(svc):
    request = IngestRequest(story_id=PUBLIC)
    assert chunk_embed.run(request, svc).status == "up_to_date"
    extracted = extract_entities.run(request, svc)
    assert extracted.status == "up_to_date"  # no extractor configured in memory
    assert graph_sync.run(GraphSyncInput(story_id=PUBLIC, results=(extracted,)), svc).status == "up_to_date"
    gone = IngestRequest(story_id=uuid4())
    assert chunk_embed.run(gone, svc).status == "deleted"


def test_backfill_plans_the_stories_whose_index_is_behind(svc):
    svc.vectors.delete_chunks(PERSONAL)
    page = backfill_plan.run(BackfillPlanInput(request=BackfillRequest()), svc)
    assert page.story_ids == (PERSONAL,) and page.done


def test_a_failure_is_recorded_for_replay(svc):
    recorded = ingest_failed.run(IngestFailure(story_id=PUBLIC, error="GraphUnavailable"), svc)
    assert recorded.recorded and svc.stories.failures == [(PUBLIC, "GraphUnavailable", "")]


def test_an_imported_object_is_stored_and_a_bad_one_rejected(svc):
    from aws_lambda_powertools.utilities.parser.models import S3Model

    body = (
        f"---\nlegacy: {LEGACY}\nauthor: {AUTHOR}\ntitle: Sunday dinner\nvisibility: public\n---\n"
        "Every Sunday the whole family came for dinner."
    )
    svc.objects.objects[("imports", "a.md")] = body.encode()
    svc.objects.objects[("imports", "b.md")] = b"no front matter"
    record = {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2024-05-01T00:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "x"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "r", "x-amz-id-2": "i"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "c",
            "bucket": {
                "name": "imports",
                "ownerIdentity": {"principalId": "x"},
                "arn": "arn:aws:s3:::imports",
            },
            "object": {"key": "a.md", "size": 1, "eTag": "e", "sequencer": "s"},
        },
    }
    second = json.loads(json.dumps(record))
    second["s3"]["object"]["key"] = "b.md"
    records = S3Model.model_validate({"Records": [record, second]}).Records
    out = ingest_object.run(records, svc)
    assert [(r.key, r.status) for r in out.results] == [("a.md", "imported"), ("b.md", "rejected")]
    assert any(s.title == "Sunday dinner" for s in svc.stories.stories_of(LEGACY))


def test_the_api_step_asks_the_workflow_and_refuses_debug_to_non_admins(svc):
    class Workflow:
        def run(self, request: ContextRequest) -> AssembledContext:
            return _context(svc, request.user_id, request.query)

    call = ContextCall(
        body=ContextBody(persona="biographer", query="the orchard"), legacy_id=LEGACY, user_id=READER
    )
    answer = api.run(call, svc, Workflow())
    assert [s.story_id for s in answer.sources] == [PUBLIC]
    with pytest.raises(AccessDenied):
        api.run(call.model_copy(update={"debug": True}), svc, Workflow())


def _connections(svc: Services, user: UUID, story: UUID) -> StoryConnections:
    conn = ConnectionsRequest(kind="opening", legacy_id=LEGACY, user_id=user, story_id=story)
    planned = connections_plan.run(ConnectionsPlanInput(connections=conn), svc)
    request = planned.request
    assert request.purpose == "connections" and request.linked_story_id == story
    intent = intent_analysis.run(IntentAnalysisInput(request=request), svc)
    graph = graph_traversal.run(GraphTraversalInput(request=request, intent=intent), svc)
    filtered = access_filter.run(AccessFilterInput(request=request, branches=(graph,)), svc)
    data = ConnectionsAssembleInput(connections=conn, request=request, story_title=planned.story_title,
                                    filtered=filtered)  # fmt: skip
    return connections_assemble.run(data, svc)


def test_the_connections_steps_refuse_a_story_the_user_may_not_read(svc):
    mine = _connections(svc, AUTHOR, PERSONAL)
    assert mine.story_title == "My diary" and mine.kind == "opening"
    with pytest.raises(NotFound):  # as if it did not exist
        _connections(svc, READER, PERSONAL)
    with pytest.raises(NotFound):
        _connections(svc, READER, uuid4())


def test_elicitation_ends_the_context_with_the_suggestion_directive(svc):
    request = ContextRequest(legacy_id=LEGACY, user_id=READER, persona="biographer", query="the orchard",
                             elicitation=True)  # fmt: skip
    intent = intent_analysis.run(IntentAnalysisInput(request=request), svc)
    vectors = vector_search.run(VectorSearchInput(request=request), svc)
    graph = graph_traversal.run(GraphTraversalInput(request=request, intent=intent), svc)
    filtered = access_filter.run(AccessFilterInput(request=request, branches=(graph, vectors)), svc)
    out = rank_assemble.run(RankAssembleInput(request=request, filtered=filtered), svc)
    assert out.suggestion is None  # no graph here: nothing connects to the message
    assert out.formatted_context.rstrip().endswith(
        "when that section is present, and none when it is absent."
    )
    assert "## Suggested Connection" not in out.formatted_context
