"""The context-assembly ASL in moto's interpreter: routing, fallbacks and typed errors, with
recording stand-ins for the five functions (the real handlers run in test_context_assembly_e2e)."""

import json
import time
from pathlib import Path

import pytest

from heirloom.contracts.context import AccessFilterInput
from heirloom.errors import AccessDenied
from heirloom_dev.workflow import LocalWorkflows

REQUEST = {
    "legacy_id": "00000000-0000-4000-8000-000000000001",
    "user_id": "00000000-0000-4000-8000-000000000002",
    "persona": "family",
    "query": "Who was her brother?",
    "history": [],
    "token_budget": 4000,
    "debug": False,
    "graph_enabled": True,
    "mode": "hybrid",
}
INTENT = {"intent": "relational", "confidence": 0.9, "source": "rules", "breaker_state": "closed"}


class Recorder:
    def __init__(self, **behaviour):
        self.calls = {}
        self.behaviour = behaviour

    def fn(self, name, result):
        def run(event, context):
            self.calls.setdefault(name, []).append(event)
            action = self.behaviour.get(name)
            if isinstance(action, Exception):
                raise action
            if callable(action):
                return action(event)
            return result

        return run

    def functions(self):
        return {
            "IntentAnalysis": self.fn("IntentAnalysis", INTENT),
            "VectorSearch": self.fn("VectorSearch", {"kind": "vector", "hits": [], "status": "ok"}),
            "GraphTraversal": self.fn(
                "GraphTraversal",
                None
                if "GraphTraversal" in self.behaviour
                else {"kind": "graph", "intent": INTENT, "graph": {"status": "ok"}},
            ),
            "AccessFilter": self.fn("AccessFilter", {"stage": "filtered"}),
            "RankAssemble": self.fn("RankAssemble", {"stage": "assembled"}),
        }


def run(recorder, request=REQUEST):
    with LocalWorkflows(recorder.functions()).start() as wf:
        return wf.run("context_assembly", {"request": request})


def branches(recorder):
    event = recorder.calls["AccessFilter"][0]
    AccessFilterInput.model_validate(event)  # the ASL's shape matches the contract
    return {b["kind"]: b for b in event["branches"]}


def test_happy_path_passes_each_state_output_to_the_next():
    rec = Recorder()
    ex = run(rec)
    assert ex.status == "SUCCEEDED" and ex.output == {"stage": "assembled"}
    assert rec.calls["GraphTraversal"][0] == {"request": REQUEST, "intent": INTENT}
    assert branches(rec)["graph"]["graph"] == {"status": "ok"}
    assert rec.calls["RankAssemble"][0] == {"request": REQUEST, "filtered": {"stage": "filtered"}}


def test_intent_failure_falls_back_to_general_and_still_traverses():
    rec = Recorder(IntentAnalysis=RuntimeError("llm down"))
    ex = run(rec)
    assert ex.status == "SUCCEEDED" and "IntentFallback" in ex.states_entered()
    intent = rec.calls["GraphTraversal"][0]["intent"]
    assert intent["intent"] == "general" and intent["source"] == "fallback"


def test_vector_failure_continues_with_graph_only():
    rec = Recorder(VectorSearch=RuntimeError("pgvector down"))
    ex = run(rec)
    assert ex.status == "SUCCEEDED"
    assert branches(rec)["vector"] == {"kind": "vector", "status": "failed"}


def test_traversal_error_continues_with_embedding_only():
    rec = Recorder(GraphTraversal=RuntimeError("neptune 500"))
    ex = run(rec)
    assert ex.status == "SUCCEEDED" and "GraphFailed" in ex.states_entered()
    assert branches(rec)["graph"] == {"kind": "graph", "intent": INTENT, "graph": {"status": "failed"}}


@pytest.mark.slow
def test_traversal_timeout_continues_with_embedding_only():
    asl = json.loads((Path(__file__).parents[2] / "statemachines" / "context_assembly.asl.json").read_text())
    graph = next(b for b in asl["States"]["Retrieve"]["Branches"] if "GraphTraversal" in b["States"])
    timeout = graph["States"]["GraphTraversal"]["TimeoutSeconds"]
    rec = Recorder(GraphTraversal=lambda event: time.sleep(timeout + 0.6) or {})
    ex = run(rec)
    assert ex.status == "SUCCEEDED" and "GraphTimedOut" in ex.states_entered()
    assert branches(rec)["graph"]["graph"] == {"status": "timeout"}


def test_open_breaker_never_calls_the_graph():
    rec = Recorder(IntentAnalysis=lambda event: {**INTENT, "breaker_state": "open"})
    ex = run(rec)
    assert ex.status == "SUCCEEDED" and "GraphTraversal" not in rec.calls
    assert branches(rec)["graph"]["graph"] == {"status": "skipped"}


@pytest.mark.parametrize("change", [{"graph_enabled": False}, {"mode": "vector"}])
def test_feature_flag_off_or_vector_mode_skips_the_graph(change):
    rec = Recorder()
    ex = run(rec, {**REQUEST, **change})
    assert ex.status == "SUCCEEDED" and "GraphTraversal" not in rec.calls
    assert "GraphSkipped" in ex.states_entered()


def test_a_minimal_console_input_without_optional_fields_still_routes():
    rec = Recorder()
    minimal = {k: REQUEST[k] for k in ("legacy_id", "user_id", "persona", "query")}
    assert run(rec, minimal).status == "SUCCEEDED"
    assert "GraphTraversal" in rec.calls


def test_access_filter_failure_fails_the_execution_with_its_typed_error():
    rec = Recorder(AccessFilter=AccessDenied("not a member"))
    ex = run(rec)
    assert ex.status == "FAILED" and ex.error == "AccessDenied"
    assert "RankAssemble" not in rec.calls
