"""Network, data stores, functions' runtime settings, events and alarms."""

from __future__ import annotations

import json
import re

import pytest

from cdk.config import EMBEDDING_DIM, TIKTOKEN_DIR, TIKTOKEN_FILE
from cdk.naming import REPO_ROOT, function_folders, state_name
from heirloom.contracts.ingestion import BackfillRequest

FUNCTIONS = [state_name(f) for f in function_folders()]


def of_type(resources, kind):
    return {lid: r for lid, r in resources.items() if r["Type"] == kind}


def props(built, construct):
    return built.resources[built.logical_id(construct)]["Properties"]


# -- network ----------------------------------------------------------------------------------------
def test_isolated_network_without_nat_or_internet(resources):
    for kind in ("AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EIP"):
        assert not of_type(resources, kind), kind
    subnets = of_type(resources, "AWS::EC2::Subnet").values()
    assert len(subnets) == 2
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is False for s in subnets)
    routes = of_type(resources, "AWS::EC2::Route")
    assert not routes, "isolated subnets have no routes out"
    assert of_type(resources, "AWS::EC2::FlowLog")


def test_vpc_endpoints(resources):
    names = set()
    for endpoint in of_type(resources, "AWS::EC2::VPCEndpoint").values():
        service = endpoint["Properties"]["ServiceName"]
        text = service if isinstance(service, str) else json.dumps(service)
        names.add(text.rsplit(".", 1)[-1].strip('"]}'))
        if endpoint["Properties"].get("VpcEndpointType") == "Interface":
            assert endpoint["Properties"]["PrivateDnsEnabled"] is True
    assert {"bedrock-runtime", "secretsmanager", "dynamodb", "states", "s3", "logs"} <= names


# -- PostgreSQL -------------------------------------------------------------------------------------
def test_aurora_serverless_v2_postgres_17_encrypted(built, resources):
    cluster = props(built, built.stack.data.cluster)
    assert cluster["Engine"] == "aurora-postgresql"
    assert cluster["EngineVersion"].startswith("17.")
    assert cluster["StorageEncrypted"] is True
    assert cluster["DeletionProtection"] is True
    assert cluster["ServerlessV2ScalingConfiguration"]["MinCapacity"] >= 0.5
    assert "ManageMasterUserPassword" not in cluster  # the secret is ours (rotated, proxy-read)
    instances = [r["Properties"] for r in of_type(resources, "AWS::RDS::DBInstance").values()]
    assert instances and all(i["DBInstanceClass"] == "db.serverless" for i in instances)
    assert all(i["PubliclyAccessible"] is False for i in instances)
    (group,) = [
        r["Properties"]["Parameters"]
        for r in of_type(resources, "AWS::RDS::DBClusterParameterGroup").values()
        if "rds.force_ssl" in r["Properties"]["Parameters"]
    ]
    assert group["rds.force_ssl"] == "1"
    (rotation,) = of_type(resources, "AWS::SecretsManager::RotationSchedule").values()
    assert rotation["Properties"]["RotationRules"]


def test_rds_proxy_requires_tls_and_reads_the_secret(built, resources):
    (proxy,) = of_type(resources, "AWS::RDS::DBProxy").values()
    assert proxy["Properties"]["RequireTLS"] is True
    assert proxy["Properties"]["EngineFamily"] == "POSTGRESQL"
    assert proxy["Properties"]["Auth"][0]["AuthScheme"] == "SECRETS"


