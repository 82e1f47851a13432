"""The story-evolution part of `heirloom demo` (docs/design.md §9), when the dataset's demo.json
has an "evolution" entry: a story's opening connections (the story_connections workflow), one
elicitation turn with its marked suggestion (the context workflow), and the enrichment block a
summary would get, each through the real ASL in moto's interpreter."""

from __future__ import annotations

from typing import Any

from heirloom_dev.workflow import LocalConnectionsWorkflow, LocalContextWorkflow, LocalWorkflows


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (nothing)"


def show_evolution(workflows: LocalWorkflows, legacy_id: str, plan: dict[str, Any]) -> None:
    from heirloom.contracts.connections import ConnectionsRequest
    from heirloom.contracts.context import ContextRequest, Message

    connections, context = LocalConnectionsWorkflow(workflows), LocalContextWorkflow(workflows)
    base = {"legacy_id": legacy_id, "user_id": plan["user_id"], "persona": plan["persona"]}
    opening = connections.run(ConnectionsRequest(kind="opening", story_id=plan["story_id"], **base))
    print(f'\n=== story evolution: {plan["who"]} sets out to evolve "{opening.story_title}"')
    print("--- opening connections (story_connections workflow):")
    print(_indent(opening.formatted))
    if compare := plan.get("compare"):
        other = connections.run(
            ConnectionsRequest(
                kind="opening", story_id=plan["story_id"], **{**base, "user_id": compare["user_id"]}
            )
        )
        mine = sum(e.count for e in opening.entities)
        theirs = sum(e.count for e in other.entities)
        print(f"    ({compare['who']} gets {theirs} of these {mine} connections: only stories they may read)")

    history = tuple(Message.model_validate(m) for m in plan["conversation"])
    turn = context.run(
        ContextRequest(
            **base, query=plan["turn"], history=history, linked_story_id=plan["story_id"], elicitation=True
        )
    )
    print(f'--- elicitation turn "{plan["turn"]}" (context workflow, elicitation mode):')
    print(f"    marked suggestion: {turn.suggestion.sentence if turn.suggestion else 'none'}")
    print(
        f"    context {turn.metadata.tokens_used}/{turn.metadata.token_budget} tokens, ending with the directive"
    )

    messages = (*history, Message(role="user", content=plan["turn"]))
    enriched = connections.run(
        ConnectionsRequest(kind="enrichment", story_id=plan["story_id"], messages=messages, **base)
    )
    print("--- before the summary (enrichment, story_connections workflow):")
    print(_indent(enriched.formatted))
