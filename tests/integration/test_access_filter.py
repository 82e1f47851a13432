"""AccessFilter on the embedded engines: stories and "Known Connections" facts by role."""

import uuid

import pytest

from heirloom.contracts.context import (
    AccessFilterInput,
    ContextRequest,
    GraphBranch,
    GraphFact,
    GraphHit,
    GraphResults,
    QueryIntent,
    VectorBranch,
)
from heirloom.domain.access_filter import filter_context
from heirloom.errors import AccessDenied, NotFound
from heirloom.local.loader import load_dataset
from tests.support.dataset import MiniDataset


@pytest.fixture
def mini(ports, tmp_path):
    data = MiniDataset()
    load_dataset(ports, data.write(tmp_path / "ds"))
    return data


def run(ports, mini, user, facts=(), hits=()):
    request = ContextRequest(legacy_id=mini.legacy, user_id=user, persona="family", query="q")
    graph = GraphBranch(intent=QueryIntent(), graph=GraphResults(hits=tuple(hits), facts=tuple(facts)))
    return filter_context(
        AccessFilterInput(request=request, branches=(graph, VectorBranch())), ports.stories, ports.vectors
    )


def fact(mini, story_ids=(), known=False, legacy_ids=()):
    return GraphFact(
        subject_id=mini.subject,
        subject="Ada Marsh",
        predicate="LIVED_IN",
        object_id="x",
        object="County Hospital",
        story_ids=tuple(story_ids),
        known=known,
        legacy_ids=tuple(legacy_ids),
    )


def test_a_fact_only_a_private_story_supports_reaches_trusted_roles_only(ports, mini):
    private_fact = fact(mini, [mini.private_story])
    assert run(ports, mini, mini.creator, [private_fact]).facts == (private_fact,)
    admirer = run(ports, mini, mini.admirer, [private_fact])
    assert admirer.facts == () and admirer.dropped_facts == 1


def test_facts_supported_by_a_readable_story_or_known_relationships_survive(ports, mini):
    public = fact(mini, [mini.private_story, mini.public_story])
    known = fact(mini, known=True, legacy_ids=[mini.legacy])
    stranger = fact(mini, known=True, legacy_ids=[str(uuid.uuid4())])
    unsupported = fact(mini)
    out = run(ports, mini, mini.admirer, [public, known, stranger, unsupported])
    assert out.facts == (public, known)


def test_graph_hits_on_unreadable_stories_are_dropped_and_excerpts_fetched(ports, mini):
    hits = [
        GraphHit(story_id=s, template="general", hops=1, relationship="MENTIONS")
        for s in (mini.public_story, mini.private_story, mini.personal_story, mini.linked_story)
    ]
    out = run(ports, mini, mini.admirer, hits=hits)
    got = {str(c.story_id): c for c in out.candidates}
    assert set(got) == {mini.public_story, mini.personal_story, mini.linked_story}
    assert got[mini.public_story].chunks and got[mini.public_story].embedding_score is None
    assert got[mini.linked_story].primary is False and got[mini.linked_story].shared_via == "all"
    assert out.dropped_stories == 1


class _Reads:
    """Counts the reads a store or index is asked for."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __getattr__(self, name):
        method = getattr(self.inner, name)

        def call(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return call


def test_graph_only_excerpts_and_the_legacy_row_are_read_once(ports, mini):
    hits = [
        GraphHit(story_id=s, template="general", hops=1, relationship="MENTIONS")
        for s in (mini.public_story, mini.personal_story, mini.linked_story)
    ]
    request = ContextRequest(legacy_id=mini.legacy, user_id=mini.admirer, persona="family", query="q")
    graph = GraphBranch(intent=QueryIntent(), graph=GraphResults(hits=tuple(hits)))
    stories, vectors = _Reads(ports.stories), _Reads(ports.vectors)
    out = filter_context(
        AccessFilterInput(request=request, branches=(graph, VectorBranch())), stories, vectors
    )
    assert out == run(ports, mini, mini.admirer, hits=hits).model_copy(update={"latency_ms": out.latency_ms})
    assert all(c.chunks for c in out.candidates) and len(out.candidates) == 3
    assert vectors.calls == ["chunks_of_many"]
    # the primary legacy once; the linked one for its name
    assert stories.calls.count("get_legacy") == 2


def test_unknown_legacy_and_non_member_are_typed_errors(ports, mini):
    with pytest.raises(AccessDenied):
        run(ports, mini, str(uuid.uuid4()))
    request = ContextRequest(legacy_id=uuid.uuid4(), user_id=mini.creator, persona="family", query="q")
    with pytest.raises(NotFound):
        filter_context(
            AccessFilterInput(request=request, branches=(VectorBranch(),)), ports.stories, ports.vectors
        )
