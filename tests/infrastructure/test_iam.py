"""Least privilege, per function: the exact set of actions each role may use, and on what.

EXPECTED is written out here on purpose (a second copy of cdk/access.py): a change of permissions
changes this file too, so it shows up in review.
"""

from __future__ import annotations

import json

import pytest

from cdk.access import ACCESS
from cdk.naming import function_folders, state_name
from heirloom.settings import HAIKU_MODEL_ID, RERANK_MODEL_ID, TITAN_EMBED_MODEL_ID

LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}
XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
ENI = {
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
}
DB = {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
GRAPH_READ = {"neptune-db:ReadDataViaQuery"}
GRAPH_WRITE = GRAPH_READ | {"neptune-db:WriteDataViaQuery", "neptune-db:DeleteDataViaQuery"}
BEDROCK = {"bedrock:InvokeModel"}
BREAKER = {"dynamodb:GetItem", "dynamodb:PutItem"}
DLQ = {"sqs:SendMessage"}

EXPECTED: dict[str, set[str]] = {
    # the context route starts the workflow; the curation routes read roles and write merges;
    # the conversation routes extract (Claude Haiku) and start a story's ingestion
    "Api": {"states:StartSyncExecution", "states:StartExecution"} | DB | GRAPH_WRITE | BEDROCK,
    "IntentAnalysis": DB | GRAPH_READ | BREAKER,
    "VectorSearch": DB | BEDROCK,
    "GraphTraversal": GRAPH_READ | BREAKER,
    "AccessFilter": DB,
    "RankAssemble": set(),
    "ConnectionsPlan": DB,
    "ConnectionsAssemble": set(),
    "StoryEvents": DB | GRAPH_WRITE | {"states:StartExecution"} | DLQ,
    "IngestObject": DB
    | GRAPH_WRITE
    | BEDROCK
    | {"s3:GetObject", "s3:PutObjectTagging", "s3:ListBucket"}
    | DLQ,
    "ChunkEmbed": DB | BEDROCK,
    "ExtractEntities": DB | BEDROCK,
    # re-links the stories that write a name the sync established (decision 0040)
    "GraphSync": DB | GRAPH_WRITE | {"states:StartExecution"},
    "IngestFailed": DB,
    "BackfillPlan": DB | {"states:ListExecutions"},
    "CommunitiesRebuild": DB | GRAPH_READ,
}
IN_VPC = {cid for cid, actions in EXPECTED.items() if actions & (DB | GRAPH_READ)}
FUNCTIONS = [state_name(f) for f in function_folders()]


def _list(value):
    return value if isinstance(value, list) else [value]


def statements(built, construct_id):
    role = built.stack.node.find_child(construct_id).role
    role_id = built.logical_id(role)
    out = []
    for resource in built.resources.values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]:
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                assert statement["Effect"] == "Allow"
                out.append((set(_list(statement["Action"])), _list(statement["Resource"])))
    return out


def actions_of(built, construct_id):
    return set().union(*(actions for actions, _ in statements(built, construct_id)))


def resources_for(built, construct_id, action):
    return [
        r for actions, resources in statements(built, construct_id) if action in actions for r in resources
    ]


def test_expected_table_covers_access_table():
    assert set(EXPECTED) == set(ACCESS), "cdk/access.py and this test disagree on which functions have rows"


@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_each_function_has_exactly_its_actions(built, construct_id):
    baseline = LOGS | XRAY | (ENI if construct_id in IN_VPC else set())
    # a function without a row (a new folder) gets logs and tracing only
    assert actions_of(built, construct_id) == baseline | EXPECTED.get(construct_id, set())


@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_roles_have_no_managed_policies_and_wildcards_only_where_unavoidable(built, construct_id):
    role = built.resources[built.logical_id(built.stack.node.find_child(construct_id).role)]
    assert "ManagedPolicyArns" not in role["Properties"]
    for actions, resources in statements(built, construct_id):
        if "*" in resources:
            assert actions <= XRAY | ENI, f"{construct_id}: {actions} on '*'"


def test_graph_writes_only_for_ingestion(built):
    writers = {cid for cid in FUNCTIONS if "neptune-db:WriteDataViaQuery" in actions_of(built, cid)}
    deleters = {cid for cid in FUNCTIONS if "neptune-db:DeleteDataViaQuery" in actions_of(built, cid)}
    assert writers == deleters == {"StoryEvents", "IngestObject", "GraphSync", "Api"}  # Api: merges
    readers = {cid for cid in FUNCTIONS if "neptune-db:ReadDataViaQuery" in actions_of(built, cid)}
    assert {"GraphTraversal", "IntentAnalysis"} <= readers


