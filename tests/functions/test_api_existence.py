"""Existence oracles, through the API handler on the embedded engines and the real steps: on
every route, a caller who is no member of a legacy gets the same answer whether the legacy
exists or not, and a story the caller may not read answers as one that does not exist."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.support.apigw import legacy_caller

pytestmark = pytest.mark.integration

SOME = "00000000-0000-4000-8000-000000000001"
#: every route of functions/api/handler.py: method, path under the legacy, body
ROUTES: list[tuple[str, str, Any]] = [
    ("POST", "/context", {"query": "the orchard", "persona": "family"}),
    ("POST", "/stories/{story}/connections", {}),
    ("POST", "/enrichment", {"messages": [{"role": "user", "content": "the orchard"}]}),
    ("GET", "/merge-suggestions", None),
    ("POST", "/merges", {"survivor_id": "a", "absorbed_id": "b"}),
    ("POST", f"/merges/{SOME}/undo", None),
    ("POST", "/keep-apart", {"entity_a": "a", "entity_b": "b"}),
    ("GET", "/staging", None),
    ("POST", "/staging", {"enabled": True}),
    ("GET", "/staged", None),
    ("POST", f"/staged/{SOME}/approve", {}),
    ("POST", f"/staged/{SOME}/reject", None),
    ("GET", "/changelog", None),
    ("GET", "/conversation-memory", None),
    ("POST", "/conversation-memory", {"enabled": True}),
    ("POST", f"/conversations/{SOME}/messages", {"content": "Ada married Tom."}),
    ("POST", f"/conversations/{SOME}/story", {"title": "Mine"}),
    ("GET", "/conversations", None),
    ("GET", f"/conversations/{SOME}/facts", None),
    ("DELETE", f"/conversations/{SOME}", None),
    ("DELETE", f"/conversation-facts/{SOME}", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_a_non_member_cannot_tell_a_legacy_that_exists_from_one_that_does_not(member_api, method, path, body):
    services, mini, stranger = member_api
    path = path.format(story=mini.public_story)
    answers = []
    for legacy in (mini.legacy, str(uuid.uuid4())):
        status, out = legacy_caller(services, legacy)(method, path, stranger, body)
        answers.append((status, {k: str(v).replace(legacy, "<legacy>") for k, v in out.items()}))
    assert answers[0][0] in (403, 404), answers
    assert answers[0] == answers[1]


def test_a_story_the_caller_may_not_read_answers_as_one_that_does_not_exist(member_api):
    services, mini, _ = member_api
    call = legacy_caller(services, mini.legacy)
    answers = []
    for story in (mini.private_story, str(uuid.uuid4())):  # the admirer may not read the private one
        status, out = call("POST", f"/stories/{story}/connections", mini.admirer, {})
        answers.append((status, {k: str(v).replace(story, "<story>") for k, v in out.items()}))
        enriched, _ = call("POST", "/enrichment", mini.admirer, {"story_id": story, "messages": [
            {"role": "user", "content": "the orchard"}]})  # fmt: skip
        answers.append((enriched, {}))
    assert answers[0][0] == 404 and answers[:2] == answers[2:]
    status, _ = call("POST", f"/stories/{mini.private_story}/connections", mini.creator, {})
    assert status == 200  # the creator may read it
