"""Schemathesis against the API's own OpenAPI document, in process: each generated request goes
through API Gateway's proxy event shape (`tests.support.apigw`) into the real handler, whose
workflow runs the real context-assembly steps on the embedded engines over a small legacy.

Valid and invalid requests (schemathesis' positive and negative modes): no 5xx, no exception
escaping the handler, every answer documented with its status and body shape, and the stored
records and graph unchanged by any of it (the API only reads).
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.generation import GenerationMode

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import AssembledContext, ContextRequest
from heirloom.domain.ingestion import IngestionPorts
from heirloom_dev.functions import LambdaContext
from heirloom_dev.loader import load_dataset
from tests.support import pipeline
from tests.support.apigw import wsgi_app
from tests.support.dataset import MiniDataset
from tests.support.fuzz import examples, snapshot
from tests.support.services import services_with
from tests.support.stack import _with_database, new_graph

pytestmark = pytest.mark.integration

HANDLER = Path(__file__).parents[2] / "functions" / "api" / "handler.py"
EXAMPLES = examples(60, 1000)
STATS: dict[str, int] = {}


def load_api() -> Any:
    spec = importlib.util.spec_from_file_location("api_fuzz_target", HANDLER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


class InProcessConnections:
    """The ConnectionsWorkflow port over the real steps (`tests.support.pipeline`)."""

    def __init__(self, services: Any):
        self.services = services

    def run(self, request: ConnectionsRequest) -> StoryConnections:
        return StoryConnections.model_validate(pipeline.connections(self.services, request))


class InProcessWorkflow:
    """The ContextWorkflow port over the real steps (`tests.support.pipeline`); a step that
    raises anything but a typed refusal surfaces as an error, which the API turns into a 5xx."""

    def __init__(self, services: Any):
        self.services = services

    def run(self, request: ContextRequest) -> AssembledContext:
        return AssembledContext.model_validate(pipeline.assemble(self.services, request))


@pytest.fixture(scope="module")
def api(local_stack, tmp_path_factory) -> Iterator[dict[str, Any]]:
    name = f"apifuzz_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db = PgDatabase(_with_database(local_stack.postgres_uri, name), embedding_dim=64)
    db.migrate()
    graph = new_graph(local_stack)
    embedder = HashingEmbedder(64)
    ports = IngestionPorts(stories=PgStoryStore(db), vectors=PgVectorIndex(db, model_id=embedder.model_id),
                           graph=graph, embedder=embedder, tokenizer=TiktokenTokenizer())  # fmt: skip
    mini = MiniDataset()
    load_dataset(ports, mini.write(tmp_path_factory.mktemp("mini")))
    services = services_with({"TRAVERSAL_BUDGET_MS": "10000"}, stories=ports.stories, vectors=ports.vectors,
                             graph=graph, embedder=embedder, tokenizer=ports.tokenizer)  # fmt: skip
    module = load_api()
    doc = json.loads(module.app.get_openapi_json_schema(title="Heirloom context API", version="1"))
    workflow, connections = InProcessWorkflow(services), InProcessConnections(services)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        # half the requests read the seeded legacy (and its public story), so the whole pipeline
        # runs on fuzzed input
        params = event.get("pathParameters") or {}
        for name, seeded in (("legacy_id", mini.legacy), ("story_id", mini.public_story)):
            if is_uuid(params.get(name)) and hash(event.get("body")) % 2:
                event["path"] = event["path"].replace(params[name], seeded)
                params[name] = seeded
        result: dict[str, Any] = module.handler(
            event, LambdaContext("Api"), services=services, workflow=workflow, connections=connections
        )
        STATS[str(result["statusCode"])] = STATS.get(str(result["statusCode"]), 0) + 1
        return result

    claims = {"sub": mini.creator, "cognito:username": "tom", "cognito:groups": "member"}
    inner = wsgi_app(invoke, claims)

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == "/openapi.json":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(doc).encode()]
        return inner(environ, start_response)

    before = snapshot(db, graph)
    yield {"app": app, "db": db, "graph": graph, "mini": mini}
    assert snapshot(db, graph) == before, "the API changed stored data"
    print("\napi fuzz responses by status:", json.dumps(dict(sorted(STATS.items()))))
    graph.delete_all()
    db.close()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/legacies/{legacy_id}/context"),
        ("POST", "/legacies/{legacy_id}/stories/{story_id}/connections"),
        ("POST", "/legacies/{legacy_id}/enrichment"),
        # conversation memory is off for the seeded legacy: 409 and nothing stored, or a 4xx
        ("POST", "/legacies/{legacy_id}/conversations/{conversation_id}/messages"),
        ("POST", "/legacies/{legacy_id}/conversations/{conversation_id}/story"),
        # the caller has no conversation there: an empty list, or 404 and nothing removed
        ("GET", "/legacies/{legacy_id}/conversations"),
        ("GET", "/legacies/{legacy_id}/conversations/{conversation_id}/facts"),
        ("DELETE", "/legacies/{legacy_id}/conversations/{conversation_id}"),
        ("DELETE", "/legacies/{legacy_id}/conversation-facts/{fact_id}"),
    ],
)
def test_no_request_makes_the_api_fail(api, method, path):
    # built here rather than with schemathesis.pytest.from_fixture, which reads a node attribute
    # pytest 9 no longer has
    schema = schemathesis.openapi.from_wsgi("/openapi.json", api["app"])
    operation = schema[path][method]
    cases = st.one_of(
        operation.as_strategy(mode) for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    )

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=cases)
    def run(case):
        response = case.call()
        assert response.status_code < 500, response.text[-2000:]
        if _future_as_of(case.body):  # the one rule the schema cannot state: a 400 with its reason
            assert response.status_code != 200, response.text[-2000:]
            if _valid_but_for_as_of(case):
                assert response.status_code == 400 and "future" in response.text, response.text[-2000:]
                return
            # refused for another fault of the request first: still a documented answer
        case.validate_response(response)

    run()


def _future_as_of(body: Any) -> bool:
    """A context body whose well-formed `as_of` lies in the future (refused: 400)."""
    from datetime import UTC, datetime

    value = body.get("as_of") if isinstance(body, dict) else None
    if not isinstance(value, str):
        return False
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return False
    return at.tzinfo is not None and at > datetime.now(UTC)


def _valid_but_for_as_of(case: Any) -> bool:
    """The request is valid apart from its `as_of` (so the future is the one reason to refuse it)."""
    from heirloom.domain.context_api import ContextBody

    try:
        uuid.UUID(str((case.path_parameters or {}).get("legacy_id")))
        ContextBody.model_validate({**case.body, "as_of": None})
    except ValueError:  # pydantic's ValidationError is one
        return False
    return True


# -- regressions: what the fuzzing found ------------------------------------------------------
def test_the_openapi_document_lists_every_answer_the_api_gives():
    doc = json.loads(load_api().app.get_openapi_json_schema(title="Heirloom context API", version="1"))
    responses = doc["paths"]["/legacies/{legacy_id}/context"]["post"]["responses"]
    assert {"200", "400", "403", "404"} <= set(responses)
    assert responses["400"]["content"]["application/json"]["schema"]["required"] == ["error", "reason"]


def post(api, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    from werkzeug.test import Client

    response = Client(api["app"]).post(path, json=body)
    return response.status_code, response.get_json()


def test_a_path_the_route_does_not_match_is_a_404_with_the_error_body(api):
    status, body = post(api, "/legacies/%15%F4%89%8C%84/context", {"query": "q", "persona": "family"})
    assert status == 404 and body["error"] == "NotFound"


def test_a_nul_in_the_query_is_a_400_not_a_failed_workflow(api):
    status, body = post(
        api, f"/legacies/{api['mini'].legacy}/context", {"query": "orchard\x00", "persona": "family"}
    )
    assert status == 400 and body["error"] == "InvalidRequest" and "query" in body["reason"]
