"""The state machines of statemachines/*.asl.json, inlined with `DefinitionBody.from_string`
(so cfn-lint sees them) and filled with `definition_substitutions`. EXPRESS unless listed in
`STANDARD_WORKFLOWS`; X-Ray tracing on every one. Logging keeps users' data out of CloudWatch
unless `debug_logging` is set (`logging_levels`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Acknowledgment, ArnFormat, RemovalPolicy, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk.config import STANDARD_WORKFLOWS, HeirloomConfig
from cdk.functions import Functions
from cdk.naming import FUNCTION_ARN_SUFFIX, TaskRef, lambda_tasks, placeholders, state_name, workflow_name


class MissingSubstitution(ValueError):
    """An ASL file uses `${...}` with no value: a function folder is missing or misnamed."""


@dataclass(frozen=True)
class WorkflowSource:
    name: str
    path: Path
    text: str
    tasks: list[TaskRef]

    @classmethod
    def read(cls, path: Path) -> WorkflowSource:
        text = path.read_text()
        return cls(workflow_name(path), path, text, lambda_tasks(json.loads(text)))

    @property
    def construct_id(self) -> str:
        return f"{state_name(self.name)}Workflow"

    @property
    def kind(self) -> sfn.StateMachineType:
        return (
            sfn.StateMachineType.STANDARD if self.name in STANDARD_WORKFLOWS else sfn.StateMachineType.EXPRESS
        )


#: the ASL's Resource for starting an execution (the backfill starts itself to continue)
START_EXECUTION = "arn:aws:states:::states:startExecution"


def state_machine_arn(scope: Construct, name: str) -> str:
    """The ARN of workflow `name` (e.g. "backfill") from its fixed state machine name, without a
    reference to the resource (which may be the one asking)."""
    stack = Stack.of(scope)
    return stack.format_arn(
        service="states",
        resource="stateMachine",
        resource_name=f"{stack.stack_name}-{state_name(name)}",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def logging_levels(kind: sfn.StateMachineType, *, debug: bool) -> tuple[sfn.LogLevel, bool]:
    """(level, include execution data) of a workflow's CloudWatch logs.

    Express executions have no console history: by default they log only failures (ERROR) and
    without execution data, so questions, chat history and assembled story text never reach
    CloudWatch; `debug` logs every event with its data. Standard executions keep their history
    (with data) in Step Functions itself; their logs carry event types only.
    """
    if kind == sfn.StateMachineType.STANDARD:
        return sfn.LogLevel.ALL, False
    return (sfn.LogLevel.ALL, True) if debug else (sfn.LogLevel.ERROR, False)


def task_timeouts(sources: list[WorkflowSource]) -> dict[str, int]:
    """Construct id -> the smallest TimeoutSeconds of the Tasks that call it."""
    out: dict[str, int] = {}
    for source in sources:
        for task in source.tasks:
            if task.timeout_s:
                out[task.construct_id] = min(task.timeout_s, out.get(task.construct_id, task.timeout_s))
    return out


class Workflows(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        sources: list[WorkflowSource],
        functions: Functions,
        log_retention: logs.RetentionDays,
        root: Path,
        config: HeirloomConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        self.by_name: dict[str, sfn.StateMachine] = {}
        stack = Stack.of(self)
        for source in sources:
            substitutions = self._substitutions(source, functions, root)
            level, include_data = logging_levels(source.kind, debug=config.debug_logging)
            log_group = logs.LogGroup(
                self,
                f"{source.construct_id}Logs",
                # the vended-logs prefix keeps the CloudWatch Logs resource policy small
                log_group_name=f"/aws/vendedlogs/states/{stack.stack_name}-{state_name(source.name)}",
                retention=log_retention,
                removal_policy=RemovalPolicy.DESTROY,
            )
            machine = sfn.StateMachine(
                self,
                source.construct_id,
                state_machine_name=f"{stack.stack_name}-{state_name(source.name)}",  # state_machine_arn
                state_machine_type=source.kind,
                definition_body=sfn.DefinitionBody.from_string(source.text),
                definition_substitutions=substitutions,
                logs=sfn.LogOptions(destination=log_group, level=level, include_execution_data=include_data),
                tracing_enabled=True,
            )
            # from_string hides the Tasks from CDK: grant each called function explicitly, and
            # only the unqualified ARN the definition uses
            invoked = sorted({task.construct_id for task in source.tasks})
            machine.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["lambda:InvokeFunction"],
                    resources=[functions[cid].target.function_arn for cid in invoked],
                )
            )
            if START_EXECUTION in source.text:
                # continue-as-new: the workflow starts a new execution of itself
                machine.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["states:StartExecution"], resources=[state_machine_arn(self, source.name)]
                    )
                )
            Validations.of(machine.role).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-IAM5[Resource::*]",
                    reason="CloudWatch Logs delivery (logs:CreateLogDelivery and friends) and X-Ray "
                    "(PutTraceSegments, GetSampling*) have no resource-level permissions; Lambda "
                    "invocation is granted on the called functions' ARNs only.",
                )
            )
            if level != sfn.LogLevel.ALL:
                Validations.of(machine).acknowledge(
                    Acknowledgment(
                        id="AwsSolutions-SF1",
                        reason="Privacy: Express executions would log users' questions, chat "
                        "history and story text; they log errors only unless "
                        "heirloom:debugLogging is set (docs/deploy.md, Logging).",
                    )
                )
            self.by_name[source.name] = machine

    @staticmethod
    def _substitutions(source: WorkflowSource, functions: Functions, root: Path) -> dict[str, str]:
        values: dict[str, str] = {}
        missing = []
        for key in sorted(placeholders(source.text)):
            construct_id = key.removesuffix(FUNCTION_ARN_SUFFIX)
            if key.endswith(FUNCTION_ARN_SUFFIX) and construct_id in functions.by_id:
                values[key] = functions[construct_id].target.function_arn
            else:
                missing.append(key)
        if missing:
            known = ", ".join(sorted(functions.by_id)) or "none"
            raise MissingSubstitution(
                f"{source.path.relative_to(root)}: no value for "
                + ", ".join("${" + k + "}" for k in missing)
                + f". `${{XFunctionArn}}` needs functions/<x_snake>/handler.py (functions found: {known})."
            )
        return values
