"""State machines: type, inline definition, logging, tracing, grants and timeouts."""

from __future__ import annotations

import json

import pytest

from cdk.config import STANDARD_WORKFLOWS
from cdk.naming import REPO_ROOT, lambda_tasks, workflow_files, workflow_name

WORKFLOWS = {workflow_name(p): p for p in workflow_files()}
EXPRESS_MAX_SECONDS = 300


def machine(built, name):
    sm = built.stack.workflows.by_name[name]
    return sm, built.resources[built.logical_id(sm)]["Properties"]


def policy_statements(built, role_logical_id):
    out = []
    for resource in built.resources.values():
        if (
            resource["Type"] == "AWS::IAM::Policy"
            and {"Ref": role_logical_id} in resource["Properties"]["Roles"]
        ):
            out.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    return out


def test_required_workflows_exist():
    assert {"context_assembly", "ingest_story"} <= set(WORKFLOWS)


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_type_logging_and_tracing(built, name):
    """Privacy by default: no workflow writes execution data (questions, chat history, story
    text) to CloudWatch; Express workflows log only errors."""
    _, props = machine(built, name)
    express = name not in STANDARD_WORKFLOWS
    assert props["StateMachineType"] == ("EXPRESS" if express else "STANDARD")
    logging = props["LoggingConfiguration"]
    assert logging["Level"] == ("ERROR" if express else "ALL")
    assert logging["IncludeExecutionData"] is False
    assert logging["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"]
    assert props["TracingConfiguration"] == {"Enabled": True}


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_debug_logging_flag_logs_express_execution_data(variant, name):
    debug = variant(**{"heirloom:debugLogging": True})
    _, props = machine(debug, name)
    express = name not in STANDARD_WORKFLOWS
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is express


def test_context_and_ingestion_are_express_and_backfill_standard(built):
    assert machine(built, "context_assembly")[1]["StateMachineType"] == "EXPRESS"
    assert machine(built, "ingest_story")[1]["StateMachineType"] == "EXPRESS"
    if "backfill" in WORKFLOWS:
        assert machine(built, "backfill")[1]["StateMachineType"] == "STANDARD"


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_definition_is_the_file_inlined(built, name):
    _, props = machine(built, name)
    assert "DefinitionS3Location" not in props
    assert props["DefinitionString"] == WORKFLOWS[name].read_text()


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_express_definitions_fit_the_express_limit(name):
    definition = json.loads(WORKFLOWS[name].read_text())
    if name not in STANDARD_WORKFLOWS:
        assert definition.get("TimeoutSeconds", EXPRESS_MAX_SECONDS) <= EXPRESS_MAX_SECONDS


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
def test_role_invokes_exactly_the_functions_of_its_tasks(built, name):
    sm, _ = machine(built, name)
    statements = policy_statements(built, built.logical_id(sm.role))
    invoke = [
        s
        for s in statements
        if s["Action"] == "lambda:InvokeFunction" or "lambda:InvokeFunction" in s["Action"]
    ]
    resources = [
        r for s in invoke for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    ]
    called = {t.construct_id for t in lambda_tasks(json.loads(WORKFLOWS[name].read_text()))}
    expected = [
        {"Fn::GetAtt": [built.logical_id(built.stack.node.find_child(c)), "Arn"]} for c in sorted(called)
    ]
    assert sorted(map(json.dumps, resources)) == sorted(map(json.dumps, expected))


def test_lambda_timeouts_match_their_tasks(built):
    """A function never outlives the Task that called it (TimeoutSeconds is per attempt)."""
    checked = 0
    for path in WORKFLOWS.values():
        for task in lambda_tasks(json.loads(path.read_text())):
            assert task.timeout_s, f"{path.name}: Task {task.state} has no TimeoutSeconds"
            function = built.stack.node.find_child(task.construct_id)
            timeout = built.resources[built.logical_id(function)]["Properties"]["Timeout"]
            assert timeout <= task.timeout_s, (
                f"{task.construct_id}: {timeout}s > Task {task.state} {task.timeout_s}s"
            )
            checked += 1
    assert checked >= 5


def test_context_workflow_timeouts(built):
    timeouts = {
        cid: built.resources[built.logical_id(built.stack.node.find_child(cid))]["Properties"]["Timeout"]
        for cid in ("IntentAnalysis", "VectorSearch", "GraphTraversal", "AccessFilter", "RankAssemble")
    }
    # from the measured cold path (tests/statemachines/test_cold_path_timeouts.py)
    assert timeouts == {
        "IntentAnalysis": 3,
        "VectorSearch": 3,
        "GraphTraversal": 3,
        "AccessFilter": 3,
        "RankAssemble": 2,
    }
    total = json.loads((REPO_ROOT / "statemachines/context_assembly.asl.json").read_text())["TimeoutSeconds"]
    assert total == 18
    # the API waits for the whole workflow and stays under API Gateway's 29 s; its client's read
    # timeout sits between the two
    from heirloom.adapters.stepfunctions import CLIENT_TIMEOUTS

    api = built.resources[built.logical_id(built.stack.node.find_child("Api"))]["Properties"]
    assert total < CLIENT_TIMEOUTS["read_timeout"] < api["Timeout"] < 29


CONTEXT_TASKS = {"IntentAnalysis", "VectorSearch", "GraphTraversal", "AccessFilter", "RankAssemble"}


def test_provisioned_concurrency_is_off_by_default(resources):
    assert not [r for r in resources.values() if r["Type"] in ("AWS::Lambda::Alias", "AWS::Lambda::Version")]


def test_provisioned_concurrency_flag_puts_the_context_functions_behind_a_live_alias(variant):
    b = variant(**{"heirloom:provisionedConcurrency": 2})
    aliases = {lid: r["Properties"] for lid, r in b.resources.items() if r["Type"] == "AWS::Lambda::Alias"}
    assert {
        b.stack.node.find_child(f"{c}Live").node.id.removesuffix("Live") for c in CONTEXT_TASKS
    } == CONTEXT_TASKS
    assert len(aliases) == len(CONTEXT_TASKS)
    for props in aliases.values():
        assert props["Name"] == "live"
        assert props["ProvisionedConcurrencyConfig"] == {"ProvisionedConcurrentExecutions": 2}
    # the context workflow invokes the aliases, and its role may invoke exactly them
    _, props = machine(b, "context_assembly")
    targets = {json.dumps(v) for v in props["DefinitionSubstitutions"].values()}
    assert targets == {json.dumps({"Ref": lid}) for lid in aliases}
    sm, _ = machine(b, "context_assembly")
    invoke = [
        r
        for s in policy_statements(b, b.logical_id(sm.role))
        if "lambda:InvokeFunction" in s["Action"]
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    ]
    assert {json.dumps(r) for r in invoke} == targets
    # ingestion stays on demand
    _, ingest = machine(b, "ingest_story")
    assert all("Fn::GetAtt" in v for v in ingest["DefinitionSubstitutions"].values())
