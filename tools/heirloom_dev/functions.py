"""The Lambda functions of `functions/`, loaded from their folders exactly as Lambda loads them
(`handler.py`, attribute `handler`), and a Lambda-like context for in-process calls."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any

from heirloom_dev.runtime import project_root

Handler = Callable[..., Any]

#: the streams of the `logs_to` blocks open now, innermost last
_log_streams: list[IO[str]] = []


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
    _point_logs()
    return handler


@contextmanager
def logs_to(stream: IO[str]) -> Iterator[None]:
    """Within the block, the handlers' logs (the service's Powertools logger, which every
    `heirloom.*` logger propagates to) go to `stream`, for handlers loaded in it too; after it,
    where they went before (Powertools' default: stdout, as in Lambda). The CLI passes stderr,
    so a command's stdout holds its own output alone (`eval`'s table, `ask`'s answer)."""
    before = {h: h.stream for h in _stream_handlers()}
    _log_streams.append(stream)
    _point_logs()
    try:
        yield
    finally:
        _log_streams.pop()
        for handler in _stream_handlers():
            _set_stream(handler, before.get(handler, sys.stdout))


def _stream_handlers() -> list[logging.StreamHandler[IO[str]]]:
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "heirloom")
    return [h for h in logging.getLogger(service).handlers if type(h) is logging.StreamHandler]


def _point_logs() -> None:
    if _log_streams:
        for handler in _stream_handlers():
            _set_stream(handler, _log_streams[-1])


def _set_stream(handler: logging.StreamHandler[IO[str]], stream: IO[str]) -> None:
    # not `setStream`: it flushes the old stream, which may be closed (a finished test's capture)
    with handler.lock or contextlib.nullcontext():
        handler.stream = stream


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
