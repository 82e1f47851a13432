"""`heirloom invoke FUNCTION -e EVENT`: one function's handler in process, with what it reaches
on AWS resolved to local equivalents.

Inside a moto account (as `heirloom ask` runs the workflow): the API's context and
story_connections workflows are the real ASL in moto's interpreter, S3 is moto's, seeded from the folder beside the event file
(`events/<function>/s3/<bucket>/<key>`), PostgreSQL and the graph are the local stack's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from heirloom.services import Services
from heirloom.settings import Settings
from heirloom_dev.functions import LambdaContext, load_handler, state_name
from heirloom_dev.workflow import LocalConnectionsWorkflow, LocalContextWorkflow, LocalWorkflows

#: functions that only read: invoked with PostgreSQL sessions that refuse writes
READ_ONLY = frozenset(
    {
        "api",
        "intent_analysis",
        "vector_search",
        "graph_traversal",
        "access_filter",
        "rank_assemble",
        "connections_plan",
        "connections_assemble",
        "backfill_plan",
    }
)


class LocalServices(Services):
    """The handlers' ports, with the AWS-only ones resolved inside a started `LocalWorkflows`."""

    def __init__(self, settings: Settings, workflows: LocalWorkflows):
        super().__init__(settings)
        self.workflows = workflows

    @cached_property
    def context_workflow(self) -> LocalContextWorkflow:  # type: ignore[override]
        return LocalContextWorkflow(self.workflows, history=False)

    @cached_property
    def connections_workflow(self) -> LocalConnectionsWorkflow:  # type: ignore[override]
        return LocalConnectionsWorkflow(self.workflows)


def objects_beside(event_file: Path) -> Path:
    """Where the S3 objects an event names are kept: `events/x.json` -> `events/x/s3/`."""
    return event_file.with_suffix("") / "s3"


def seed_s3(root: Path) -> list[str]:
    """Put every file under `root/<bucket>/` into moto's S3 as `s3://<bucket>/<relative path>`."""
    import boto3

    if not root.is_dir():
        return []
    client = boto3.client("s3")
    put = []
    for bucket_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        client.create_bucket(Bucket=bucket_dir.name)
        for path in sorted(p for p in bucket_dir.rglob("*") if p.is_file()):
            key = path.relative_to(bucket_dir).as_posix()
            client.put_object(Bucket=bucket_dir.name, Key=key, Body=path.read_bytes())
            put.append(f"s3://{bucket_dir.name}/{key}")
    return put


@contextmanager
def local_services(settings: Settings, objects: Path | None = None) -> Iterator[LocalServices]:
    with LocalWorkflows(machines=["context_assembly", "story_connections"]).start() as workflows:
        if objects is not None:
            seed_s3(objects)
        yield LocalServices(settings, workflows)


def invoke(function: str, event: Any, settings: Settings, *, objects: Path | None = None) -> Any:
    """What the handler returns for `event` (its exceptions propagate, as Lambda reports them)."""
    handler = load_handler(function)
    with local_services(settings, objects) as services:
        return handler(event, LambdaContext(function_name=state_name(function)), services=services)
