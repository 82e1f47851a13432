"""The bridge replay (heirloom_dev.bridge_replay) reads the per-query file's complete candidate
list: an entity's reach counts the candidates outside the context too, a candidate the budget
cut above the context's last story stays out, and an older file (context stories only) still
reads."""

from __future__ import annotations

from typing import Any

from heirloom_dev.bridge_replay import Rule, cut_by_budget, parse_rule, rerank

TWO_SEEDS = Rule(seeds=2, slot=0, weight=0.1, agree=2)


def cand(
    sid: str, similarity: float, at: int, in_context: bool = True, bridged: bool = False
) -> dict[str, Any]:
    paths = [
        {
            "template": "bridge",
            "hops": 2,
            "relationship": "MENTIONS",
            "entity": "Frannie",
            "source_story_id": seed,
        }
        for seed in ("A", "B")
        if bridged
    ]
    return {
        "story_id": sid,
        "ranking_rank": at,
        "in_context": in_context,
        "similarity": similarity,
        "score": similarity,
        "graph_paths": paths,
    }


#: E was cut by the budget above the context's last story; D (bridged like C) ranked below it
CANDIDATES = [
    cand("A", 0.95, 1),
    cand("B", 0.90, 2),
    cand("E", 0.88, 3, in_context=False),
    cand("X", 0.87, 4),
    cand("Y", 0.86, 5),
    cand("Z", 0.84, 6),
    cand("C", 0.80, 7, bridged=True),
    cand("D", 0.60, 8, in_context=False, bridged=True),
]


def record(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    ranked = [c["story_id"] for c in candidates if c.get("in_context", True)]
    return {"query_id": "q", "intent": "relational", "ranked": ranked, "candidates": candidates}


def test_without_a_rule_the_replay_gives_the_context_order_and_leaves_the_cut_story_out():
    rec = record(CANDIDATES)
    assert cut_by_budget(CANDIDATES) == {"E"}
    assert rerank(rec, Rule(0, 0, 0.0)) == ["A", "B", "X", "Y", "Z", "C", "D"]


def test_reach_counts_the_candidate_outside_the_context():
    # Frannie bridges to C and D: evidence 1/2, so C gains 0.05 and passes Z, not Y
    assert rerank(record(CANDIDATES), TWO_SEEDS)[:6] == ["A", "B", "X", "Y", "C", "Z"]


def test_a_file_with_the_context_stories_only_reads_as_before():
    old = [{k: v for k, v in c.items() if k not in ("in_context", "ranking_rank")} for c in CANDIDATES]
    old = [c for c in old if c["story_id"] not in ("D", "E")]
    # D unseen: Frannie seems to bridge to C alone, so C gains the whole 0.1 (the blind spot)
    assert rerank(record(old), TWO_SEEDS)[:3] == ["A", "B", "C"]


def test_a_rule_reads_back_from_its_printed_form():
    rule = Rule(
        seeds=2, slot=5, weight=0.15, graph_only=True, intents=("relational",), kinds=("MENTIONS",), agree=2
    )
    assert parse_rule(str(rule)) == rule
    assert parse_rule("seeds=2 w=0.15 agree=2") == Rule(seeds=2, slot=0, weight=0.15, agree=2)
