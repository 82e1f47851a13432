"""The API handler with its sample event: identity from the authorizer, 4xx with reasons."""

import base64
import json
import uuid
from pathlib import Path

import pytest

from heirloom.contracts.context import AssembledContext, ContextMetadata, QueryIntent, SourceInfo
from heirloom.errors import AccessDenied, NotFound
from heirloom.services import Services
from heirloom.settings import settings_from_env
from heirloom_dev.functions import LambdaContext, load_handler

EVENT = json.loads((Path(__file__).parents[2] / "events" / "api.json").read_text())


class FakeWorkflow:
    """An in-memory ContextWorkflow: records requests, answers from the request it got."""

    def __init__(self, error=None):
        self.requests = []
        self.error = error

    def run(self, request):
        self.requests.append(request)
        if self.error:
            raise self.error
        story = uuid.uuid5(uuid.NAMESPACE_URL, request.query)
        return AssembledContext(
            formatted_context=f"context for {request.query}",
            ranked_story_ids=(story,),
            metadata=ContextMetadata(
                intent=QueryIntent(),
                sources=(
                    SourceInfo(
                        story_id=story, title="T", legacy_id=request.legacy_id, source="embedding", score=0.5
                    ),
                ),
                token_budget=request.token_budget,
                tokens_used=7,
            ),
        )


def call(event=EVENT, workflow=None, **changes):
    event = json.loads(json.dumps(event))
    for key, value in changes.items():
        event[key] = value
    workflow = workflow or FakeWorkflow()
    services = Services(settings_from_env({}))
    response = load_handler("api")(event, LambdaContext("Api"), services=services, workflow=workflow)
    return response["statusCode"], json.loads(response["body"]), workflow


def test_sample_event_runs_the_workflow_as_the_authorised_user():
    status, body, wf = call()
    assert status == 200
    assert body["context"] == "context for What happened to the punch bowl at the wedding?"
    assert body["tokens"] == 7 and body["debug"] is None and len(body["sources"]) == 1
    (request,) = wf.requests
    assert str(request.user_id) == EVENT["requestContext"]["authorizer"]["claims"]["sub"]
    assert request.persona == "family" and request.token_budget == 4000


def test_a_user_id_in_the_body_is_refused_not_trusted():
    body = json.loads(EVENT["body"]) | {"user_id": str(uuid.uuid4())}
    status, out, wf = call(body=json.dumps(body))
    assert status == 400 and "user_id" in out["reason"] and wf.requests == []


@pytest.mark.parametrize(
    "body,field",
    [
        ({"query": "", "persona": "family"}, "query"),
        ({"query": "x" * 2001, "persona": "family"}, "query"),
        ({"query": " \n\t ", "persona": "family"}, "query"),
        ({"query": "hi", "persona": "pirate"}, "persona"),
        ({"query": "hi", "persona": "family", "token_budget": 100}, "token_budget"),
        ({"query": "hi", "persona": "family", "history": [{"role": "system", "content": "x"}]}, "history"),
    ],
)
def test_bad_bodies_are_400_with_the_field(body, field):
    status, out, wf = call(body=json.dumps(body))
    assert status == 400 and field in out["reason"] and wf.requests == []


def test_debug_needs_an_admin_claim():
    status, out, _ = call(queryStringParameters={"debug": "true"})
    assert status == 403 and "administrators" in out["reason"]
    event = json.loads(json.dumps(EVENT))
    event["requestContext"]["authorizer"]["claims"]["cognito:groups"] = "member,admin"
    status, out, _ = call(event, queryStringParameters={"debug": "true"})
    assert status == 200 and out["debug"]["tokens_used"] == 7


def test_missing_identity_is_403():
    event = json.loads(json.dumps(EVENT))
    event["requestContext"]["authorizer"] = None
    assert call(event)[0] == 403


@pytest.mark.parametrize("error,status", [(AccessDenied("not a member"), 403), (NotFound("no legacy"), 404)])
def test_workflow_typed_errors_become_4xx(error, status):
    code, out, _ = call(workflow=FakeWorkflow(error))
    assert code == status and out["reason"] == str(error)


def test_bad_legacy_id_in_path_is_400():
    status, out, _ = call(pathParameters={"legacy_id": "not-a-uuid"}, path="/legacies/not-a-uuid/context")
    assert status == 400 and "legacy_id" in out["reason"]


