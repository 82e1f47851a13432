"""The pgvector migration custom resource: a VPC function (shared + deps layers) behind the CDK
Provider framework, re-run whenever a migration file or the embedding dimension changes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import cast

from aws_cdk import Acknowledgment, CfnElement, CustomResource, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from cdk.config import DATABASE_NAME, EMBEDDING_DIM
from cdk.data import Data
from cdk.functions import ENI_ACTIONS
from cdk.layers import ARCHITECTURE, RUNTIME, RUNTIME_PIN_REASON, Layers
from cdk.network import Network

HANDLER_DIR = Path(__file__).resolve().parent / "migrate"


def migrations_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / "layers" / "shared" / "python" / "heirloom" / "migrations").glob("*.sql")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Migrations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        root: Path,
        network: Network,
        data: Data,
        layers: Layers,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=network.vpc,
            description="Schema migrations: Aurora writer and the Secrets Manager endpoint",
        )
        data.database_security_group.add_ingress_rule(security_group, ec2.Port.tcp(5432), "schema migrations")
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        log_group = logs.LogGroup(self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        log_group.grant_write(role)
        role.add_to_policy(iam.PolicyStatement(actions=ENI_ACTIONS, resources=["*"]))
        data.secret.grant_read(role)
        Validations.of(role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="The ec2 network-interface actions a VPC Lambda needs have no resource-level "
                "permissions.",
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc", "__init__.py"]),
            description="Apply heirloom migrations (pgvector) to Aurora",
            layers=[layers.shared, layers.deps],
            role=role,
            timeout=Duration.minutes(5),
            memory_size=512,
            log_group=log_group,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[security_group],
            environment={
                "DB_SECRET_ARN": data.secret.secret_arn,
                "DB_HOST": data.cluster.cluster_endpoint.hostname,
                "DB_PORT": str(data.cluster.cluster_endpoint.port),
                "DB_NAME": DATABASE_NAME,
                "EMBEDDING_DIM": str(EMBEDDING_DIM),
            },
        )
        Validations.of(self.function).acknowledge(
            Acknowledgment(id="AwsSolutions-L1", reason=RUNTIME_PIN_REASON)
        )
        framework_logs = logs.LogGroup(
            self, "ProviderLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        provider = cr.Provider(self, "Provider", on_event_handler=self.function, log_group=framework_logs)
        framework = provider.node.find_child("framework-onEvent")
        function_id = Stack.of(self).resolve(
            Stack.of(self).get_logical_id(cast(CfnElement, self.function.node.default_child))
        )
        for rule_id, reason in {
            f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]": (
                "CDK Provider framework: it may invoke any version of the one migration function."
            ),
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
                "CDK Provider framework function (not our code): its role is created by the "
                "framework with the basic execution managed policy."
            ),
            "AwsSolutions-L1": (
                "CDK Provider framework function: its Node.js runtime is chosen and updated by aws-cdk-lib."
            ),
        }.items():
            Validations.of(framework).acknowledge(Acknowledgment(id=rule_id, reason=reason))
        self.resource = CustomResource(
            self,
            "Schema",
            service_token=provider.service_token,
            resource_type="Custom::HeirloomMigrations",
            properties={"Migrations": migrations_digest(root), "EmbeddingDim": str(EMBEDDING_DIM)},
        )
        self.resource.node.add_dependency(data.cluster)
