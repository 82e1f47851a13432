"""`heirloom eval --per-query` rows: every candidate RankAssemble scored appears, in the ranking's
order, with its graph paths, scores and whether it reached the context; the budget-cut ones too."""

from __future__ import annotations

from uuid import UUID

import pytest

from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.context import (
    Candidate,
    ChunkResult,
    ContextRequest,
    FilteredContext,
    GraphHit,
    QueryIntent,
    RankAssembleInput,
)
from heirloom.domain.evaluation import QueryOutcome
from heirloom.steps import rank_assemble
from heirloom_dev.eval import QueryRun, per_query_record
from tests.support.services import services_with

LEGACY, USER = UUID(int=1), UUID(int=99)
#: one long sentence per story: the smallest budget holds the first story and nothing else
LONG = " ".join(["The orchard letters were kept in the blue tin by the farmhouse stove."] * 40)


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def cand(n: int, similarity: float | None, *hits: GraphHit) -> Candidate:
    chunk = ChunkResult(
        story_id=sid(n),
        legacy_id=LEGACY,
        chunk_index=0,
        text=LONG,
        token_count=600,
        similarity=similarity or 0.0,
        lexical=0.25 if similarity else 0.0,
    )
    return Candidate(
        story_id=sid(n),
        legacy_id=LEGACY,
        legacy_name="Ada Marsh",
        title=f"Story {n}",
        primary=True,
        chunks=(chunk,),
        embedding_score=similarity,
        graph_hits=hits,
    )


def run_of(*candidates: Candidate, mode: str = "hybrid", env: dict[str, str] | None = None) -> QueryRun:
    """The query through the real step (`run` for the context, `ranking` for the file)."""
    svc = services_with(env, tokenizer=TiktokenTokenizer())
    request = ContextRequest(
        legacy_id=LEGACY, user_id=USER, persona="family", query="the orchard", token_budget=500, mode=mode
    )
    filtered = FilteredContext(
        intent=QueryIntent(), subject_name="Ada Marsh", legacy_name="Ada Marsh", candidates=candidates
    )
    data = RankAssembleInput(request=request, filtered=filtered)
    assembled = rank_assemble.run(data, svc)
    outcome = QueryOutcome(
        query_id="q1",
        category="multi_hop",
        expected_intent=None,
        gold=(str(sid(2)), str(sid(3))),
        forbidden=(),
        ranked=tuple(str(s) for s in assembled.ranked_story_ids),
        context=assembled.formatted_context,
        intent=assembled.metadata.intent.intent.value,
        latency_ms=1.0,
    )
    return QueryRun(outcome, assembled, data, tuple(rank_assemble.ranking(data, svc)))


def record(run: QueryRun) -> dict:
    query = {"query": "the orchard", "user_id": str(USER), "persona": "family"}
    return per_query_record(run, query, {}, set(), (5,))


MENTIONS = GraphHit(story_id=sid(3), template="entity", hops=1, relationship="MENTIONS", entity="Edith", entity_match=True)  # fmt: skip
BRIDGE = GraphHit(story_id=sid(4), template="bridge", hops=2, relationship="MENTIONS", entity="Frannie", source_story_id=sid(1))  # fmt: skip


def rows_by_id(rec: dict) -> dict[int, dict]:
    return {UUID(c["story_id"]).int - 1000: c for c in rec["candidates"]}


def test_candidates_cut_by_the_budget_keep_their_paths_scores_and_ranking_rank():
    run = run_of(cand(1, 0.9), cand(2, 0.8), cand(3, None, MENTIONS), cand(4, None, BRIDGE))
    rec = record(run)
    assert rec["ranked"] == [str(sid(1))], "the budget holds one story"
    rows = rows_by_id(rec)
    assert [c["story_id"] for c in rec["candidates"] if c["in_context"]] == rec["ranked"]

    embedded = rows[2]  # found by embedding search, cut by the budget
    assert embedded["in_context"] is False and embedded["rank"] is None
    assert embedded["ranking_rank"] == 2
    assert embedded["similarity"] == pytest.approx(0.8) and embedded["lexical"] == pytest.approx(0.25)
    assert embedded["score"] is not None and embedded["source"] == "embedding"
    assert embedded["gold"] is True and embedded["graph_paths"] == []

    graph_only = rows[3]  # only the traversal reached it: after every embedding story
    assert graph_only["in_context"] is False and graph_only["ranking_rank"] == 3
    assert graph_only["similarity"] is None and graph_only["source"] == "graph:MENTIONS"
    assert graph_only["graph_paths"] == [
        {
            "template": "entity",
            "hops": 1,
            "relationship": "MENTIONS",
            "entity": "Edith",
            "entity_id": None,
            "entity_match": True,
            "via": None,
            "source_story_id": None,
            "topic": False,
            "counted": True,
        }
    ]

    bridged = rows[4]  # a bridge hit the rule does not count (one seed, graph-only): recorded, never ranked
    assert bridged["ranking_rank"] is None and bridged["score"] is None and bridged["rank"] is None
    (path,) = bridged["graph_paths"]
    assert path["template"] == "bridge" and path["source_story_id"] == str(sid(1))
    assert path["counted"] is False
    assert rec["candidates"][-1] is bridged


def test_a_counted_bridge_hit_is_marked_counted():
    env = {"BRIDGE_SEEDS": "1", "BRIDGE_AGREE": "1", "BRIDGE_WEIGHT": "0.15", "BRIDGE_GRAPH_ONLY": "true"}
    rows = rows_by_id(record(run_of(cand(1, 0.9), cand(4, None, BRIDGE), env=env)))
    assert rows[4]["ranking_rank"] == 2 and rows[4]["graph_paths"][0]["counted"] is True


def test_vector_mode_shows_no_graph_paths_and_leaves_graph_only_stories_unranked():
    rows = rows_by_id(record(run_of(cand(1, 0.9), cand(3, None, MENTIONS), mode="vector")))
    assert rows[1]["graph_paths"] == [] and rows[3]["graph_paths"] == []
    assert rows[3]["ranking_rank"] is None and rows[3]["score"] is None
