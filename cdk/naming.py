"""The one naming rule shared by functions, workflows, substitutions and construct ids.

    folder functions/intent_analysis  ->  state / construct id `IntentAnalysis`
                                      ->  ASL substitution `${IntentAnalysisFunctionArn}`
    statemachines/context_assembly.asl.json  ->  construct id `ContextAssemblyWorkflow`

`heirloom_dev.functions.state_name` is the same rule for the local runner; a test keeps the two
equal. Paths are computed from this file, never from the working directory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTION_ARN_SUFFIX = "FunctionArn"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def state_name(folder: str) -> str:
    """`intent_analysis` -> `IntentAnalysis` (the construct id of the function)."""
    return "".join(part.capitalize() for part in folder.split("_"))


def function_arn_key(construct_id: str) -> str:
    """`IntentAnalysis` -> `IntentAnalysisFunctionArn` (the ASL substitution key)."""
    return f"{construct_id}{FUNCTION_ARN_SUFFIX}"


def function_folders(root: Path = REPO_ROOT) -> list[str]:
    """Every folder under functions/ with a handler.py is one Lambda."""
    base = root / "functions"
    return sorted(p.name for p in base.iterdir() if (p / "handler.py").is_file())


def workflow_files(root: Path = REPO_ROOT) -> list[Path]:
    return sorted((root / "statemachines").glob("*.asl.json"))


def workflow_name(path: Path) -> str:
    """`statemachines/context_assembly.asl.json` -> `context_assembly`."""
    return path.name.removesuffix(".asl.json")


def placeholders(text: str) -> set[str]:
    """The `${...}` substitution keys used in an ASL definition."""
    return set(_PLACEHOLDER.findall(text))


@dataclass(frozen=True)
class TaskRef:
    """A Task state that invokes a Lambda through a `${XFunctionArn}` substitution."""

    state: str
    key: str
    timeout_s: int | None

    @property
    def construct_id(self) -> str:
        return self.key.removesuffix(FUNCTION_ARN_SUFFIX)


def _states(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in definition.get("States", {}).items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from _states(branch)
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                yield from _states(state[key])


def lambda_tasks(definition: dict[str, Any]) -> list[TaskRef]:
    """Every Task (at any depth: Parallel branches, Map processors) that calls a function."""
    refs = []
    for name, state in _states(definition):
        if state.get("Type") != "Task":
            continue
        target = json.dumps([state.get("Resource"), state.get("Parameters"), state.get("Arguments")])
        for key in sorted(placeholders(target)):
            if key.endswith(FUNCTION_ARN_SUFFIX):
                refs.append(TaskRef(name, key, state.get("TimeoutSeconds")))
    return refs
