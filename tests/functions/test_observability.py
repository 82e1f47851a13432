"""Structured events and EMF metrics carry the names of docs/design.md §12 and never story text."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from aws_lambda_powertools import Logger, Metrics

from heirloom.contracts.context import AssembledContext, ContextMetadata, QueryIntent, SourceInfo
from heirloom.observability import record_context

SECRET = "Grandma hid the money in the flour tin."


def test_context_assembled_event_and_metrics(capsys):
    story = uuid.uuid4()
    result = AssembledContext(
        formatted_context=f"## Relevant Stories\n{SECRET}",
        ranked_story_ids=(story,),
        sources_used=("vector",),
        degraded=("graph",),
        metadata=ContextMetadata(
            intent=QueryIntent(intent="temporal", breaker_state="open"),
            sources=(
                SourceInfo(
                    story_id=story,
                    title="The Tin",
                    legacy_id=uuid.uuid4(),
                    source="embedding+graph:MENTIONS",
                    score=1.1,
                ),
            ),
            circuit_state="open",
            token_budget=4000,
            tokens_used=12,
            latency_ms={"vector": 12.5, "graph": 3.0},
        ),
    )
    metrics = Metrics(namespace="Heirloom", service="test")
    record_context(result, Logger(service="test"), metrics)
    metrics.flush_metrics()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    event = next(line for line in lines if line.get("message") == "context_assembled")
    assert event["final_results"] == 1 and event["graph_ratio"] == 1.0 and event["circuit_state"] == "open"
    assert event["degraded"] == ["graph"]
    names = {
        m["Name"]
        for line in lines
        for d in line.get("_aws", {}).get("CloudWatchMetrics", [])
        for m in d["Metrics"]
    }
    assert {"GraphContextLatency", "GraphContextResults", "GraphCircuitOpen", "GraphCircuitState"} <= names
    assert [line.get("source") for line in lines if "ContextDegraded" in line] == ["graph"]
    phases = {line.get("phase") for line in lines if "GraphContextLatency" in line}
    assert phases == {"vector", "graph"}
    assert all(SECRET not in json.dumps(line) and "The Tin" not in json.dumps(line) for line in lines)


TRACING_PROBE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("h", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
loaded = [m for m in ("botocore.client", "requests", "httpx") if m in sys.modules]
assert not loaded, f"imported by the handler module: {loaded}"
from heirloom.services import default_services
default_services()
import botocore.client, requests
assert hasattr(botocore.client.BaseClient._make_api_call, "__wrapped__"), "botocore not traced"
assert hasattr(requests.Session.request, "__wrapped__"), "requests not traced"
print("ok")
"""


def test_handlers_patch_only_the_traced_libraries_and_only_once_they_build_ports(tmp_path):
    """In Lambda (tracing on) a handler module imports no client library; its first
    default_services() patches the AWS SDK and requests for X-Ray, and nothing else."""
    env = {
        **os.environ,
        "AWS_LAMBDA_FUNCTION_NAME": "VectorSearch",
        "LAMBDA_TASK_ROOT": str(tmp_path),
        "POWERTOOLS_SERVICE_NAME": "heirloom",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    env.pop("POWERTOOLS_TRACE_DISABLED", None)
    handler = Path(__file__).resolve().parents[2] / "functions" / "vector_search" / "handler.py"
    proc = subprocess.run(  # noqa: PLW1510 (the return code is asserted with the output)
        [sys.executable, "-c", TRACING_PROBE, str(handler)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
