"""Run the real ASL files in moto's Step Functions interpreter, with Lambda tasks dispatched to
the in-process handlers.

The one patch point is `moto.awslambda.models.LambdaFunction._invoke_lambda` (pinned moto 5.2.5;
tests/statemachines/test_dispatch_seam.py guards it): it receives the invocation payload and
returns `(payload_json, errored, logs)`. A handler exception becomes
`{"errorType": <class name>, "errorMessage": ...}` with the error flag, so Step Functions sees
the class name as the error and the ASL's Catch blocks apply.

A second patch fills a moto gap: its `states:startExecution` integration hands the ASL's
parameter names (`StateMachineArn`, `Name`, `Input`) to boto3 unchanged, which expects
`stateMachineArn`..., and returns boto3's names (`executionArn`) where AWS returns
`ExecutionArn`. `_sfn_integration_cased` converts both ways (the seam test guards it).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from heirloom_dev.functions import LambdaContext, function_names, load_handler, state_name
from heirloom_dev.runtime import project_root

ACCOUNT = "123456789012"
REGION = "us-east-1"
ROLE_NAME = "heirloom-local-role"
#: workflow type by ASL file name (the rest are EXPRESS), as deployed by the CDK app
WORKFLOW_TYPES = {"backfill": "STANDARD"}

#: in-process replacement for a function: (event, context) -> result
Dispatch = Callable[[Any, LambdaContext], Any]


class WorkflowError(RuntimeError):
    """An execution ended in FAILED/TIMED_OUT/ABORTED; `error` is the typed error name."""

    def __init__(self, error: str, cause: str, history: list[dict[str, Any]]):
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause
        self.history = history


@dataclass
class Execution:
    status: str
    output: Any
    error: str | None
    cause: str | None
    seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)

    def states_entered(self) -> list[str]:
        return [
            e["stateEnteredEventDetails"]["name"] for e in self.history if "stateEnteredEventDetails" in e
        ]

    def task_payload(self, function: str) -> Any:
        """The payload the last scheduled invocation of Lambda `function` (e.g. "RankAssemble")
        got, from the history; None when it was not scheduled."""
        payload = None
        for event in self.history:
            details = event.get("taskScheduledEventDetails")
            if details and details.get("resource") == "invoke":
                parameters = json.loads(details["parameters"])
                if str(parameters.get("FunctionName", "")).rsplit(":", 1)[-1] == function:
                    payload = parameters.get("Payload")
        return payload


def asl_path(name: str) -> Path:
    return project_root() / "statemachines" / f"{name}.asl.json"


def substitute(definition: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        definition = definition.replace("${" + key + "}", value)
    return definition


def _sfn_integration_cased() -> Any:
    """A replacement for moto's StateTaskServiceSfn._eval_service_task that speaks AWS's casing."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    original = StateTaskServiceSfn._eval_service_task

    def eval_service_task(
        self: Any,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> Any:
        camel = {k[:1].lower() + k[1:]: v for k, v in normalised_parameters.items()}
        result = original(self, env, resource_runtime_part, camel, state_credentials)
        response = env.stack[-1]
        if isinstance(response, dict):
            env.stack[-1] = {k[:1].upper() + k[1:]: v for k, v in response.items()}
        return result

    return mock.patch.object(StateTaskServiceSfn, "_eval_service_task", eval_service_task)


class LocalWorkflows:
    """Inside `start()`: a moto account with one Lambda per function folder and the workflows."""

    def __init__(
        self,
        overrides: Mapping[str, Dispatch] | None = None,
        services: Any = None,
        machines: Iterable[str] | None = None,
    ):
        self.overrides = dict(overrides or {})
        #: the ASL files to create (names without .asl.json); None: all of them
        self.wanted = set(machines) if machines is not None else None
        #: injected into every real handler (tests); None lets handlers build their own
        self.services = services
        self._client: Any = None
        self._machines: dict[str, str] = {}
        self.invocations: list[str] = []

    def _dispatch(self, function_name: str, event: Any) -> tuple[str, bool, str]:
        self.invocations.append(function_name)
        context = LambdaContext(function_name=function_name)
        target = self.overrides.get(function_name)
        try:
            if target is not None:
                result = target(event, context)
            else:
                folder = next(f for f in function_names() if state_name(f) == function_name)
                handler = load_handler(folder)
                result = (
                    handler(event, context, services=self.services)
                    if self.services
                    else handler(event, context)
                )
        except Exception as exc:  # becomes the task's typed error
            body = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
            return json.dumps(body), True, ""
        return json.dumps(result), False, ""

    @contextmanager
    def start(self) -> Iterator[LocalWorkflows]:
        import boto3
        from moto import mock_aws
        from moto.awslambda.models import LambdaFunction

        workflows = self

        def invoke(fn: Any, event: Any = None) -> tuple[str, bool, str]:
            payload = json.loads(event) if isinstance(event, str | bytes) else event
            return workflows._dispatch(fn.function_name, payload)

        # the interpreter logs every caught task failure with a full state dump
        logging.getLogger("moto.stepfunctions").setLevel(logging.CRITICAL)
        with ExitStack() as stack:
            stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
            stack.enter_context(mock.patch.object(LambdaFunction, "_invoke_lambda", invoke))
            stack.enter_context(_sfn_integration_cased())
            iam = boto3.client("iam", region_name=REGION)
            role = iam.create_role(
                RoleName=ROLE_NAME,
                AssumeRolePolicyDocument=json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "sts:AssumeRole",
                                "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                            }
                        ],
                    }
                ),
            )["Role"]["Arn"]
            lam = boto3.client("lambda", region_name=REGION)
            arns = {}
            for name in sorted({state_name(f) for f in function_names()} | set(self.overrides)):
                arns[f"{name}FunctionArn"] = lam.create_function(
                    FunctionName=name,
                    Runtime="python3.12",
                    Role=role,
                    Handler="handler.handler",
                    Code={"ZipFile": b"local"},
                )["FunctionArn"]
            self._client = boto3.client("stepfunctions", region_name=REGION)
            for path in sorted((project_root() / "statemachines").glob("*.asl.json")):
                name = path.name.removesuffix(".asl.json")
                if self.wanted is not None and name not in self.wanted:
                    continue
                definition = substitute(path.read_text(), arns)
                self._machines[name] = self._client.create_state_machine(
                    name=name, definition=definition, roleArn=role, type=WORKFLOW_TYPES.get(name, "EXPRESS")
                )["stateMachineArn"]
            yield self

    def run(
        self,
        name: str,
        payload: Any,
        *,
        timeout_s: float = 30.0,
        raise_on_error: bool = False,
        history: bool = True,
    ) -> Execution:
        """Start an execution and poll it to the end (moto has no StartSyncExecution). With
        `history=False` the event history is not fetched (StartSyncExecution returns none
        either; moto takes ~0.1 s of CPU to serialise one)."""
        started = time.monotonic()
        arn = self.start_execution(name, payload)
        return self.wait(
            arn, timeout_s=timeout_s, raise_on_error=raise_on_error, history=history, started=started
        )

    def start_execution(self, name: str, payload: Any) -> str:
        """Start an execution without waiting for it; its ARN (see `wait`)."""
        arn: str = self._client.start_execution(
            stateMachineArn=self._machines[name], name=str(uuid.uuid4()), input=json.dumps(payload)
        )["executionArn"]
        return arn

    def executions(self, name: str) -> list[dict[str, Any]]:
        """ListExecutions of a workflow (name, status, start date), newest first."""
        out: list[dict[str, Any]] = self._client.list_executions(stateMachineArn=self._machines[name])[
            "executions"
        ]
        return out

    def run_chain(self, name: str, payload: Any, *, timeout_s: float = 30.0) -> list[Execution]:
        """Run a workflow that continues as new executions (the backfill): each execution whose
        output names `continued_as` is followed by that one. The executions in order."""
        chain = [self.run(name, payload, timeout_s=timeout_s)]
        while chain[-1].status == "SUCCEEDED" and (chain[-1].output or {}).get("continued_as"):
            chain.append(self.wait(chain[-1].output["continued_as"], timeout_s=timeout_s))
        return chain

    def wait(
        self,
        arn: str,
        *,
        timeout_s: float = 30.0,
        raise_on_error: bool = False,
        history: bool = True,
        started: float | None = None,
    ) -> Execution:
        """Poll the execution `arn` to its end (`seconds` counted from `started`, default now)."""
        started = time.monotonic() if started is None else started
        pause = 0.005
        while True:
            desc = self._client.describe_execution(executionArn=arn)
            if desc["status"] != "RUNNING" and _complete(desc):
                break
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(f"execution {arn} still running after {timeout_s} s")
            time.sleep(pause)
            # back off: concurrent callers polling every 5 ms would keep the interpreter's
            # threads from the CPU
            pause = min(pause * 1.5, 0.025)
        events = self._history(arn) if history else []
        output = json.loads(desc["output"]) if desc.get("output") else None
        execution = Execution(
            status=desc["status"],
            output=output,
            error=desc.get("error"),
            cause=desc.get("cause"),
            seconds=time.monotonic() - started,
            history=events,
        )
        if raise_on_error and execution.status != "SUCCEEDED":
            raise WorkflowError(execution.error or execution.status, execution.cause or "", events)
        return execution

    def _history(self, arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": arn, "maxResults": 1000}
        while True:
            page = self._client.get_execution_history(**kwargs)
            events.extend(page["events"])
            if not page.get("nextToken"):
                return events
            kwargs["nextToken"] = page["nextToken"]


def _complete(desc: Mapping[str, Any]) -> bool:
    """moto sets an execution's status before its output (or error): a describe in between
    reads SUCCEEDED without output, FAILED without error. Such a record is polled again."""
    if desc["status"] == "SUCCEEDED":
        return "output" in desc
    if desc["status"] == "FAILED":
        return "error" in desc
    return True


class LocalContextWorkflow:
    """The ContextWorkflow port over a started `LocalWorkflows`."""

    def __init__(self, workflows: LocalWorkflows, *, history: bool = True):
        self.workflows = workflows
        #: keep each execution's event history on `last` (the CLI's --history, tests)
        self.history = history
        self.last: Execution | None = None

    def run(self, request: Any) -> Any:
        from heirloom.contracts.context import AssembledContext
        from heirloom.domain.context_api import raise_for_workflow_error, timed_out

        # a local variable, not `self.last`: concurrent callers (the local API server) share this
        # object, and another request's execution must never answer this one
        execution = self.workflows.run(
            "context_assembly", {"request": request.model_dump(mode="json")}, history=self.history
        )
        self.last = execution
        if execution.status != "SUCCEEDED":
            raise_for_workflow_error(timed_out(execution.status, execution.error), execution.cause)
        return AssembledContext.model_validate(execution.output)


class LocalConnectionsWorkflow:
    """The ConnectionsWorkflow port over a started `LocalWorkflows` (story_connections)."""

    def __init__(self, workflows: LocalWorkflows, *, history: bool = False):
        self.workflows = workflows
        self.history = history
        self.last: Execution | None = None

    def run(self, request: Any) -> Any:
        from heirloom.contracts.connections import StoryConnections
        from heirloom.domain.context_api import raise_for_workflow_error, timed_out

        execution = self.workflows.run(
            "story_connections", {"connections": request.model_dump(mode="json")}, history=self.history
        )
        self.last = execution
        if execution.status != "SUCCEEDED":
            raise_for_workflow_error(timed_out(execution.status, execution.error), execution.cause)
        return StoryConnections.model_validate(execution.output)
