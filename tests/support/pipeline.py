"""The context-assembly workflow in process: the real handlers, in the order and with the
fallbacks of `statemachines/context_assembly.asl.json`, without moto (a few milliseconds per
request instead of a state machine execution). `tests/statemachines` runs the ASL itself."""

from __future__ import annotations

from typing import Any

from heirloom.contracts.connections import ConnectionsRequest
from heirloom.contracts.context import ContextRequest, Intent
from heirloom.errors import AccessDenied, NotFound
from heirloom.services import Services
from heirloom_dev.functions import LambdaContext, load_handler, state_name

#: what the ASL's Pass states put in place of a failed or skipped step
INTENT_FALLBACK = {"intent": "general", "confidence": 0.0, "source": "fallback", "breaker_state": "unknown"}


class StepFailed(AssertionError):
    """A step raised something the workflow would only paper over with a fallback."""


def call(function: str, event: Any, services: Services) -> Any:
    return load_handler(function)(event, LambdaContext(state_name(function)), services=services)


def connections(services: Services, request: ConnectionsRequest) -> dict[str, Any]:
    """The StoryConnections (as JSON) for `request`, in the order and with the fallbacks of
    `statemachines/story_connections.asl.json`; a typed refusal of ConnectionsPlan or
    AccessFilter propagates, as the workflow fails with it."""
    planned = call("connections_plan", {"connections": request.model_dump(mode="json")}, services)
    req = planned["request"]
    try:
        plan = call("intent_analysis", {"request": req}, services)
    except Exception as exc:
        raise StepFailed(f"IntentAnalysis raised {type(exc).__name__}: {exc}") from exc
    if not req["graph_enabled"] or plan["breaker_state"] == "open":
        graph = {"kind": "graph", "intent": plan, "graph": {"status": "skipped"}}
    else:
        try:
            graph = call("graph_traversal", {"request": req, "intent": plan}, services)
        except Exception as exc:
            raise StepFailed(f"GraphTraversal raised {type(exc).__name__}: {exc}") from exc
    filtered = call("access_filter", {"request": req, "branches": [graph]}, services)
    result: dict[str, Any] = call("connections_assemble", {**planned, "filtered": filtered}, services)
    return result


def assemble(services: Services, request: ContextRequest, force: Intent | None = None) -> dict[str, Any]:
    """The AssembledContext (as JSON) for `request`; `force` replaces the classified intent so
    every traversal template runs whatever the classifier makes of the query. A typed refusal
    (AccessDenied / NotFound) from AccessFilter propagates, as the workflow fails with it."""
    req = request.model_dump(mode="json")
    try:
        plan = call("intent_analysis", {"request": req}, services)
    except Exception as exc:
        raise StepFailed(f"IntentAnalysis raised {type(exc).__name__}: {exc}") from exc
    if force is not None:
        plan = {**plan, "intent": force.value}
    skipped = request.mode == "vector" or not request.graph_enabled or plan["breaker_state"] == "open"
    if skipped:
        graph = {"kind": "graph", "intent": plan, "graph": {"status": "skipped"}}
    else:
        try:
            graph = call("graph_traversal", {"request": req, "intent": plan}, services)
        except Exception as exc:
            raise StepFailed(f"GraphTraversal raised {type(exc).__name__}: {exc}") from exc
    try:
        vector = call("vector_search", {"request": req}, services)
    except (AccessDenied, NotFound):
        vector = {"kind": "vector", "status": "failed"}  # VectorFailed; AccessFilter refuses next
    except Exception as exc:
        raise StepFailed(f"VectorSearch raised {type(exc).__name__}: {exc}") from exc
    filtered = call("access_filter", {"request": req, "branches": [graph, vector]}, services)
    result: dict[str, Any] = call("rank_assemble", {"request": req, "filtered": filtered}, services)
    return result
