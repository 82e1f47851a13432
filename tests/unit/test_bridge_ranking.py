"""Bridge evidence in hybrid ranking (docs/decisions/0022): a story reached through a specific
entity of one of the top stories moves up only by the rule, never in vector mode, and never
through a seed that is not a top story."""

from __future__ import annotations

from uuid import UUID

from hypothesis import example, given
from hypothesis import strategies as st

from heirloom.contracts.context import Candidate, GraphHit
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import BridgeRule, rank_candidates

LEGACY = UUID(int=1)
CONFIG = load_personas()["family"].traversal


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def bridge(to: int, seed: int, entity: str = "Frannie") -> GraphHit:
    return GraphHit(story_id=sid(to), template="bridge", hops=2, entity=entity, source_story_id=sid(seed))


def cand(n: int, embedding: float | None, *hits: GraphHit) -> Candidate:
    return Candidate(
        story_id=sid(n),
        legacy_id=LEGACY,
        legacy_name="Nell",
        title=f"Story {n}",
        primary=True,
        embedding_score=embedding,
        graph_hits=hits,
    )


def order(candidates: list[Candidate], rule: BridgeRule | None = None, mode: str = "hybrid") -> list[int]:
    ranked = rank_candidates(candidates, CONFIG, mode, bridge=rule)  # type: ignore[arg-type]
    return [s.candidate.story_id.int - 1000 for s in ranked]


#: ten stories by falling similarity; story 8 is bridged from story 0 (a top story), story 9
#: from story 6 (not a top story)
BASE = [cand(i, 0.9 - 0.05 * i) for i in range(8)] + [
    cand(8, 0.5, bridge(8, 0)),
    cand(9, 0.45, bridge(9, 6, "Ray")),
]
SLOT = BridgeRule(seeds=2, slot=5)


def test_without_a_rule_bridge_hits_change_nothing() -> None:
    assert order(BASE) == list(range(10))
    assert order(BASE, BridgeRule()) == list(range(10))


def test_the_slot_takes_the_story_a_top_story_bridges_to() -> None:
    assert order(BASE, SLOT) == [0, 1, 2, 3, 8, 4, 5, 6, 7, 9]


def test_a_seed_below_the_top_lends_nothing() -> None:
    only_low = [c for c in BASE if c.story_id != sid(8)]
    assert order(only_low, SLOT) == [0, 1, 2, 3, 4, 5, 6, 7, 9]


def test_a_bridged_story_already_in_the_top_stays_where_it_is() -> None:
    candidates = [
        cand(0, 0.9),
        cand(1, 0.85),
        cand(2, 0.8, bridge(2, 0)),
        *(cand(i, 0.5) for i in range(3, 7)),
    ]
    assert order(candidates, SLOT) == list(range(7))


def test_the_weight_adds_evidence_divided_by_reach() -> None:
    one = [cand(0, 0.9), cand(1, 0.8), cand(2, 0.79, bridge(2, 0, "Ray"))]
    assert order(one, BridgeRule(seeds=1, weight=0.05)) == [0, 2, 1]
    # an entity that bridges to two candidates counts half: 0.79 + 0.025 > 0.8 still, 0.77 not
    two = [cand(0, 0.9), cand(1, 0.8), cand(2, 0.79, bridge(2, 0)), cand(3, 0.77, bridge(3, 0))]
    assert order(two, BridgeRule(seeds=1, weight=0.05)) == [0, 2, 1, 3]


def test_a_bridged_story_never_passes_the_top_story_that_lent_it_evidence() -> None:
    """A story reached through top stories' entities is relevant by way of them: it may pass
    every other story, never one whose entity it shares (the slot aside)."""
    close = [cand(0, 0.9), cand(1, 0.5), cand(2, 0.88, bridge(2, 0))]
    assert order(close, BridgeRule(seeds=1, weight=0.2)) == [0, 2, 1]
    ranked = rank_candidates(close, CONFIG, "hybrid", bridge=BridgeRule(seeds=1, weight=0.2))
    assert ranked[1].score == round(ranked[0].score - 1e-6, 6)


