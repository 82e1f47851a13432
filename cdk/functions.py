"""One Lambda per functions/<folder>/handler.py, construct id from the naming rule, placed
directly in the stack (so `sam local invoke -t cdk.out/Heirloom.template.json IntentAnalysis`
finds it). Permissions, environment and network placement come from `access.ACCESS`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from pathlib import Path

from aws_cdk import Acknowledgment, Aws, CfnElement, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk.access import Access, Graph, Model, access_for
from cdk.config import (
    DATABASE_NAME,
    DATABASE_PORT,
    DB_STATEMENT_TIMEOUT_MS,
    EMBEDDING_DIM,
    IMPORT_PREFIX,
    METRICS_NAMESPACE,
    NEPTUNE_PORT,
    POWERTOOLS_SERVICE,
    TIKTOKEN_DIR,
    HeirloomConfig,
)
from cdk.data import Data
from cdk.layers import ARCHITECTURE, RUNTIME, RUNTIME_PIN_REASON, Layers
from cdk.naming import state_name
from cdk.network import Network
from heirloom.settings import HAIKU_MODEL_ID, RERANK_MODEL_ID, TITAN_EMBED_MODEL_ID

NEPTUNE_READ = ["neptune-db:ReadDataViaQuery"]
NEPTUNE_WRITE = [
    "neptune-db:ReadDataViaQuery",
    "neptune-db:WriteDataViaQuery",
    "neptune-db:DeleteDataViaQuery",
]
#: what AWSLambdaVPCAccessExecutionRole grants for the function's network interfaces
ENI_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
]
BREAKER_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem"]
#: Powertools' DynamoDBPersistenceLayer
IDEMPOTENCY_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
IMPORT_ACTIONS = ["s3:GetObject", "s3:PutObjectTagging"]


@dataclass
class DeployedFunction:
    construct_id: str
    folder: str
    access: Access
    function: lambda_.Function
    role: iam.Role
    #: what workflows invoke: the function, or its `live` alias with provisioned concurrency
    target: lambda_.IFunction
    dead_letters: sqs.Queue | None
    security_group: ec2.SecurityGroup | None


def handler_summary(handler: Path) -> str:
    """First line of the handler module's docstring (the function's description)."""
    doc = ast.get_docstring(ast.parse(handler.read_text())) or ""
    return (doc.strip().splitlines() or [""])[0][:256]


def haiku_profile(config: HeirloomConfig) -> str:
    """Claude Haiku's cross-region inference profile in the configured geography."""
    return f"{config.inference_profile_prefix}.{HAIKU_MODEL_ID}"


def model_arns(model: Model, config: HeirloomConfig) -> list[str]:
    def foundation(region: str, model_id: str) -> str:
        return f"arn:{Aws.PARTITION}:bedrock:{region}::foundation-model/{model_id}"

    if model is Model.EMBED:
        return [foundation(Aws.REGION, TITAN_EMBED_MODEL_ID)]
    if model is Model.RERANK:
        return [foundation(Aws.REGION, RERANK_MODEL_ID)]
    profile = (
        f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{haiku_profile(config)}"
    )
    # a cross-region inference profile invokes the model in any of its destination regions
    regions = [Aws.REGION, *config.inference_profile_regions]
    return [profile, *(foundation(region, HAIKU_MODEL_ID) for region in regions)]


def model_environment(models: frozenset[Model], config: HeirloomConfig) -> dict[str, str]:
    env = {}
    if Model.EMBED in models:
        env["BEDROCK_EMBED_MODEL_ID"] = TITAN_EMBED_MODEL_ID
    if Model.CLASSIFY in models:
        haiku = haiku_profile(config)
        env["BEDROCK_EXTRACTION_MODEL_ID"] = haiku
        env["BEDROCK_INTENT_MODEL_ID"] = haiku
    if Model.RERANK in models:
        env["RERANK_MODEL_ID"] = RERANK_MODEL_ID
    return env


