"""API Gateway: Cognito authorizer on every method, request validation with the body schemas,
and each schema agreeing with the handler's own model (ContextBody, OpeningBody, EnrichmentBody)."""

from __future__ import annotations

import json

import pytest

# cfn-lint (pinned) ships a JSON-schema validator; the project has no jsonschema dependency
from cfnlint.jsonschema import StandardValidator
from pydantic import ValidationError

from cdk.naming import REPO_ROOT
from heirloom.domain.context_api import ContextBody, EnrichmentBody, OpeningBody

UUID = "f8156de7-80fc-4f32-a0b0-5596b12c22c1"
OK = {"query": "Who was her brother?", "persona": "family"}


def of_type(resources, kind):
    return {lid: r["Properties"] for lid, r in resources.items() if r["Type"] == kind}


def model_schema(resources, name):
    (model,) = [m for m in of_type(resources, "AWS::ApiGateway::Model").values() if m["Name"] == name]
    return model["Schema"]


@pytest.fixture(scope="module")
def schema(resources):
    return model_schema(resources, "ContextBody")


def post_methods(resources):
    """Each POST method by its path below /legacies/{legacy_id}."""
    parts = {lid: r["Properties"] for lid, r in resources.items() if r["Type"] == "AWS::ApiGateway::Resource"}

    def path(ref):
        part = parts.get(ref.get("Ref", ""))
        return "" if part is None else f"{path(part['ParentId'])}/{part['PathPart']}"

    return {
        path(m["ResourceId"]).removeprefix("/legacies/{legacy_id}"): m
        for m in of_type(resources, "AWS::ApiGateway::Method").values()
        if m["HttpMethod"] == "POST"
    }


def test_every_method_requires_a_cognito_token(built, resources):
    (authorizer_id, authorizer) = next(iter(of_type(resources, "AWS::ApiGateway::Authorizer").items()))
    assert authorizer["Type"] == "COGNITO_USER_POOLS"
    assert authorizer["ProviderARNs"] == [
        {"Fn::GetAtt": [built.logical_id(built.stack.api.user_pool), "Arn"]}
    ]
    methods = of_type(resources, "AWS::ApiGateway::Method")
    assert methods
    for method in methods.values():
        assert method["AuthorizationType"] == "COGNITO_USER_POOLS", method["HttpMethod"]
        assert method["AuthorizerId"] == {"Ref": authorizer_id}


def test_context_route_validates_body_and_parameters(built, resources):
    methods = post_methods(resources)
    assert sorted(methods) == [
        "/context", "/conversation-memory", "/conversations/{conversation_id}/messages",
        "/conversations/{conversation_id}/story", "/enrichment", "/keep-apart", "/merges", "/merges/{merge_id}/undo",
        "/staged/{item_id}/approve", "/staged/{item_id}/reject", "/staging", "/stories/{story_id}/connections",
    ]  # fmt: skip
    method = methods["/context"]
    validator = resources[method["RequestValidatorId"]["Ref"]]["Properties"]
    assert validator["ValidateRequestBody"] is True
    assert validator["ValidateRequestParameters"] is True
    assert method["RequestModels"] == {
        "application/json": {"Ref": built.logical_id(built.stack.api.body_model)}
    }
    assert method["RequestParameters"]["method.request.path.legacy_id"] is True
    integration = method["Integration"]
    assert integration["Type"] == "AWS_PROXY"
    api_function = built.logical_id(built.stack.node.find_child("Api"))
    assert {"Fn::GetAtt": [api_function, "Arn"]} in integration["Uri"]["Fn::Join"][1]
    paths = {r["PathPart"] for r in of_type(resources, "AWS::ApiGateway::Resource").values()}
    assert paths == {
        "legacies",
        "{legacy_id}",
        "context",
        "stories",
        "{story_id}",
        "connections",
        "enrichment",
        "merge-suggestions",
        "merges",
        "{merge_id}",
        "undo",
        "keep-apart",
        "staging",
        "staged",
        "{item_id}",
        "approve",
        "reject",
        "changelog",
        "conversation-memory",
        "conversations",
        "{conversation_id}",
        "messages",
        "story",
        "facts",
        "conversation-facts",
        "{fact_id}",
    }