def test_neptune_actions_are_scoped_to_the_cluster(built):
    cluster = built.logical_id(built.stack.data.graph)
    for cid in ("GraphTraversal", "IntentAnalysis", "GraphSync"):
        (resource,) = resources_for(built, cid, "neptune-db:ReadDataViaQuery")
        assert {"Fn::GetAtt": [cluster, "ClusterResourceId"]} in resource["Fn::Join"][1]


def _arn_text(resource):
    return "".join(p if isinstance(p, str) else json.dumps(p) for p in resource["Fn::Join"][1])


def test_bedrock_only_the_named_models(built):
    for cid in FUNCTIONS:
        arns = [_arn_text(r) for r in resources_for(built, cid, "bedrock:InvokeModel")]
        for arn in arns:
            assert "*" not in arn
            assert arn.endswith((f"foundation-model/{TITAN_EMBED_MODEL_ID}", HAIKU_MODEL_ID)), arn
    embedders = {
        cid
        for cid in FUNCTIONS
        if any(
            a.endswith(TITAN_EMBED_MODEL_ID)
            for a in map(_arn_text, resources_for(built, cid, "bedrock:InvokeModel"))
        )
    }
    extractors = {
        cid
        for cid in FUNCTIONS
        if any(
            a.endswith(HAIKU_MODEL_ID)
            for a in map(_arn_text, resources_for(built, cid, "bedrock:InvokeModel"))
        )
    }
    assert embedders == {"VectorSearch", "ChunkEmbed", "IngestObject"}
    assert extractors == {"ExtractEntities", "IngestObject", "Api"}  # Api: conversation messages
    haiku = {_arn_text(r) for r in resources_for(built, "ExtractEntities", "bedrock:InvokeModel")}
    assert any(f"inference-profile/us.{HAIKU_MODEL_ID}" in a for a in haiku)


def test_breaker_table_only_for_intent_and_traversal(built):
    table = {"Fn::GetAtt": [built.logical_id(built.stack.data.breaker_table), "Arn"]}
    users = {cid for cid in FUNCTIONS if table in resources_for(built, cid, "dynamodb:PutItem")}
    assert users == {"IntentAnalysis", "GraphTraversal"}


def test_only_api_runs_the_context_and_connections_workflows(built):
    context = {"Ref": built.logical_id(built.stack.workflows.by_name["context_assembly"])}
    connections = {"Ref": built.logical_id(built.stack.workflows.by_name["story_connections"])}
    starters = {cid for cid in FUNCTIONS if "states:StartSyncExecution" in actions_of(built, cid)}
    assert starters == {"Api"}
    assert resources_for(built, "Api", "states:StartSyncExecution") == [context, connections]


def test_story_events_and_graph_sync_start_only_the_ingestion_workflow(built):
    """By the ARN built from its name (GraphSync is one of its tasks: a reference is a cycle)."""
    machine = built.resources[built.logical_id(built.stack.workflows.by_name["ingest_story"])]
    name = machine["Properties"]["StateMachineName"]
    for cid in ("StoryEvents", "GraphSync"):
        (resource,) = resources_for(built, cid, "states:StartExecution")
        assert _arn_text(resource).endswith(f":stateMachine:{name}")


def test_only_backfill_plan_lists_the_backfills_executions(built):
    listers = {cid for cid in FUNCTIONS if "states:ListExecutions" in actions_of(built, cid)}
    assert listers == {"BackfillPlan"}
    (resource,) = resources_for(built, "BackfillPlan", "states:ListExecutions")
    assert _arn_text(resource).endswith(":stateMachine:Heirloom-Backfill")
    # the name it is built from is the deployed one
    backfill = built.resources[built.logical_id(built.stack.workflows.by_name["backfill"])]
    assert backfill["Properties"]["StateMachineName"] == "Heirloom-Backfill"