def test_pgvector_is_enabled_by_the_migration_custom_resource(built, resources):
    migrations = REPO_ROOT / "layers/shared/python/heirloom/migrations"
    assert "CREATE EXTENSION IF NOT EXISTS vector" in (migrations / "001_core.sql").read_text()
    (schema,) = of_type(resources, "Custom::HeirloomMigrations").values()
    cluster = built.logical_id(built.stack.data.cluster)
    writer = built.logical_id(built.stack.data.cluster.node.find_child("Writer"))
    assert {cluster, writer} <= set(schema["DependsOn"])
    assert schema["Properties"]["EmbeddingDim"] == str(EMBEDDING_DIM)
    assert len(schema["Properties"]["Migrations"]) == 64  # digest: any migration change re-runs it
    function = props(built, built.stack.migrations.function)
    assert function["VpcConfig"]
    env = function["Environment"]["Variables"]
    assert env["DB_HOST"] == {"Fn::GetAtt": [cluster, "Endpoint.Address"]}  # writer, not the proxy


# -- Neptune ----------------------------------------------------------------------------------------
def test_neptune_serverless_with_iam_auth(built, resources):
    cluster = props(built, built.stack.data.graph)
    assert cluster["IamAuthEnabled"] is True
    assert cluster["StorageEncrypted"] is True
    assert cluster["ServerlessScalingConfiguration"]["MinCapacity"] >= 1
    (instance,) = of_type(resources, "AWS::Neptune::DBInstance").values()
    assert instance["Properties"]["DBInstanceClass"] == "db.serverless"


# -- DynamoDB ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("table", "key", "ttl"),
    [("breaker_table", "pk", "expires_at"), ("idempotency_table", "id", "expiration")],
)
def test_tables_key_ttl_pitr_encryption(built, table, key, ttl):
    p = props(built, getattr(built.stack.data, table))
    assert p["KeySchema"] == [{"AttributeName": key, "KeyType": "HASH"}]
    assert p["AttributeDefinitions"] == [{"AttributeName": key, "AttributeType": "S"}]
    assert p["TimeToLiveSpecification"] == {"AttributeName": ttl, "Enabled": True}
    assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert p["SSESpecification"] == {"SSEEnabled": True}


def test_breaker_ttl_matches_the_adapter():
    from heirloom.adapters import dynamodb

    assert '"expires_at"' in (REPO_ROOT / "layers/shared/python/heirloom/adapters/dynamodb.py").read_text()
    assert dynamodb.BREAKER_TTL_S > 0


