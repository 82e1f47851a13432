"""The project's own datasets read cleanly, and their queries' labels agree with the access
rules: of the stories in the query's legacy and the legacies linked to it (any status), the
forbidden ones are exactly those the user may not read, and no gold story is out of reach."""

import json
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest

from heirloom.contracts.access import StoryMeta
from heirloom.domain.access import resolve_scope
from heirloom_dev.loader import read_dataset

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("name", ["sample-legacy", "conversations", "long-chats"])
def test_queries_forbid_exactly_what_their_user_may_not_read(name):
    root = EXAMPLES / name
    ds = read_dataset(root)
    members = {(m.record.legacy_id, m.record.user_id): m.record.role for m in ds.members}
    links = [x.record for x in ds.links]
    stories = [StoryMeta.model_validate(s.record, from_attributes=True) for s in ds.stories]
    queries = [json.loads(line) for line in (root / "queries.jsonl").read_text().splitlines() if line.strip()]
    assert queries
    for q in queries:
        legacy, user = UUID(q["legacy_id"]), UUID(q["user_id"])
        member_of = [lg for lg, u in members if u == user]
        scope = resolve_scope(user_id=user, legacy_id=legacy, role=members.get((legacy, user)),
                              links=links, member_legacy_ids=member_of)  # fmt: skip
        near = {legacy} | {lg for x in links if legacy in (x.legacy_a_id, x.legacy_b_id)
                           for lg in (x.legacy_a_id, x.legacy_b_id)}  # fmt: skip
        denied = {str(s.id) for s in stories if s.legacy_id in near and not scope.allows(s)}
        assert set(q["forbidden_story_ids"]) == denied, q["query"]
        assert not set(q["gold_story_ids"]) & denied, q["query"]


@pytest.mark.parametrize(
    ("name", "categories"),
    [
        ("conversations", None),  # every scored category
        ("long-chats", ("single_hop", "multi_hop", "temporal")),  # long chat sessions
    ],
)
def test_a_conversational_set_has_ten_queries_a_category_and_multi_hop_over_sessions(name, categories):
    """The conversational dev sets: at least ten queries in each category they are scored by;
    every multi-hop question needs two or more sessions."""
    path = EXAMPLES / name / "queries.jsonl"
    queries = [json.loads(line) for line in path.read_text().splitlines()]
    counts = Counter(q["category"] for q in queries)
    assert all(counts[c] >= 10 for c in categories or counts), counts
    multi = [q for q in queries if q["category"] == "multi_hop"]
    assert all(len(q["gold_story_ids"]) >= 2 for q in multi)
