"""Step Functions on AWS: the context and story_connections workflows (StartSyncExecution on the
Express state machines), starting ingestions, and the backfill's running executions."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import AssembledContext, ContextRequest
from heirloom.contracts.ingestion import RunningExecution
from heirloom.domain.context_api import WorkflowFailed, WorkflowTimedOut, raise_for_workflow_error, timed_out
from heirloom.errors import Rejected, Retryable

#: StartExecution errors a later attempt can get past (AWS Step Functions API reference)
_TRANSIENT = frozenset({"ThrottlingException", "ServiceUnavailable", "InternalServerError", "RequestTimeout"})

#: the workflow stops itself at 18 s (the ASL's TimeoutSeconds, cold starts and their retries
#: included) and the API function at 22 s (cdk/access.py): one attempt of 20 s answers in between
#: (tests/infrastructure/test_workflows.py checks the order); an unreachable endpoint fails in 2 s
CLIENT_TIMEOUTS = {
    "connect_timeout": 2,
    "read_timeout": 20,
    "retries": {"total_max_attempts": 1, "mode": "standard"},
}


class _SyncWorkflow:
    """StartSyncExecution of an Express state machine; its typed errors raised as the API's."""

    #: the execution input's key for the request, and the output model
    input_key = "request"
    output: type[BaseModel] = AssembledContext

    def __init__(self, state_machine_arn: str, client: Any | None = None):
        import boto3
        from botocore.config import Config

        self.arn = state_machine_arn
        self._client = client or boto3.client("stepfunctions", config=Config(**CLIENT_TIMEOUTS))

    def _execute(self, request: BaseModel) -> Any:
        from botocore.exceptions import ClientError, ReadTimeoutError
        from botocore.exceptions import ConnectionError as EndpointUnreachable

        try:
            response = self._client.start_sync_execution(
                stateMachineArn=self.arn, input=json.dumps({self.input_key: request.model_dump(mode="json")})
            )
        except ReadTimeoutError as exc:
            raise WorkflowTimedOut("no answer from Step Functions within the read timeout") from exc
        except EndpointUnreachable as exc:  # connect timeouts and refused connections
            raise WorkflowFailed(f"Step Functions unreachable: {type(exc).__name__}") from exc
        except ClientError as exc:  # throttling, service errors: not the caller's
            raise WorkflowFailed(f"Step Functions refused: {exc.response['Error'].get('Code')}") from exc
        if response["status"] != "SUCCEEDED":
            raise_for_workflow_error(
                timed_out(response["status"], response.get("error")), response.get("cause")
            )
        return self.output.model_validate_json(response["output"])


class StepFunctionsContextWorkflow(_SyncWorkflow):
    def run(self, request: ContextRequest) -> AssembledContext:
        result: AssembledContext = self._execute(request)
        return result


class StepFunctionsConnectionsWorkflow(_SyncWorkflow):
    """The story_connections workflow, the same way (StartSyncExecution, same timeouts)."""

    input_key = "connections"
    output = StoryConnections

    def run(self, request: ConnectionsRequest) -> StoryConnections:
        result: StoryConnections = self._execute(request)
        return result


class StepFunctionsIngestionStarter:
    """Starts the ingest_story workflow for a story (asynchronous; failures are recorded by it)."""

    def __init__(self, state_machine_arn: str, client: Any | None = None):
        import boto3

        self.arn = state_machine_arn
        self._client = client or boto3.client("stepfunctions")

    def __call__(self, story_id: Any) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self._client.start_execution(
                stateMachineArn=self.arn, input=json.dumps({"story_id": str(story_id)})
            )
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            kind = Retryable if code in _TRANSIENT or status >= 500 else Rejected
            raise kind(f"StartExecution failed: {code or status}") from exc
        except BotoCoreError as exc:  # the endpoint could not be reached
            raise Retryable(f"StartExecution failed: {type(exc).__name__}") from exc


class StepFunctionsBackfillRuns:
    """The running executions of the backfill state machine (ListExecutions, RUNNING)."""

    def __init__(self, client: Any | None = None):
        self._client = client

    def running(self, state_machine_arn: str) -> list[RunningExecution]:
        if self._client is None:
            import boto3

            # arn:aws:states:<region>:<account>:stateMachine:<name>
            self._client = boto3.client("stepfunctions", region_name=state_machine_arn.split(":")[3])
        out: list[RunningExecution] = []
        pages = self._client.get_paginator("list_executions").paginate(
            stateMachineArn=state_machine_arn, statusFilter="RUNNING"
        )
        for page in pages:
            out.extend(
                RunningExecution(arn=e["executionArn"], name=e["name"], start_time=e["startDate"])
                for e in page["executions"]
            )
        return out