# -- S3 ---------------------------------------------------------------------------------------------
def test_import_bucket_encrypted_private_versioned_ssl_only(built, resources):
    bucket_id = built.logical_id(built.stack.data.import_bucket)
    bucket = resources[bucket_id]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["LoggingConfiguration"]["DestinationBucketName"]
    (policy,) = [
        r["Properties"]["PolicyDocument"]
        for r in of_type(resources, "AWS::S3::BucketPolicy").values()
        if r["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    deny = [s for s in policy["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"].get("Bool", {}).get("aws:SecureTransport") == "false" for s in deny)


def test_import_notification_goes_to_ingest_object(built, resources):
    (notification,) = of_type(resources, "Custom::S3BucketNotifications").values()
    (config,) = notification["Properties"]["NotificationConfiguration"]["LambdaFunctionConfigurations"]
    assert config["Events"] == ["s3:ObjectCreated:*"]
    assert config["Filter"]["Key"]["FilterRules"] == [{"Name": "prefix", "Value": "imports/"}]
    assert config["LambdaFunctionArn"] == {
        "Fn::GetAtt": [built.logical_id(built.stack.node.find_child("IngestObject")), "Arn"]
    }


# -- functions --------------------------------------------------------------------------------------
@pytest.mark.parametrize("construct_id", FUNCTIONS)
def test_function_runtime_layers_and_environment(built, construct_id):
    p = props(built, built.stack.node.find_child(construct_id))
    assert p["Runtime"] == "python3.12"
    assert p["Architectures"] == ["x86_64"]
    assert p["TracingConfig"] == {"Mode": "Active"}
    layers = built.stack.layers
    # CDK orders layers by id; their contents do not overlap (python/heirloom, python/<deps>, tiktoken/)
    expected = [{"Ref": built.logical_id(layer)} for layer in (layers.shared, layers.deps, layers.tiktoken)]
    assert sorted(map(json.dumps, p["Layers"])) == sorted(map(json.dumps, expected))
    env = p["Environment"]["Variables"]
    assert env["TIKTOKEN_CACHE_DIR"] == TIKTOKEN_DIR
    assert env["POWERTOOLS_SERVICE_NAME"] == "heirloom"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Heirloom"
    assert env["EMBEDDING_DIM"] == str(EMBEDDING_DIM)
    assert p["LoggingConfig"]["LogGroup"]
    assert not any("PASSWORD" in key for key in env)


def test_environment_follows_access(built):
    def env(cid):
        return props(built, built.stack.node.find_child(cid))["Environment"]["Variables"]

    assert "BREAKER_TABLE" in env("GraphTraversal")
    assert "BREAKER_TABLE" not in env("VectorSearch")
    assert "CONTEXT_STATE_MACHINE_ARN" in env("Api")
    assert "CONNECTIONS_STATE_MACHINE_ARN" in env("Api")
    assert "CONNECTIONS_STATE_MACHINE_ARN" not in env("AccessFilter")
    assert "INGEST_STATE_MACHINE_ARN" in env("StoryEvents")
    assert "DATABASE_URL" not in env("RankAssemble")
    assert env("GraphTraversal")["NEPTUNE_ENDPOINT"]["Fn::GetAtt"][1] == "ReadEndpoint"
    assert env("GraphSync")["NEPTUNE_ENDPOINT"]["Fn::GetAtt"][1] == "Endpoint"


def test_the_shared_layer_holds_the_product_package_and_no_dev_tooling():
    layer = REPO_ROOT / "layers/shared/python"
    assert (layer / "heirloom/__init__.py").is_file()
    assert sorted(p.name for p in layer.iterdir() if p.is_dir() and not p.name.endswith(".egg-info")) == [
        "heirloom"
    ]
    imports = re.compile(r"^\s*(?:from|import)\s+(heirloom_dev|cdk)\b", re.MULTILINE)
    assert [str(f.relative_to(layer)) for f in layer.rglob("*.py") if imports.search(f.read_text())] == []
    # and nothing under cdk/ imports the dev tooling
    dev = re.compile(r"^\s*(?:from|import)\s+heirloom_dev\b", re.MULTILINE)
    assert [f.name for f in (REPO_ROOT / "cdk").rglob("*.py") if dev.search(f.read_text())] == []


def test_tiktoken_layer_path_is_what_tiktoken_looks_up():
    import hashlib

    blob = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    assert hashlib.sha1(blob.encode()).hexdigest() == TIKTOKEN_FILE


@pytest.mark.parametrize("construct_id", ["StoryEvents", "IngestObject"])
def test_async_functions_have_encrypted_dead_letter_queues(built, resources, construct_id):
    deployed = built.stack.functions[construct_id]
    p = props(built, deployed.function)
    queue_id = built.logical_id(deployed.dead_letters)
    assert p["DeadLetterConfig"] == {"TargetArn": {"Fn::GetAtt": [queue_id, "Arn"]}}
    assert resources[queue_id]["Properties"]["SqsManagedSseEnabled"] is True


# -- events -----------------------------------------------------------------------------------------
def test_story_events_rule(built, resources):
    rule = props(built, built.stack.events.story_rule)
    assert rule["EventPattern"] == {"source": ["heirloom.stories"]}
    assert rule["EventBusName"] == {"Ref": built.logical_id(built.stack.events.bus)}
    (target,) = rule["Targets"]
    deployed = built.stack.functions["StoryEvents"]
    assert target["Arn"] == {"Fn::GetAtt": [built.logical_id(deployed.function), "Arn"]}
    assert target["DeadLetterConfig"]["Arn"] == {
        "Fn::GetAtt": [built.logical_id(deployed.dead_letters), "Arn"]
    }


def test_backfill_schedule_starts_the_backfill_workflow(built):
    if built.stack.events.backfill_rule is None:
        pytest.skip("no statemachines/backfill.asl.json")
    rule = props(built, built.stack.events.backfill_rule)
    assert rule["ScheduleExpression"].startswith(("cron(", "rate("))
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Ref": built.logical_id(built.stack.workflows.by_name["backfill"])}
    # the ASL reads $.next.after and $.pace_seconds: both must be present (null is a value)
    payload = json.loads(target["Input"])
    assert payload["next"] == {"after": None, "page_size": 50, "stories_per_execution": 500}
    assert "pace_seconds" in payload
    BackfillRequest.model_validate(payload["next"])


# -- monitoring -------------------------------------------------------------------------------------
def alarms(resources):
    return [r["Properties"] for r in of_type(resources, "AWS::CloudWatch::Alarm").values()]


def test_context_p95_latency_alarm(built, resources):
    context = {"Ref": built.logical_id(built.stack.workflows.by_name["context_assembly"])}
    (alarm,) = [a for a in alarms(resources) if a.get("MetricName") == "ExecutionTime"]
    assert alarm["ExtendedStatistic"] == "p95"
    assert alarm["Threshold"] == 2000
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": context}]


def _metric_alarms(built, resources, workflow):
    """Math-expression alarms over `workflow`'s metrics: {metric names}."""
    arn = {"Ref": built.logical_id(built.stack.workflows.by_name[workflow])}
    out = []
    for alarm in alarms(resources):
        stats = [m["MetricStat"]["Metric"] for m in alarm.get("Metrics", []) if "MetricStat" in m]
        if stats and all(m["Dimensions"] == [{"Name": "StateMachineArn", "Value": arn}] for m in stats):
            out.append((alarm, {m["MetricName"] for m in stats}))
    return out


def test_context_failure_alarm(built, resources):
    ((_, names),) = _metric_alarms(built, resources, "context_assembly")
    assert names == {"ExecutionsFailed", "ExecutionsTimedOut"}


@pytest.mark.parametrize("workflow", ["ingest_story", "backfill"])
def test_failed_timed_out_or_aborted_ingestion_and_backfill_executions_alarm(built, resources, workflow):
    ((alarm, names),) = _metric_alarms(built, resources, workflow)
    assert names == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


def test_breaker_open_alarm(resources):
    (alarm,) = [a for a in alarms(resources) if a.get("MetricName") == "GraphCircuitOpen"]
    assert alarm["Namespace"] == "Heirloom"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "heirloom"}]
    assert alarm["Threshold"] == 1
    source = (REPO_ROOT / "layers/shared/python/heirloom/observability.py").read_text()
    assert 'name="GraphCircuitOpen"' in source  # emitted with the default service dimension


def test_ingestion_failures_alarm(resources):
    (alarm,) = [a for a in alarms(resources) if a.get("MetricName") == "IngestionFailures"]
    assert (alarm["Namespace"], alarm["Statistic"], alarm["Threshold"]) == ("Heirloom", "Sum", 1)
    source = (REPO_ROOT / "functions/ingest_failed/handler.py").read_text()
    assert 'name="IngestionFailures"' in source


def test_every_alarm_notifies_the_topic_and_the_dashboard_exists(built, resources):
    topic = {"Ref": built.logical_id(built.stack.monitoring.topic)}
    assert len(alarms(resources)) >= 5
    assert all(a["AlarmActions"] == [topic] for a in alarms(resources))
    assert len(of_type(resources, "AWS::CloudWatch::Dashboard")) == 1


def test_outputs_name_what_operators_need(built):
    outputs = set(built.json["Outputs"])
    assert {
        "ApiUrl",
        "UserPoolId",
        "UserPoolClientId",
        "EventBusName",
        "ImportBucketName",
        "AlarmTopicArn",
    } <= outputs
    assert {"ContextAssemblyStateMachineArn", "IngestStoryStateMachineArn"} <= outputs