@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=12), st.floats(0.0, 1.0))
@example(sims=[0.9, 0.8, 0.1], weight=1.0)
def test_evidence_lent_keeps_every_seed_above_what_it_lifts(sims: list[float], weight: float) -> None:
    candidates = [
        cand(i, s, *((bridge(i, 0), bridge(i, 1)) if i % 3 == 2 else ())) for i, s in enumerate(sims)
    ]
    before = order(candidates)
    after = order(candidates, BridgeRule(seeds=2, weight=weight, agree=2))
    assert after[:2] == before[:2]  # the seeds, the top two stories without bridges, stay first


def test_vector_mode_ignores_bridges() -> None:
    assert order(BASE, SLOT, mode="vector") == list(range(10))


def test_a_story_only_a_bridge_reached_enters_only_when_allowed() -> None:
    lone = cand(10, None, bridge(10, 0))
    assert 10 not in order([*BASE, lone], SLOT)
    assert order([*BASE, lone], BridgeRule(seeds=2, slot=5, graph_only=True))[4] in {8, 10}


def test_the_bridged_story_shows_its_path() -> None:
    ranked = rank_candidates(BASE, CONFIG, "hybrid", bridge=SLOT)
    moved = next(s for s in ranked if s.candidate.story_id == sid(8))
    assert moved.hits[0].template == "bridge" and "entity shared with a top story" in moved.reasons
    low = next(s for s in ranked if s.candidate.story_id == sid(9))
    assert not low.hits  # its seed is not a top story: no path shown


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), st.integers(0, 11), st.integers(1, 3))
def test_the_rule_moves_at_most_one_story_into_the_top(sims: list[float], seed: int, slot: int) -> None:
    """Whatever the scores: the top stories minus the slot keep their order, and at most one
    story enters the top `slot`."""
    seed %= len(sims)
    candidates = [cand(i, s, *((bridge(i, seed),) if i % 3 == 2 else ())) for i, s in enumerate(sims)]
    before = order(candidates)
    after = order(candidates, BridgeRule(seeds=2, slot=slot))
    assert sorted(after) == sorted(before)
    assert len(set(after[:slot]) - set(before[:slot])) <= 1
    assert [x for x in after[: slot - 1] if x in before[: slot - 1]] == [
        x for x in before[: slot - 1] if x in after[: slot - 1]
    ]


def test_with_agree_two_only_an_entity_both_top_stories_lead_to_counts() -> None:
    rule = BridgeRule(seeds=2, slot=5, agree=2)
    assert order(BASE, rule) == list(range(10))  # story 8: from story 0 alone
    shared = [*BASE[:8], cand(8, 0.5, bridge(8, 0, "Wisconsin"), bridge(8, 1, "Wisconsin")), BASE[9]]
    assert order(shared, rule) == [0, 1, 2, 3, 8, 4, 5, 6, 7, 9]


def test_two_seeds_bridging_to_one_story_through_one_entity_reach_one_candidate() -> None:
    # evidence 1 / the candidates the entity bridges to: story 8 alone, so the whole weight:
    # 0.5 / 0.9 + 0.2 passes story 5 (0.65 / 0.9); counted per hit (+0.1) it stays below story 6
    shared = [*BASE[:8], cand(8, 0.5, bridge(8, 0, "Wisconsin"), bridge(8, 1, "Wisconsin")), BASE[9]]
    ranked = rank_candidates(shared, CONFIG, "hybrid", bridge=BridgeRule(seeds=2, weight=0.2, agree=2))
    assert [s.candidate.story_id.int - 1000 for s in ranked][:6] == [0, 1, 2, 3, 4, 8]
    assert next(s.score for s in ranked if s.candidate.story_id == sid(8)) == round(0.5 / 0.9 + 0.2, 6)