def test_story_evolution_routes_validate_their_bodies_and_go_to_the_api_function(built, resources):
    methods = post_methods(resources)
    api_function = built.logical_id(built.stack.node.find_child("Api"))
    for path, model, params in (
        ("/stories/{story_id}/connections", "OpeningBody", {"legacy_id", "story_id"}),
        ("/enrichment", "EnrichmentBody", {"legacy_id"}),
    ):
        method = methods[path]
        validator = resources[method["RequestValidatorId"]["Ref"]]["Properties"]
        assert validator["ValidateRequestBody"] is True
        ref = method["RequestModels"]["application/json"]["Ref"]
        assert resources[ref]["Properties"]["Name"] == model
        assert {k.removeprefix("method.request.path.") for k in method["RequestParameters"]} == params
        assert {"Fn::GetAtt": [api_function, "Arn"]} in method["Integration"]["Uri"]["Fn::Join"][1]


def _accepts(model, body):
    try:
        model.model_validate_json(json.dumps(body))
    except ValidationError:
        return False
    return True


MESSAGES = [{"role": "user", "content": "Uncle Ray played the drums."}]
EVOLUTION_BODIES = [
    ("OpeningBody", OpeningBody, {}, True),
    ("OpeningBody", OpeningBody, {"persona": "family"}, True),
    ("OpeningBody", OpeningBody, {"persona": "stranger"}, False),
    ("OpeningBody", OpeningBody, {"story_id": UUID}, False),
    ("EnrichmentBody", EnrichmentBody, {"messages": MESSAGES}, True),
    (
        "EnrichmentBody",
        EnrichmentBody,
        {"messages": MESSAGES * 20, "story_id": UUID, "surfaced_story_ids": [UUID], "persona": "friend"},
        True,
    ),
    ("EnrichmentBody", EnrichmentBody, {"messages": []}, False),
    ("EnrichmentBody", EnrichmentBody, {"messages": MESSAGES * 21}, False),
    ("EnrichmentBody", EnrichmentBody, {"messages": MESSAGES, "surfaced_story_ids": ["x"]}, False),
    ("EnrichmentBody", EnrichmentBody, {"messages": MESSAGES, "user_id": UUID}, False),
    ("EnrichmentBody", EnrichmentBody, {}, False),
]


@pytest.mark.parametrize(("name", "model", "body", "valid"), EVOLUTION_BODIES)
def test_story_evolution_gateway_and_handler_agree(resources, name, model, body, valid):
    gateway = not list(StandardValidator(model_schema(resources, name)).iter_errors(body))
    assert gateway is valid
    assert _accepts(model, body) is valid


def test_curation_routes_reach_the_api_function_with_their_path_parameters(built, resources):
    api_function = built.logical_id(built.stack.node.find_child("Api"))
    methods = [m for m in of_type(resources, "AWS::ApiGateway::Method").values() if "RequestModels" not in m]
    # merges: GET suggestions, POST merge, undo, keep apart; staging: GET/POST the switch, GET
    # staged, POST approve and reject; GET changelog; conversation memory: GET/POST the switch,
    # POST a message, POST the story, GET the caller's conversations and a conversation's facts,
    # DELETE a conversation and a fact
    assert sorted(m["HttpMethod"] for m in methods) == ["DELETE"] * 2 + ["GET"] * 7 + ["POST"] * 9
    for method in methods:
        assert method["RequestParameters"]["method.request.path.legacy_id"] is True
        assert {"Fn::GetAtt": [api_function, "Arn"]} in method["Integration"]["Uri"]["Fn::Join"][1]
    undo = [m for m in methods if "method.request.path.merge_id" in m["RequestParameters"]]
    assert len(undo) == 1 and undo[0]["HttpMethod"] == "POST"
    decisions = [m for m in methods if "method.request.path.item_id" in m["RequestParameters"]]
    assert [m["HttpMethod"] for m in decisions] == ["POST", "POST"]
    conversation = [m for m in methods if "method.request.path.conversation_id" in m["RequestParameters"]]
    assert sorted(m["HttpMethod"] for m in conversation) == ["DELETE", "GET", "POST", "POST"]
    [fact] = [m for m in methods if "method.request.path.fact_id" in m["RequestParameters"]]
    assert fact["HttpMethod"] == "DELETE"


