"""Structured events and EMF metrics carry seed 000's names and never story text."""

import json
import uuid

from aws_lambda_powertools import Logger, Metrics

from heirloom.contracts.context import AssembledContext, ContextMetadata, QueryIntent, SourceInfo
from heirloom.observability import record_context

SECRET = "Grandma hid the money in the flour tin."


def test_context_assembled_event_and_metrics(capsys):
    story = uuid.uuid4()
    result = AssembledContext(
        formatted_context=f"## Relevant Stories\n{SECRET}",
        ranked_story_ids=(story,),
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
    names = {
        m["Name"]
        for line in lines
        for d in line.get("_aws", {}).get("CloudWatchMetrics", [])
        for m in d["Metrics"]
    }
    assert {"GraphContextLatency", "GraphContextResults", "GraphCircuitOpen", "GraphCircuitState"} <= names
    phases = {line.get("phase") for line in lines if "GraphContextLatency" in line}
    assert phases == {"vector", "graph"}
    assert all(SECRET not in json.dumps(line) and "The Tin" not in json.dumps(line) for line in lines)