def test_the_backfill_may_start_only_itself(built):
    """Continue-as-new: the backfill's role starts executions of the backfill and nothing else;
    the Express workflows start none."""
    for name, machine in built.stack.workflows.by_name.items():
        role_id = built.logical_id(machine.role)
        starts = [
            r
            for res in built.resources.values()
            if res["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in res["Properties"]["Roles"]
            for st in res["Properties"]["PolicyDocument"]["Statement"]
            if "states:StartExecution" in _list(st["Action"])
            for r in _list(st["Resource"])
        ]
        if name == "backfill":
            (arn,) = starts
            assert _arn_text(arn).endswith(":stateMachine:Heirloom-Backfill")
        else:
            assert starts == []


def test_secret_read_only_for_database_functions(built):
    secret = {"Ref": built.logical_id(built.stack.data.secret)}
    readers = {
        cid for cid in FUNCTIONS if secret in resources_for(built, cid, "secretsmanager:GetSecretValue")
    }
    assert readers == {cid for cid, actions in EXPECTED.items() if actions & DB}


def test_imports_only_under_the_prefix(built):
    (resource,) = resources_for(built, "IngestObject", "s3:GetObject")
    assert _arn_text(resource).endswith("/imports/*")
    # listing the import bucket alone: a deleted key then answers HeadObject with 404, not 403
    (bucket,) = resources_for(built, "IngestObject", "s3:ListBucket")
    assert bucket == {"Fn::GetAtt": [built.logical_id(built.stack.data.import_bucket), "Arn"]}


def test_vpc_placement_follows_access(built):
    for cid in FUNCTIONS:
        props = built.resources[built.logical_id(built.stack.node.find_child(cid))]["Properties"]
        assert ("VpcConfig" in props) is (cid in IN_VPC), cid


def test_intent_analysis_may_call_haiku_only_when_configured(built, variant):
    def env(b):
        function = b.stack.node.find_child("IntentAnalysis")
        return b.resources[b.logical_id(function)]["Properties"]["Environment"]["Variables"]

    assert resources_for(built, "IntentAnalysis", "bedrock:InvokeModel") == []
    assert env(built)["INTENT_PROVIDER"] == "rules"
    bedrock = variant(**{"heirloom:intentProvider": "bedrock"})
    arns = [_arn_text(r) for r in resources_for(bedrock, "IntentAnalysis", "bedrock:InvokeModel")]
    assert arns and all(a.endswith(HAIKU_MODEL_ID) for a in arns)
    assert any(f"inference-profile/us.{HAIKU_MODEL_ID}" in a for a in arns)
    assert env(bedrock)["INTENT_PROVIDER"] == "bedrock"
    assert env(bedrock)["BEDROCK_INTENT_MODEL_ID"] == f"us.{HAIKU_MODEL_ID}"


def test_intent_provider_auto_reaches_intent_analysis_without_a_model_grant(variant):
    """`auto` picks the learned classifier only where weights for the embedder are shipped (none
    for Titan: the rules), so it needs no Bedrock grant (decision 0034)."""
    auto = variant(**{"heirloom:intentProvider": "auto"})
    function = auto.stack.node.find_child("IntentAnalysis")
    env = auto.resources[auto.logical_id(function)]["Properties"]["Environment"]["Variables"]
    assert env["INTENT_PROVIDER"] == "auto"
    assert resources_for(auto, "IntentAnalysis", "bedrock:InvokeModel") == []


def test_rank_assemble_may_call_rerank_only_when_configured(built, variant):
    def env(b):
        function = b.stack.node.find_child("RankAssemble")
        return b.resources[b.logical_id(function)]["Properties"]["Environment"]["Variables"]

    assert env(built)["RERANKER"] == "off"
    assert "RERANK_MODEL_ID" not in env(built)
    assert resources_for(built, "RankAssemble", "bedrock:Rerank") == []
    assert resources_for(built, "RankAssemble", "bedrock:InvokeModel") == []
    assert env(variant(**{"heirloom:reranker": "lexical"}))["RERANKER"] == "lexical"
    assert resources_for(variant(**{"heirloom:reranker": "lexical"}), "RankAssemble", "bedrock:Rerank") == []
    bedrock = variant(**{"heirloom:reranker": "bedrock"})
    assert env(bedrock)["RERANKER"] == "bedrock"
    assert env(bedrock)["RERANK_MODEL_ID"] == RERANK_MODEL_ID
    (arn,) = [_arn_text(r) for r in resources_for(bedrock, "RankAssemble", "bedrock:InvokeModel")]
    assert arn.endswith(f"::foundation-model/{RERANK_MODEL_ID}")
    # Rerank has no resource type, so it is on '*' (CDK merges it with X-Ray's) and nothing else
    (wildcard,) = [a for a, r in statements(bedrock, "RankAssemble") if "bedrock:Rerank" in a]
    assert wildcard <= XRAY | {"bedrock:Rerank"}
    assert resources_for(bedrock, "RankAssemble", "bedrock:Rerank") == ["*"]
    # the grant is RankAssemble's only: no other function may rerank
    assert [cid for cid in FUNCTIONS if "bedrock:Rerank" in actions_of(bedrock, cid)] == ["RankAssemble"]


def test_the_code_default_and_the_stack_name_the_same_haiku():
    from heirloom.settings import HAIKU_INFERENCE_PROFILE, settings_from_env

    assert settings_from_env({}).bedrock.intent_model_id == HAIKU_INFERENCE_PROFILE == f"us.{HAIKU_MODEL_ID}"
    assert "haiku-4-5" in HAIKU_MODEL_ID