class Functions:
    """Creates the functions in the stack's scope; `by_id` maps construct id -> deployment."""

    def __init__(
        self,
        stack: Stack,
        *,
        root: Path,
        layers: Layers,
        network: Network,
        data: Data,
        config: HeirloomConfig,
        log_retention: logs.RetentionDays,
        task_timeouts: dict[str, int],
        folders: list[str],
        provisioned: frozenset[str] = frozenset(),
    ) -> None:
        self.stack = stack
        self.network = network
        self.data = data
        self.config = config
        self.log_retention = log_retention
        self.by_id: dict[str, DeployedFunction] = {}
        for folder in folders:
            construct_id = state_name(folder)
            self.by_id[construct_id] = self._function(
                root,
                folder,
                construct_id,
                layers,
                task_timeouts.get(construct_id),
                config.provisioned_concurrency if construct_id in provisioned else 0,
            )

    def __getitem__(self, construct_id: str) -> DeployedFunction:
        return self.by_id[construct_id]

    def common_environment(self) -> dict[str, str]:
        graph = self.config.graph == "neptune"
        return {
            "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            # responses carry story text: keep it out of X-Ray
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            "TIKTOKEN_CACHE_DIR": TIKTOKEN_DIR,
            "GRAPH_ENV_PREFIX": self.config.graph_prefix,
            "GRAPH_AUGMENTATION_ENABLED": "true" if graph else "false",
            "EMBEDDING_PROVIDER": "bedrock",
            "EMBEDDING_DIM": str(EMBEDDING_DIM),
            # without a graph there is nothing to extract entities for
            "EXTRACTOR_PROVIDER": "bedrock" if graph else "none",
            **({} if graph else {"GRAPH_PROVIDER": "none"}),
            # every function names the extractor's version alike (a sync mark is compared with
            # it): the model id it is made of, whether the function may call the model or not
            **({"BEDROCK_EXTRACTION_MODEL_ID": haiku_profile(self.config)} if graph else {}),
        }

    def _function(
        self,
        root: Path,
        folder: str,
        construct_id: str,
        layers: Layers,
        task_timeout: int | None,
        provisioned: int = 0,
    ) -> DeployedFunction:
        stack, access = self.stack, access_for(construct_id)
        if self.config.graph == "none":  # nothing to reach: no grant, no endpoint, no ingress
            access = replace(access, graph=Graph.NONE)
        if access.intent_model and self.config.intent_provider == "bedrock":
            access = replace(access, models=access.models | {Model.CLASSIFY})
        if access.rerank_model and self.config.reranker == "bedrock":
            access = replace(access, models=access.models | {Model.RERANK})
        role = iam.Role(
            stack,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{construct_id} Lambda: the grants of its row in cdk/access.py",
        )
        log_group = logs.LogGroup(
            stack,
            f"{construct_id}Logs",
            retention=self.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        log_group.grant_write(role)
        security_group = None
        if access.in_vpc:
            security_group = ec2.SecurityGroup(
                stack,
                f"{construct_id}SecurityGroup",
                vpc=self.network.vpc,
                description=f"{construct_id} Lambda (egress stays in the VPC: isolated subnets)",
                allow_all_outbound=True,
            )
            role.add_to_policy(iam.PolicyStatement(actions=ENI_ACTIONS, resources=["*"]))
        dead_letters = None
        if access.asynchronous:
            dead_letters = sqs.Queue(
                stack,
                f"{construct_id}DeadLetters",
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                retention_period=Duration.days(14),
            )
        environment = {**self.common_environment(), **self._environment(access)}
        function = lambda_.Function(
            stack,
            construct_id,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(root / "functions" / folder), exclude=["__pycache__", "*.pyc"]),
            description=handler_summary(root / "functions" / folder / "handler.py"),
            layers=layers.all,
            role=role,
            # a workflow Task's TimeoutSeconds bounds its function: no work after the Task gave up
            timeout=Duration.seconds(task_timeout or access.timeout_s),
            memory_size=access.memory_mb,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment=environment,
            vpc=self.network.vpc if access.in_vpc else None,
            vpc_subnets=self.network.subnets if access.in_vpc else None,
            security_groups=[security_group] if security_group else None,
            dead_letter_queue=dead_letters,
            retry_attempts=2 if access.asynchronous else None,
        )
        self._grant(role, access, security_group)
        Validations.of(function).acknowledge(Acknowledgment(id="AwsSolutions-L1", reason=RUNTIME_PIN_REASON))
        Validations.of(role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="Only for actions without resource-level permissions: X-Ray "
                "PutTraceSegments/PutTelemetryRecords (active tracing), bedrock:Rerank (the "
                "reranking stage; InvokeModel stays on the rerank model's ARN) and, for functions "
                "in the VPC, the ec2 network-interface actions Lambda needs to attach to the subnets.",
            )
        )
        target: lambda_.IFunction = function
        if provisioned:
            # provisioned concurrency lives on a version; the alias follows each new one
            target = lambda_.Alias(
                stack,
                f"{construct_id}Live",
                alias_name="live",
                version=function.current_version,
                provisioned_concurrent_executions=provisioned,
            )
        return DeployedFunction(
            construct_id, folder, access, function, role, target, dead_letters, security_group
        )

    def _environment(self, access: Access) -> dict[str, str]:
        data, env = self.data, {}
        if access.database:
            # the cluster secret's username and password, through the proxy when there is one (TLS)
            env["DB_SECRET_ARN"] = data.secret.secret_arn
            env["DB_HOST"] = data.database_host
            env["DB_PORT"] = str(DATABASE_PORT)
            env["DB_NAME"] = DATABASE_NAME
            env["DB_SSLMODE"] = "require"
            env["DB_STATEMENT_TIMEOUT_MS"] = str(DB_STATEMENT_TIMEOUT_MS)
        if access.graph is Graph.NONE:
            # no endpoint to build a graph client from: its ports (ingestion's too) have none
            env["GRAPH_PROVIDER"] = "none"
            env["GRAPH_AUGMENTATION_ENABLED"] = "false"
        else:
            assert data.graph is not None, "graph access without a graph (heirloom:graph=none)"
            endpoint = (
                data.graph.attr_endpoint if access.graph is Graph.WRITE else data.graph.attr_read_endpoint
            )
            env["NEPTUNE_ENDPOINT"] = endpoint
            env["NEPTUNE_PORT"] = str(NEPTUNE_PORT)
            env["NEPTUNE_IAM_AUTH"] = "true"
        env.update(model_environment(access.models, self.config))
        if access.intent_model:
            env["INTENT_PROVIDER"] = self.config.intent_provider
        if access.rerank_model:
            env["RERANKER"] = self.config.reranker
        if access.breaker:
            env["BREAKER_TABLE"] = data.breaker_table.table_name
        if access.idempotency:
            env["IDEMPOTENCY_TABLE"] = data.idempotency_table.table_name
        return env

    def _grant(self, role: iam.Role, access: Access, security_group: ec2.SecurityGroup | None) -> None:
        data = self.data
        if access.database:
            assert security_group is not None
            data.secret.grant_read(role)
            data.client_security_group.add_ingress_rule(
                security_group, ec2.Port.tcp(5432), f"from {security_group.node.id}"
            )
        if access.graph is not Graph.NONE:
            assert security_group is not None and data.graph is not None
            resource = (
                f"arn:{Aws.PARTITION}:neptune-db:{Aws.REGION}:{Aws.ACCOUNT_ID}:"
                f"{data.graph.attr_cluster_resource_id}/*"
            )
            actions = NEPTUNE_WRITE if access.graph is Graph.WRITE else NEPTUNE_READ
            role.add_to_policy(iam.PolicyStatement(actions=actions, resources=[resource]))
            data.graph_security_group.add_ingress_rule(
                security_group, ec2.Port.tcp(NEPTUNE_PORT), f"from {security_group.node.id}"
            )
            Validations.of(role).acknowledge(
                Acknowledgment(
                    id=f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:neptune-db:<AWS::Region>:"
                    f"<AWS::AccountId>:<{self._logical_id(data.graph)}.ClusterResourceId>/*]",
                    reason="neptune-db resources are `cluster-resource-id/*`: the '*' is the database "
                    "slot of this one cluster, and the actions are the exact query actions.",
                )
            )
        for model in sorted(access.models, key=lambda m: m.value):
            role.add_to_policy(
                iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=model_arns(model, self.config))
            )
        if Model.RERANK in access.models:
            # the Rerank action has no resource type: the model it may use is the InvokeModel above
            role.add_to_policy(iam.PolicyStatement(actions=["bedrock:Rerank"], resources=["*"]))
        if access.breaker:
            data.breaker_table.grant(role, *BREAKER_ACTIONS)
        if access.idempotency:
            data.idempotency_table.grant(role, *IDEMPOTENCY_ACTIONS)
        if access.imports:
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=IMPORT_ACTIONS,
                    resources=[data.import_bucket.arn_for_objects(f"{IMPORT_PREFIX}*")],
                )
            )
            # without it S3 answers HeadObject of a key deleted before its event was handled
            # with 403, not 404 (S3 HeadObject permissions), and the import is not "missing"
            role.add_to_policy(
                iam.PolicyStatement(actions=["s3:ListBucket"], resources=[data.import_bucket.bucket_arn])
            )
            Validations.of(role).acknowledge(
                Acknowledgment(
                    id=f"AwsSolutions-IAM5[Resource::<{self._logical_id(data.import_bucket)}.Arn>/"
                    f"{IMPORT_PREFIX}*]",
                    reason="Object keys are only known per event: read and tag any object under "
                    "the import prefix of this one bucket.",
                )
            )

    def _logical_id(self, construct: Construct) -> str:
        element = construct if isinstance(construct, CfnElement) else construct.node.default_child
        assert isinstance(element, CfnElement)
        logical_id: str = self.stack.resolve(self.stack.get_logical_id(element))
        return logical_id

    def grant_workflows(
        self,
        context: sfn.StateMachine,
        ingest_arn: str | None,
        backfill_arn: str | None = None,
        connections: sfn.StateMachine | None = None,
    ) -> None:
        """Functions that start a workflow get that one workflow's ARN and start action only;
        BackfillPlan lists the backfill's executions (`backfill_arn` and `ingest_arn` are built
        from the workflow's name: a reference would close a cycle through the workflow's own
        role, or through GraphSync, one of ingest_story's own tasks)."""
        for deployed in self.by_id.values():
            if deployed.access.list_backfill:
                if backfill_arn is None:
                    raise LookupError(
                        f"{deployed.construct_id} lists backfill executions: no backfill ASL file"
                    )
                deployed.role.add_to_principal_policy(
                    iam.PolicyStatement(actions=["states:ListExecutions"], resources=[backfill_arn])
                )
            if deployed.access.start_context:
                context.grant_start_sync_execution(deployed.role)
                deployed.function.add_environment("CONTEXT_STATE_MACHINE_ARN", context.state_machine_arn)
            if deployed.access.start_connections:
                if connections is None:
                    raise LookupError(
                        f"{deployed.construct_id} starts story_connections, which has no ASL file"
                    )
                connections.grant_start_sync_execution(deployed.role)
                deployed.function.add_environment(
                    "CONNECTIONS_STATE_MACHINE_ARN", connections.state_machine_arn
                )
            if deployed.access.start_ingestion:
                if ingest_arn is None:
                    raise LookupError(f"{deployed.construct_id} starts ingest_story, which has no ASL file")
                deployed.role.add_to_principal_policy(
                    iam.PolicyStatement(actions=["states:StartExecution"], resources=[ingest_arn])
                )
                deployed.function.add_environment("INGEST_STATE_MACHINE_ARN", ingest_arn)
