"""Step Functions on AWS: the context workflow (StartSyncExecution on the Express state
machine), starting ingestions, and the backfill's running executions."""

from __future__ import annotations

import json
from typing import Any

from heirloom.contracts.context import AssembledContext, ContextRequest
from heirloom.contracts.ingestion import RunningExecution
from heirloom.domain.context_api import raise_for_workflow_error, timed_out


class StepFunctionsContextWorkflow:
    def __init__(self, state_machine_arn: str, client: Any | None = None):
        import boto3

        self.arn = state_machine_arn
        self._client = client or boto3.client("stepfunctions")

    def run(self, request: ContextRequest) -> AssembledContext:
        response = self._client.start_sync_execution(
            stateMachineArn=self.arn, input=json.dumps({"request": request.model_dump(mode="json")})
        )
        if response["status"] != "SUCCEEDED":
            raise_for_workflow_error(
                timed_out(response["status"], response.get("error")), response.get("cause")
            )
        return AssembledContext.model_validate_json(response["output"])


class StepFunctionsIngestionStarter:
    """Starts the ingest_story workflow for a story (asynchronous; failures are recorded by it)."""

    def __init__(self, state_machine_arn: str, client: Any | None = None):
        import boto3

        self.arn = state_machine_arn
        self._client = client or boto3.client("stepfunctions")

    def __call__(self, story_id: Any) -> None:
        self._client.start_execution(stateMachineArn=self.arn, input=json.dumps({"story_id": str(story_id)}))


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
