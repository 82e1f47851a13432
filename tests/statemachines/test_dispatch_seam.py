"""The one patch point between moto's Lambda and our in-process handlers (private moto API,
pinned to moto 5.2.5): if an upgrade moves it, this fails first."""

import inspect
import json

import boto3
import moto
from moto.awslambda.models import LambdaFunction

from heirloom_dev.workflow import LocalWorkflows


def test_moto_version_and_seam_signature():
    assert moto.__version__ == "5.2.5"
    params = list(inspect.signature(LambdaFunction._invoke_lambda).parameters)
    assert params[:2] == ["self", "event"]


def test_invoke_reaches_the_override_and_errors_carry_their_type():
    def echo(event, context):
        if event.get("fail"):
            raise ValueError("bad thing")
        return {"got": event, "fn": context.function_name}

    with LocalWorkflows({"Echo": echo}).start() as wf:
        lam = boto3.client("lambda", region_name="us-east-1")
        ok = lam.invoke(FunctionName="Echo", Payload=json.dumps({"a": 1}))
        assert json.loads(ok["Payload"].read()) == {"got": {"a": 1}, "fn": "Echo"}
        assert "FunctionError" not in ok
        bad = lam.invoke(FunctionName="Echo", Payload=json.dumps({"fail": True}))
        assert bad["FunctionError"] == "Handled"
        assert json.loads(bad["Payload"].read()) == {"errorType": "ValueError", "errorMessage": "bad thing"}
        assert wf.invocations == ["Echo", "Echo"]


def test_the_states_start_execution_integration_speaks_aws_casing():
    """moto passes the ASL's `StateMachineArn`/`Name`/`Input` to boto3 unchanged (which wants
    `stateMachineArn`...) and answers with boto3's `executionArn`: LocalWorkflows converts both."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
        StateTaskServiceSfn,
    )

    params = list(inspect.signature(StateTaskServiceSfn._eval_service_task).parameters)
    assert params == ["self", "env", "resource_runtime_part", "normalised_parameters", "state_credentials"]
