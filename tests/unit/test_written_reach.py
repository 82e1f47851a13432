"""A path's reach counts the candidates whose own words write the name (docs/decisions/0042):
an extraction miss must not make a path through a named place, event or thing look specific."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.context import Candidate, ChunkResult, GraphHit
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import rank_candidates, writes_name, written_reach

LEGACY = UUID(int=1)
CONFIG = load_personas()["family"].traversal


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def boat(n: int, entity: str = "Johanna Maria", template: str = "entity_focused") -> GraphHit:
    return GraphHit(
        story_id=sid(n), template=template, hops=1, relationship="TOOK_PLACE_AT", entity=entity,
        entity_id=f"node-{entity}", entity_match=True,
    )  # fmt: skip


def cand(n: int, similarity: float, text: str, *hits: GraphHit, title: str = "") -> Candidate:
    chunk = ChunkResult(
        story_id=sid(n), legacy_id=LEGACY, chunk_index=0, text=text, token_count=10, similarity=similarity
    )
    return Candidate(
        story_id=sid(n), legacy_id=LEGACY, legacy_name="Opa", title=title or f"Story {n}", primary=True,
        chunks=(chunk,), embedding_score=similarity, graph_hits=hits,
    )  # fmt: skip


def order(candidates: list[Candidate], mode: str = "hybrid") -> list[int]:
    return [s.candidate.story_id.int - 1000 for s in rank_candidates(candidates, CONFIG, mode)]  # type: ignore[arg-type]


def test_a_name_is_written_as_whole_words_with_its_capitals() -> None:
    c = cand(0, 0.5, "We sold the Johanna Maria in Liège.", title="Six Years Aboard")
    assert writes_name(c, ["Johanna Maria"])
    assert not writes_name(c, ["Johanna"[:5]])  # "Johan" is not a whole word there
    assert not writes_name(c, ["johanna maria"])  # a lowercase name is a common noun: never counted
    assert writes_name(cand(1, 0.5, "nothing", title="Selling the Johanna Maria"), ["Johanna Maria"])
    assert not writes_name(cand(2, 0.5, "We watch the boats."), ["watch"])


def test_the_stories_that_write_the_name_join_the_path() -> None:
    cands = [
        cand(0, 0.9, "The Johanna Maria was moored at Antwerp.", boat(0)),
        cand(1, 0.8, "Six years on the Johanna Maria."),  # the extractor missed the boat here
        cand(2, 0.7, "A wedding in Brussels."),
    ]
    linked = {("entity_focused", "node-Johanna Maria", "TOOK_PLACE_AT"): {str(sid(0))}}
    assert written_reach(cands, linked) == {
        ("entity_focused", "node-Johanna Maria", "TOOK_PLACE_AT"): {str(sid(0)), str(sid(1))}
    }


def test_a_path_the_text_shows_to_reach_many_stories_lifts_none() -> None:
    # story 3 is the only one the graph linked to the boat, three others write its name: without
    # the text it would be a specific path and pass story 2
    text = "They loaded coal on the Johanna Maria."
    cands = [
        cand(0, 0.90, text),
        cand(1, 0.89, text),
        cand(2, 0.88, "Another boat."),
        cand(3, 0.84, "The boat.", boat(3)),  # 0.84 / 0.9 + 0.05 evidence: above story 2
        cand(4, 0.83, text),
    ]
    assert order(cands) == [0, 1, 2, 3, 4]
    # the same path with the graph's count alone (no story writes the name) lifts story 3
    silent = [cand(i, c.embedding_score or 0, "Another boat.", *c.graph_hits) for i, c in enumerate(cands)]
    assert order(silent) == [0, 1, 3, 2, 4]


def test_a_path_through_a_person_keeps_the_graphs_count() -> None:
    person = GraphHit(
        story_id=sid(3), template="person_mentions", hops=1, relationship="MENTIONS", entity="Johanna Maria",
        entity_match=True,
    )  # fmt: skip
    text = "Johanna Maria came for dinner."
    cands = [cand(0, 0.90, text), cand(1, 0.89, text), cand(2, 0.88, "x"), cand(3, 0.84, "y", person)]
    assert order(cands) == [0, 1, 3, 2]
