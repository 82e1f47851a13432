"""The Heirloom stack: one stack, one construct per concern (docs/decisions/0001-one-stack.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Acknowledgment, CfnOutput, Stack, Validations
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.api import ContextApi
from cdk.config import (
    BACKFILL_WORKFLOW,
    COMMUNITIES_WORKFLOW,
    CONNECTIONS_WORKFLOW,
    CONTEXT_WORKFLOW,
    INGEST_WORKFLOW,
    HeirloomConfig,
)
from cdk.data import Data
from cdk.events import Events
from cdk.functions import DeployedFunction, Functions
from cdk.layers import Layers
from cdk.migrations import Migrations
from cdk.monitoring import Monitoring
from cdk.naming import REPO_ROOT, function_folders, state_name, workflow_files
from cdk.network import Network
from cdk.workflows import Workflows, WorkflowSource, state_machine_arn, task_timeouts

#: lower-level construct the S3 notification custom resource puts in the stack
NOTIFICATIONS_HANDLER_ID = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"


RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


class MissingFunction(LookupError):
    """A function the stack wires explicitly (Api, StoryEvents, ...) has no folder."""


class HeirloomStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HeirloomConfig | None = None,
        root: Path = REPO_ROOT,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config = config or HeirloomConfig.from_context(self.node)
        retention = RETENTION[config.log_retention_days]
        sources = [WorkflowSource.read(path) for path in workflow_files(root)]

        self.network = Network(self, "Network", log_retention=retention, config=config)
        self.data = Data(self, "Data", network=self.network, config=config)
        self.layers = Layers(self, "Layers", root=root, require_built=config.require_built_layers)
        self.functions = Functions(
            self,
            root=root,
            layers=self.layers,
            network=self.network,
            data=self.data,
            config=config,
            log_retention=retention,
            task_timeouts=task_timeouts(sources),
            folders=function_folders(root),
            provisioned=frozenset(
                task.construct_id
                for source in sources
                if source.name == CONTEXT_WORKFLOW
                for task in source.tasks
            ),
        )
        self.migrations = Migrations(
            self,
            "Migrations",
            root=root,
            network=self.network,
            data=self.data,
            layers=self.layers,
            log_retention=retention,
        )
        self.workflows = Workflows(
            self,
            "Workflows",
            sources=sources,
            functions=self.functions,
            log_retention=retention,
            root=root,
            config=config,
        )
        context = self.workflows.by_name.get(CONTEXT_WORKFLOW)
        if context is None:
            raise MissingFunction(f"statemachines/{CONTEXT_WORKFLOW}.asl.json is missing")
        self.functions.grant_workflows(
            context,
            # by name: GraphSync, a task of ingest_story, starts it (a reference closes a cycle)
            state_machine_arn(self, INGEST_WORKFLOW) if INGEST_WORKFLOW in self.workflows.by_name else None,
            state_machine_arn(self, BACKFILL_WORKFLOW)
            if BACKFILL_WORKFLOW in self.workflows.by_name
            else None,
            self.workflows.by_name.get(CONNECTIONS_WORKFLOW),
        )
        self.api = ContextApi(
            self, "ContextApi", handler=self._required("Api").function, config=config, log_retention=retention
        )
        self.events = Events(
            self,
            "Events",
            story_events=self._required("StoryEvents"),
            ingest_object=self._required("IngestObject"),
            import_bucket=self.data.import_bucket,
            backfill=self.workflows.by_name.get(BACKFILL_WORKFLOW),
            config=config,
            communities=self.workflows.by_name.get(COMMUNITIES_WORKFLOW),
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            context_workflow=context,
            functions=self.functions,
            config=config,
            # story_connections fails with the caller's 403 / 404 like the context workflow: no
            # any-failure alarm for either
            other_workflows={
                n: m
                for n, m in self.workflows.by_name.items()
                if n not in (CONTEXT_WORKFLOW, CONNECTIONS_WORKFLOW)
            },
        )
        self._acknowledge_notifications_handler()
        self._outputs()

    def _required(self, construct_id: str) -> DeployedFunction:
        try:
            return self.functions[construct_id]
        except KeyError:
            raise MissingFunction(
                f"the stack wires {construct_id} but functions/ has no folder for it"
            ) from None

    def _acknowledge_notifications_handler(self) -> None:
        handler = self.node.try_find_child(NOTIFICATIONS_HANDLER_ID)
        if handler is None:
            return
        role = handler.node.find_child("Role")
        for rule_id, reason in {
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
                "CDK's S3 bucket-notification custom resource (not our code) creates its role with "
                "the basic execution managed policy."
            ),
            "AwsSolutions-IAM5[Resource::*]": (
                "CDK's S3 bucket-notification custom resource needs s3:PutBucketNotification, "
                "which it requests on '*'; it runs only during deployments."
            ),
        }.items():
            Validations.of(role).acknowledge(Acknowledgment(id=rule_id, reason=reason))

    def _outputs(self) -> None:
        outputs = {
            "ApiUrl": self.api.api.url_for_path("/legacies"),
            "UserPoolId": self.api.user_pool.user_pool_id,
            "UserPoolClientId": self.api.client.user_pool_client_id,
            "OpsClientId": self.api.ops_client.user_pool_client_id,
            "EventBusName": self.events.bus.event_bus_name,
            "ImportBucketName": self.data.import_bucket.bucket_name,
            "AlarmTopicArn": self.monitoring.topic.topic_arn,
        }
        for name, machine in self.workflows.by_name.items():
            outputs[f"{state_name(name)}StateMachineArn"] = machine.state_machine_arn
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)
