"""The Lambda functions of `functions/`, loaded from their folders exactly as Lambda loads them
(`handler.py`, attribute `handler`), and a Lambda-like context for in-process calls."""

from __future__ import annotations

import importlib.util
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from heirloom_dev.runtime import project_root

Handler = Callable[..., Any]


def function_names() -> list[str]:
    """Folder names under functions/ (snake_case), each one Lambda."""
    root = project_root() / "functions"
    return sorted(p.name for p in root.iterdir() if (p / "handler.py").is_file())


def state_name(function: str) -> str:
    """The naming rule: folder `intent_analysis` <-> state / construct `IntentAnalysis`."""
    return "".join(part.capitalize() for part in function.split("_"))


def folder_name(state: str) -> str:
    out = []
    for i, ch in enumerate(state):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


@cache
def load_handler(function: str) -> Handler:
    path: Path = project_root() / "functions" / function / "handler.py"
    if not path.is_file():
        raise KeyError(f"no function folder {function!r} (looked for {path})")
    spec = importlib.util.spec_from_file_location(f"heirloom_functions_{function}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler: Handler = module.handler
    return handler


@dataclass
class LambdaContext:
    """What Powertools and handlers read from the Lambda context object."""

    function_name: str
    memory_limit_in_mb: int = 512
    timeout_ms: int = 10_000
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self.timeout_ms - (time.monotonic() - self._started) * 1000))