def test_body_schema_limits(schema):
    props = schema["properties"]
    assert schema["required"] == ["query", "persona"]
    assert schema["additionalProperties"] is False
    assert (props["query"]["minLength"], props["query"]["maxLength"]) == (1, 2000)
    assert sorted(props["persona"]["enum"]) == ["biographer", "colleague", "family", "friend"]
    assert props["history"]["maxItems"] == 20
    assert (props["token_budget"]["minimum"], props["token_budget"]["maximum"]) == (500, 16000)
    assert props["token_budget"]["type"] == "integer"


def test_sample_event_body_passes_the_schema(schema):
    body = json.loads(json.loads((REPO_ROOT / "events" / "api.json").read_text())["body"])
    assert list(StandardValidator(schema).iter_errors(body)) == []


def _pydantic_accepts(body):
    try:
        ContextBody.model_validate_json(json.dumps(body))
    except ValidationError:
        return False
    return True


BODIES = [
    (OK, True),
    ({**OK, "query": "x"}, True),
    (
        {**OK, "query": "x" * 2000, "token_budget": 500, "history": [{"role": "user", "content": "hi"}] * 20},
        True,
    ),
    ({**OK, "token_budget": 16000, "linked_story_id": UUID}, True),
    ({**OK, "linked_story_id": None}, True),
    ({**OK, "elicitation": True}, True),
    ({**OK, "elicitation": "yes"}, False),
    ({**OK, "query": ""}, False),
    ({**OK, "query": "x" * 2001}, False),
    ({**OK, "persona": "stranger"}, False),
    ({"query": "hi"}, False),
    ({**OK, "history": [{"role": "user", "content": "hi"}] * 21}, False),
    ({**OK, "history": [{"role": "system", "content": "hi"}]}, False),
    ({**OK, "history": [{"role": "user", "content": ""}]}, False),
    ({**OK, "token_budget": 499}, False),
    ({**OK, "token_budget": 16001}, False),
    ({**OK, "linked_story_id": "not-a-uuid"}, False),
    ({**OK, "as_of": "2020-01-31T12:00:00Z"}, True),
    ({**OK, "as_of": "2020-01-31T12:00:00.5+02:00"}, True),
    ({**OK, "as_of": None}, True),
    ({**OK, "as_of": "2020-01-31"}, False),
    ({**OK, "as_of": "2020-01-31T12:00:00"}, False),
    ({**OK, "as_of": "yesterday"}, False),
    ({**OK, "as_of": 1580472000}, False),
    ({**OK, "user_id": UUID}, False),
]


@pytest.mark.parametrize(("body", "valid"), BODIES)
def test_gateway_and_handler_agree(schema, body, valid):
    gateway = not list(StandardValidator(schema).iter_errors(body))
    assert gateway is valid
    assert _pydantic_accepts(body) is valid


def test_stage_logs_traces_and_throttles_without_bodies(resources):
    (stage,) = of_type(resources, "AWS::ApiGateway::Stage").values()
    assert stage["TracingEnabled"] is True
    assert stage["AccessLogSetting"]["DestinationArn"]
    (settings,) = stage["MethodSettings"]
    assert settings["LoggingLevel"] == "INFO"
    assert settings["DataTraceEnabled"] is False
    assert settings["ThrottlingRateLimit"] > 0


def test_user_pool_is_invite_only_with_mfa(resources):
    (pool,) = of_type(resources, "AWS::Cognito::UserPool").values()
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["MfaConfiguration"] == "ON"
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    groups = {g["GroupName"] for g in of_type(resources, "AWS::Cognito::UserPoolGroup").values()}
    assert "admin" in groups  # the handler's debug switch checks cognito:groups for it


def test_clients_users_sign_in_with_srp_and_operators_with_admin_auth(built):
    clients = {
        lid: r["Properties"]
        for lid, r in built.resources.items()
        if r["Type"] == "AWS::Cognito::UserPoolClient"
    }
    app = clients[built.logical_id(built.stack.api.client)]
    ops = clients[built.logical_id(built.stack.api.ops_client)]
    assert len(clients) == 2
    assert "ALLOW_USER_SRP_AUTH" in app["ExplicitAuthFlows"]
    assert "ALLOW_ADMIN_USER_PASSWORD_AUTH" not in app["ExplicitAuthFlows"]
    # admin-initiated auth needs the operator's IAM credentials; its tokens are short-lived
    assert "ALLOW_ADMIN_USER_PASSWORD_AUTH" in ops["ExplicitAuthFlows"]
    assert not ops.get("GenerateSecret") and ops["IdTokenValidity"] <= 60
    assert "OpsClientId" in built.json["Outputs"]