def test_the_openapi_document_describes_the_route_and_its_body():
    import importlib.util

    handler_path = Path(__file__).parents[2] / "functions" / "api" / "handler.py"
    spec = importlib.util.spec_from_file_location("api_openapi_probe", handler_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = json.loads(module.app.get_openapi_json_schema(title="Heirloom context API", version="1"))
    post = doc["paths"]["/legacies/{legacy_id}/context"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("ContextBody")
    body = doc["components"]["schemas"]["ContextBody"]
    assert body["properties"]["query"]["maxLength"] == 2000 and "persona" in body["required"]


@pytest.mark.parametrize(
    "body,reason",
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than 8 levels"),
        ("[" * 100_000, "nested more than 8 levels"),  # never closed
        ('{"query": "hi", "persona": "family", "history": ' + "[" * 3000 + "]" * 3000 + "}", "nested"),
        ('{"query": "hi", "persona": "family", "token_budget": ' + "9" * 5000 + "}", "more than 20 digits"),
        ('{"query": "hi", "persona": "family", "token_budget": -' + "1" * 5000 + "}", "more than 20 digits"),
        ('{"query": "' + "x" * 1_100_000 + '", "persona": "family"}', "larger than 1048576 bytes"),
    ],
)
def test_hostile_bodies_are_400_before_the_parser_gives_way(body, reason):
    """Python's JSON parser raises RecursionError on deep nesting and ValueError on a 5,000-digit
    integer: unhandled, those were a 502 in Lambda."""
    status, out, wf = call(body=body)
    assert status == 400 and out["error"] == "InvalidRequest" and reason in out["reason"]
    assert wf.requests == []


def test_brackets_inside_strings_do_not_count_as_nesting():
    body = {
        "query": '[[[[[[[[[[{{{{{{{{{{ \\" ]]',
        "persona": "family",
        "history": [{"role": "user", "content": "{["}],
    }
    status, _, wf = call(body=json.dumps(body))
    assert status == 200 and wf.requests[0].query == body["query"]


def test_a_base64_body_is_held_to_the_same_limits():
    import base64

    deep = base64.b64encode(("[" * 50_000).encode()).decode()
    status, out, _ = call(body=deep, isBase64Encoded=True)
    assert status == 400 and "nested" in out["reason"]


BODY = EVENT["body"]


@pytest.mark.parametrize(
    "changes,status,reason",
    [
        # the resolver raised on these (a 502): a form or multipart body is refused before it
        ({"headers": {"Content-Type": "multipart/form-data"}}, 400, "Content-Type must be application/json"),
        (
            {
                "headers": {"Content-Type": "multipart/form-data; boundary=x"},
                "body": '{"query": "Ωrchard 😀"}',
            },
            400,
            "Content-Type",
        ),
        ({"headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 400, "Content-Type"),
        ({"headers": {"Content-Type": "text/plain"}}, 400, "Content-Type"),
        ({"body": "%%% not base64", "isBase64Encoded": True}, 400, "base64"),
        ({"body": base64.b64encode(b"\xff\xfe").decode(), "isBase64Encoded": True}, 400, "UTF-8"),
        # a JSON body is JSON whatever the media type's case or parameters
        ({"headers": {"content-type": "APPLICATION/JSON; charset=utf-8"}}, 200, None),
        ({"headers": {"Host": "api.example.com"}}, 200, None),
        ({"body": base64.b64encode(BODY.encode()).decode(), "isBase64Encoded": True}, 200, None),
    ],
)
def test_only_a_json_body_reaches_the_routes(changes, status, reason):
    got, out, _ = call(**changes)
    assert got == status and set(out) >= ({"error", "reason"} if reason else {"context"})
    assert reason is None or (reason in out["reason"] and out["error"] == "InvalidRequest")


class DegradedWorkflow(FakeWorkflow):
    def run(self, request):
        out = super().run(request)
        return out.model_copy(update={"sources_used": ("vector",), "degraded": ("graph",)})


def test_every_caller_is_told_which_sources_answered_and_which_are_missing():
    """Degradation was visible only in admin debug output (graph_status)."""
    status, body, _ = call(workflow=DegradedWorkflow())  # a member, not an admin
    assert status == 200 and body["debug"] is None
    assert body["sources_used"] == ["vector"] and body["degraded"] == ["graph"]
    status, body, _ = call()
    assert status == 200 and body["degraded"] == []


class RerankGaveUpWorkflow(FakeWorkflow):
    def run(self, request):
        out = super().run(request)
        return out.model_copy(update={"degraded": ("rerank",)})


def test_a_reranking_stage_that_gave_up_is_said_too():
    status, body, _ = call(workflow=RerankGaveUpWorkflow())
    assert status == 200 and body["degraded"] == ["rerank"]


class DisputedWorkflow(FakeWorkflow):
    def run(self, request):
        from uuid import UUID

        from heirloom.contracts.context import Account, DifferingAccounts

        told = (
            Account(narrator="Rosa", story_id=UUID(int=1), title="Wedding", sentence="They wed in 1951."),
            Account(narrator="Paolo", story_id=UUID(int=2), title="Church", sentence="They wed in 1953."),
        )
        group = DifferingAccounts(subject="Ada", relation="MARRIED", object="Walt", accounts=told)
        return super().run(request).model_copy(update={"accounts": (group,)})


def test_differing_accounts_reach_the_caller_as_data():
    status, body, _ = call(workflow=DisputedWorkflow())
    assert status == 200
    assert [(a["narrator"], a["sentence"]) for a in body["accounts"][0]["accounts"]] == [
        ("Rosa", "They wed in 1951."),
        ("Paolo", "They wed in 1953."),
    ]
    status, body, _ = call()
    assert status == 200 and body["accounts"] == []


def test_the_openapi_document_describes_sources_used_and_degraded():
    import importlib.util

    handler_path = Path(__file__).parents[2] / "functions" / "api" / "handler.py"
    spec = importlib.util.spec_from_file_location("api_openapi_probe_degraded", handler_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = json.loads(module.app.get_openapi_json_schema(title="Heirloom context API", version="1"))
    response = doc["components"]["schemas"]["ContextResponse"]
    assert {"sources_used", "degraded"} <= set(response["required"])
    assert response["properties"]["accounts"]["description"]
    for field, values in (("sources_used", ["vector", "graph"]), ("degraded", ["vector", "graph", "rerank"])):
        assert response["properties"][field]["items"]["enum"] == values
        assert response["properties"][field]["description"]


class _UnansweringStepFunctions:
    def __init__(self, error):
        self.error = error

    def start_sync_execution(self, **_kwargs):
        raise self.error


@pytest.mark.parametrize(
    "error,status",
    [
        ("read", 504),  # no answer within the read timeout: retry later
        ("connect", 500),  # the endpoint cannot be reached
        ("throttled", 500),
    ],
)
def test_step_functions_that_does_not_answer_is_a_typed_5xx_not_a_hang_or_a_crash(error, status):
    """botocore's defaults (60 s connect and read timeouts, retries) outlived API Gateway's 29 s,
    and its exceptions escaped the handler (a bare 502)."""
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    from heirloom.adapters.stepfunctions import StepFunctionsContextWorkflow

    raised = {
        "read": ReadTimeoutError(endpoint_url="https://states"),
        "connect": ConnectTimeoutError(endpoint_url="https://states"),
        "throttled": ClientError({"Error": {"Code": "ThrottlingException"}}, "StartSyncExecution"),
    }[error]
    workflow = StepFunctionsContextWorkflow(
        "arn:aws:states:us-east-1:1:stateMachine:x", _UnansweringStepFunctions(raised)
    )
    code, out, _ = call(workflow=workflow)
    assert code == status and out["reason"] and "states" not in out["reason"]


def test_the_step_functions_client_has_short_connect_and_bounded_read_timeouts(monkeypatch):
    from heirloom.adapters.stepfunctions import StepFunctionsContextWorkflow

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    config = StepFunctionsContextWorkflow("arn:aws:states:us-east-1:1:stateMachine:x")._client.meta.config
    # longer than the workflow's own 18 s, shorter than the API function's 22 s; no second attempt
    assert config.connect_timeout == 2 and 18 < config.read_timeout < 22
    assert config.retries["total_max_attempts"] == 1
