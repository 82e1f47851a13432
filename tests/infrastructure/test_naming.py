"""One naming rule: folder functions/intent_analysis -> state IntentAnalysis -> substitution
${IntentAnalysisFunctionArn} -> construct id IntentAnalysis -> events/intent_analysis.json, and
heirloom/steps/intent_analysis.py whose `run` the handler calls."""

from __future__ import annotations

import importlib
import json

import pytest
from aws_cdk import aws_lambda as lambda_

from cdk.naming import (
    REPO_ROOT,
    function_arn_key,
    function_folders,
    lambda_tasks,
    placeholders,
    state_name,
    workflow_files,
)
from heirloom_dev import functions as local

FOLDERS = function_folders()
WORKFLOWS = workflow_files()
#: Task states named otherwise than their function: (workflow file, state) -> construct id.
#: Empty: every Task state is named after its function; keep it that way.
STATE_ALIASES: dict[tuple[str, str], str] = {}


def test_repo_root_is_computed_from_the_package_not_the_cwd():
    assert (REPO_ROOT / "cdk" / "naming.py").is_file()
    assert FOLDERS, "no functions/<name>/handler.py found"
    assert WORKFLOWS, "no statemachines/*.asl.json found"


def test_discovery_matches_the_local_runner():
    assert local.function_names() == FOLDERS


@pytest.mark.parametrize("folder", FOLDERS)
def test_rule_is_the_local_runners_rule_and_round_trips(folder):
    assert state_name(folder) == local.state_name(folder)
    assert local.folder_name(state_name(folder)) == folder


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_is_a_function_construct_with_that_id(built, folder):
    construct = built.stack.node.try_find_child(state_name(folder))
    assert isinstance(construct, lambda_.Function), f"no Lambda construct {state_name(folder)!r} for {folder}"
    resource = built.resources[built.logical_id(construct)]
    assert resource["Type"] == "AWS::Lambda::Function"
    assert resource["Properties"]["Handler"] == "handler.handler"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_task_names_its_function_by_the_rule(path):
    tasks = lambda_tasks(json.loads(path.read_text()))
    assert tasks, f"{path.name} has no Lambda tasks"
    for task in tasks:
        # the state is named after the function it calls, and that function's folder exists
        construct_id = STATE_ALIASES.get((path.name, task.state), task.state)
        assert task.key == function_arn_key(construct_id), (
            f"{path.name}: state {task.state} calls ${{{task.key}}}; name the state after its function"
        )
        assert (REPO_ROOT / "functions" / local.folder_name(construct_id) / "handler.py").is_file()


def test_state_aliases_are_still_needed():
    for (file, state), construct_id in STATE_ALIASES.items():
        tasks = lambda_tasks(json.loads((REPO_ROOT / "statemachines" / file).read_text()))
        assert any(t.state == state and t.construct_id == construct_id for t in tasks), (
            f"{file}: {state} is gone or renamed: drop its entry from STATE_ALIASES"
        )


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_placeholder_has_a_substitution_pointing_at_its_function(built, path):
    name = path.name.removesuffix(".asl.json")
    machine = built.stack.workflows.by_name[name]
    props = built.resources[built.logical_id(machine)]["Properties"]
    substitutions = props.get("DefinitionSubstitutions", {})
    used = placeholders(path.read_text())
    assert used == set(substitutions), (
        f"{path.name}: placeholders {used} vs substitutions {set(substitutions)}"
    )
    for key, value in substitutions.items():
        function = built.stack.node.find_child(key.removesuffix("FunctionArn"))
        assert value == {"Fn::GetAtt": [built.logical_id(function), "Arn"]}


def test_sample_events_follow_the_rule():
    # events/<folder>.json (or events/<folder>/...) is the sample for sam local invoke and tests
    for sample in (REPO_ROOT / "events").iterdir():
        folder = sample.name.removesuffix(".json")
        assert folder in FOLDERS, f"events/{sample.name} matches no function folder"


STEPS = REPO_ROOT / "layers" / "shared" / "python" / "heirloom" / "steps"


def test_each_folder_has_one_step_module_and_each_step_module_a_folder():
    modules = sorted(p.stem for p in STEPS.glob("*.py") if p.stem != "__init__")
    assert modules == FOLDERS, f"steps/ {set(modules) ^ set(FOLDERS)} without a function folder or step"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_handler_calls_its_own_steps_run_and_no_other_step(folder):
    import ast

    tree = ast.parse((REPO_ROOT / "functions" / folder / "handler.py").read_text())
    steps = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heirloom.steps")
        for alias in node.names
    }
    assert steps == {(f"heirloom.steps.{folder}", "run")}, f"functions/{folder}/handler.py imports {steps}"
    step = importlib.import_module(f"heirloom.steps.{folder}")
    assert callable(step.run)


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_has_its_sample_event(folder):
    # what tests/integration/test_sample_events.py runs through `heirloom invoke`
    sample = REPO_ROOT / "events" / f"{folder}.json"
    assert sample.is_file(), f"functions/{folder} has no events/{folder}.json"
    assert isinstance(json.loads(sample.read_text()), dict)


def test_the_stage_names_the_stack_and_sets_deletion_protection(built, variant):
    from cdk.config import stack_name

    assert built.stack.stack_name == stack_name() == "Heirloom"
    dev = variant(stage="dev")
    assert dev.stack.stack_name == stack_name("dev") == "Heirloom-dev"
    machines = [r["Properties"]["StateMachineName"] for r in dev.resources.values()
                if r["Type"] == "AWS::StepFunctions::StateMachine"]  # fmt: skip
    assert sorted(machines) == [
        "Heirloom-dev-Backfill",
        "Heirloom-dev-Communities",
        "Heirloom-dev-ContextAssembly",
        "Heirloom-dev-IngestStory",
        "Heirloom-dev-StoryConnections",
    ]

    def protection(b):
        kinds = {"AWS::RDS::DBCluster": "DeletionProtection", "AWS::Neptune::DBCluster": "DeletionProtection",
                 "AWS::Cognito::UserPool": "DeletionProtection"}  # fmt: skip
        return {
            r["Type"]: r["Properties"][kinds[r["Type"]]] for r in b.resources.values() if r["Type"] in kinds
        }

    assert protection(built) == {"AWS::RDS::DBCluster": True, "AWS::Neptune::DBCluster": True,
                                 "AWS::Cognito::UserPool": "ACTIVE"}  # fmt: skip
    assert set(protection(dev).values()) <= {False, "INACTIVE"}
    # a flag set on its own wins: a protected dev stack
    guarded = variant(stage="dev", **{"heirloom:deletionProtection": True})
    assert protection(guarded) == protection(built)
    with pytest.raises(ValueError, match="stage 'Prod_1'"):
        stack_name("Prod_1")
