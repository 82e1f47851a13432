"""What a context may hold, checked against the independent docs/dataset-format.md oracle and leak detector."""

from __future__ import annotations

from typing import Any

from heirloom.contracts.context import AssembledContext
from heirloom.domain.evaluation import QueryOutcome, StoryText, leaked
from tests.support import oracle


def forbidden_stories(data: dict[str, list[dict[str, Any]]], user: str, legacy: str) -> list[StoryText]:
    allowed = oracle.readable(data, user, legacy)
    return [StoryText(s["id"], s["title"], s["content"]) for s in data["stories"] if s["id"] not in allowed]


def assert_nothing_forbidden(
    result: AssembledContext, data: dict[str, list[dict[str, Any]]], user: str, legacy: str
) -> None:
    """Every source is readable by `user`, and no other story's id, title or distinctive
    sentence reached the text."""
    allowed = oracle.readable(data, user, legacy)
    stories = {s["id"]: StoryText(s["id"], s["title"], s["content"]) for s in data["stories"]}
    assert {str(s) for s in result.ranked_story_ids} <= allowed
    assert {str(s.story_id) for s in result.metadata.sources} <= allowed
    outcome = QueryOutcome("q", None, None, (), (), tuple(str(s) for s in result.ranked_story_ids),
                           result.formatted_context, None, 0.0)  # fmt: skip
    readable = [stories[s] for s in allowed]
    for sid, story in stories.items():
        if sid not in allowed:
            assert not leaked(outcome, story, readable), f"{story.title!r} leaked to {user}"


def assert_no_story_text(text: str, data: dict[str, list[dict[str, Any]]]) -> None:
    """No story's title or distinctive sentence appears in `text` (an error body, a log line)."""
    outcome = QueryOutcome("q", None, None, (), (), (), text, None, 0.0)
    for s in data["stories"]:
        assert not leaked(outcome, StoryText(s["id"], s["title"], s["content"]), []), s["title"]
