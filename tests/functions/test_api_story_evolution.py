"""The API handler's story-evolution routes with the sample event's identity: opening
connections of a story and pre-summary enrichment, their 4xx, and their OpenAPI description."""

import importlib.util
import json
import uuid
from pathlib import Path

import pytest

from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.errors import AccessDenied, NotFound
from heirloom.services import Services
from heirloom.settings import settings_from_env
from heirloom_dev.functions import LambdaContext, load_handler

ROOT = Path(__file__).parents[2]
EVENT = json.loads((ROOT / "events" / "api.json").read_text())
LEGACY = EVENT["pathParameters"]["legacy_id"]
SUB = EVENT["requestContext"]["authorizer"]["claims"]["sub"]
STORY = "ef9db094-e9b7-4143-a4c1-734f87f2cfc2"
MESSAGES = [{"role": "user", "content": "Uncle Ray played the drums."}]


class FakeConnections:
    """An in-memory ConnectionsWorkflow: records requests; answers or raises."""

    def __init__(self, error=None):
        self.requests: list[ConnectionsRequest] = []
        self.error = error

    def run(self, request):
        self.requests.append(request)
        if self.error:
            raise self.error
        return StoryConnections(
            kind=request.kind, story_id=request.story_id, formatted=f"{request.kind} block"
        )


def opening(story=STORY, body=None, legacy=LEGACY):
    return _event(f"/legacies/{legacy}/stories/{story}/connections", "/legacies/{legacy_id}/stories/{story_id}/connections",
                  {"legacy_id": legacy, "story_id": story}, {} if body is None else body)  # fmt: skip


def enrichment(body, legacy=LEGACY):
    return _event(
        f"/legacies/{legacy}/enrichment", "/legacies/{legacy_id}/enrichment", {"legacy_id": legacy}, body
    )


def _event(path, resource, params, body):
    event = json.loads(json.dumps(EVENT))
    event.update(path=path, resource=resource, pathParameters=params, body=json.dumps(body))
    return event


def call(event, workflow=None):
    workflow = workflow or FakeConnections()
    services = Services(settings_from_env({}))
    response = load_handler("api")(event, LambdaContext("Api"), services=services, connections=workflow)
    return response["statusCode"], json.loads(response["body"]), workflow


def test_opening_connections_run_the_workflow_for_the_story_as_the_authorised_user():
    status, body, wf = call(opening(body={"persona": "family"}))
    assert status == 200 and body["formatted"] == "opening block" and body["story_id"] == STORY
    (request,) = wf.requests
    assert (request.kind, str(request.user_id), str(request.legacy_id)) == ("opening", SUB, LEGACY)
    assert str(request.story_id) == STORY and request.persona == "family"


def test_enrichment_runs_the_workflow_with_the_conversation():
    surfaced = str(uuid.uuid4())
    status, body, wf = call(
        enrichment({"messages": MESSAGES, "surfaced_story_ids": [surfaced], "story_id": STORY})
    )
    assert status == 200 and body["kind"] == "enrichment"
    (request,) = wf.requests
    assert request.kind == "enrichment" and request.messages[0].content == "Uncle Ray played the drums."
    assert [str(s) for s in request.surfaced_story_ids] == [surfaced] and str(request.story_id) == STORY
    assert str(request.user_id) == SUB  # from the token, never the body


@pytest.mark.parametrize("error,status", [(AccessDenied("the story is not readable by this user"), 403),
                                          (NotFound("story does not exist in this legacy"), 404)])  # fmt: skip
def test_workflow_refusals_become_4xx_with_reasons(error, status):
    for event in (opening(), enrichment({"messages": MESSAGES})):
        code, out, _ = call(event, FakeConnections(error))
        assert code == status and out == {"error": type(error).__name__, "reason": str(error)}


@pytest.mark.parametrize(
    "event,field",
    [
        (opening(story="not-a-uuid"), "story_id"),
        (opening(body={"persona": "stranger"}), "persona"),
        (opening(body={"user_id": SUB}), "user_id"),
        (enrichment({"messages": []}), "messages"),
        (enrichment({"messages": MESSAGES * 21}), "messages"),
        (enrichment({}), "messages"),
        (enrichment({"messages": MESSAGES, "surfaced_story_ids": ["x"]}), "surfaced_story_ids"),
    ],
)
def test_bad_input_is_400_and_never_reaches_the_workflow(event, field):
    status, out, wf = call(event)
    assert status == 400 and out["error"] == "InvalidRequest" and field in out["reason"]
    assert wf.requests == []


def test_no_identity_is_403():
    event = opening()
    event["requestContext"]["authorizer"] = None
    status, out, wf = call(event)
    assert out["error"] == "AccessDenied"
    assert status == 403 and wf.requests == []


def test_the_openapi_document_describes_the_story_evolution_routes():
    spec = importlib.util.spec_from_file_location(
        "api_openapi_evolution", ROOT / "functions" / "api" / "handler.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = json.loads(module.app.get_openapi_json_schema(title="Heirloom context API", version="1"))
    for path, body in (("/legacies/{legacy_id}/stories/{story_id}/connections", "OpeningBody"),
                       ("/legacies/{legacy_id}/enrichment", "EnrichmentBody")):  # fmt: skip
        post = doc["paths"][path]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(body)
        assert {"200", "400", "403", "404", "503", "504"} <= set(post["responses"])
        ok = post["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["$ref"].endswith("StoryConnections")
    schemas = doc["components"]["schemas"]
    assert schemas["EnrichmentBody"]["properties"]["messages"]["maxItems"] == 20
    assert {"entities", "lines", "formatted"} <= set(schemas["StoryConnections"]["properties"])
    context = schemas["ContextResponse"]["properties"]
    assert (
        "suggestion" in context and schemas["ContextBody"]["properties"]["elicitation"]["type"] == "boolean"
    )


class _StepFunctions:
    """start_sync_execution's answer, and the input it was given."""

    def __init__(self, response):
        self.response, self.inputs = response, []

    def start_sync_execution(self, **kwargs):
        self.inputs.append((kwargs["stateMachineArn"], json.loads(kwargs["input"])))
        return self.response


def test_the_step_functions_adapter_runs_story_connections_and_maps_its_refusals():
    from heirloom.adapters.stepfunctions import StepFunctionsConnectionsWorkflow

    arn = "arn:aws:states:us-east-1:1:stateMachine:Heirloom-StoryConnections"
    answer = StoryConnections(kind="opening", story_id=STORY, formatted="block")
    client = _StepFunctions({"status": "SUCCEEDED", "output": answer.model_dump_json()})
    status, body, _ = call(opening(), StepFunctionsConnectionsWorkflow(arn, client))
    assert status == 200 and body["formatted"] == "block"
    ((called, given),) = client.inputs
    assert (
        called == arn
        and given["connections"]["story_id"] == STORY
        and given["connections"]["kind"] == "opening"
    )
    cause = json.dumps(
        {"errorType": "AccessDenied", "errorMessage": "the story is not readable by this user"}
    )
    refused = _StepFunctions({"status": "FAILED", "error": "AccessDenied", "cause": cause})
    status, body, _ = call(opening(), StepFunctionsConnectionsWorkflow(arn, refused))
    assert status == 403 and body == {
        "error": "AccessDenied",
        "reason": "the story is not readable by this user",
    }
    timed_out = _StepFunctions({"status": "TIMED_OUT"})
    status, body, _ = call(
        enrichment({"messages": MESSAGES}), StepFunctionsConnectionsWorkflow(arn, timed_out)
    )
    assert status == 504 and body["error"] == "WorkflowTimedOut"
