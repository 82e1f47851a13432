"""Topic evidence (docs/decisions/0024): a story whose title names the entity the question names
or describes is about it. The title rule, the plan graph sync writes from it, and how it moves a
hybrid ranking (never vector mode, never without the weight, shared among the stories about
the same entity)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from heirloom.contracts.context import Candidate, GraphHit
from heirloom.contracts.extraction import ExtractedEntities, ExtractedPerson, ExtractedPlace
from heirloom.contracts.records import Story, Visibility
from heirloom.domain.entity_sync import in_title, plan_story_entities
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import rank_candidates, topic_evidence

LEGACY = UUID(int=1)
CONFIG = load_personas()["family"].traversal
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_a_title_names_an_entity_by_whole_words_in_any_case() -> None:
    assert in_title("Frannie", ["Frannie"])
    assert in_title("Uncle Jim's Boat", ["jim"])
    assert in_title("The Summer at Tamarack Lake", ["tamarack lake"])
    assert not in_title("Jimmy and the Boat", ["Jim"])
    assert not in_title("The Flood", ["Flo"])
    assert not in_title("Anything", ["", "  "])


def story(title: str) -> Story:
    return Story(
        id=UUID(int=7), legacy_id=LEGACY, author_user_id=UUID(int=9), title=title, content="text",
        visibility=Visibility.PUBLIC, created_at=T0, updated_at=T0,
    )  # fmt: skip


ENTITIES = ExtractedEntities(
    people=(ExtractedPerson(name="Frances", confidence=0.9), ExtractedPerson(name="Carl", confidence=0.9)),
    places=(ExtractedPlace(name="Tamarack Lake", type="lake", confidence=0.9),),
)


def test_the_plan_marks_the_persons_and_places_its_title_names() -> None:
    resolved = {"Frances": "p-frances", "Frannie": "p-frances", "Carl": "p-carl"}
    plan = plan_story_entities(story("Frannie at Tamarack Lake"), ENTITIES, resolved, [])
    assert plan.person_ids == ["p-carl", "p-frances"]
    assert plan.title_person_ids == ["p-frances"]  # by the nickname the story used
    assert [row["in_title"] for row in plan.by_label["Place"]] == [True]
    other = plan_story_entities(story("A Winter Wedding"), ENTITIES, resolved, [])
    assert other.title_person_ids == []
    assert [row["in_title"] for row in other.by_label["Place"]] == [False]


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def mention(
    n: int, entity: str, *, topic: bool, template: str = "person_mentions", match: bool = True
) -> GraphHit:
    return GraphHit(
        story_id=sid(n), template=template, hops=1, relationship="MENTIONS", entity=entity,
        entity_match=match, topic=topic,
    )  # fmt: skip


def cand(n: int, embedding: float | None, *hits: GraphHit) -> Candidate:
    return Candidate(
        story_id=sid(n), legacy_id=LEGACY, legacy_name="Nell", title=f"Story {n}", primary=True,
        embedding_score=embedding, graph_hits=hits,
    )  # fmt: skip


def order(candidates: list[Candidate], weight: float, mode: str = "hybrid") -> list[int]:
    ranked = rank_candidates(candidates, CONFIG, mode, topic_weight=weight)  # type: ignore[arg-type]
    return [s.candidate.story_id.int - 1000 for s in ranked]


#: eight stories by falling similarity, each mentioning Frances; story 7 is about her (its title
#: names her): a path to eight candidates is no evidence under decision 0009's cap
BASE = [cand(i, 0.9 - 0.05 * i, mention(i, "Frances", topic=i == 7)) for i in range(8)]


def test_a_story_about_the_named_entity_rises_by_the_weight() -> None:
    assert order(BASE, 0.0) == list(range(8))
    # 0.55 / 0.9 calibrated (0.611), +0.25: above story 3 (0.75 / 0.9), below story 2 (0.8 / 0.9)
    assert order(BASE, 0.25) == [0, 1, 2, 7, 3, 4, 5, 6]


def test_vector_mode_ignores_topic_evidence() -> None:
    assert order(BASE, 0.5, mode="vector") == list(range(8))


def test_topic_evidence_is_shared_among_the_stories_about_the_entity() -> None:
    two = [*BASE[:6], cand(6, 0.6, mention(6, "Frances", topic=True)), BASE[7]]
    scored = {
        s.candidate.story_id.int - 1000: s.score
        for s in rank_candidates(two, CONFIG, "hybrid", topic_weight=0.2)
    }
    alone = {
        s.candidate.story_id.int - 1000: s.score
        for s in rank_candidates(BASE, CONFIG, "hybrid", topic_weight=0.2)
    }
    assert alone[7] - alone[5] > scored[7] - scored[5]  # halved: two candidates are about her


def test_only_an_entity_the_question_names_or_describes_counts() -> None:
    unnamed = [cand(0, 0.9), cand(1, 0.5, mention(1, "Frances", topic=True, match=False))]
    assert order(unnamed, 0.5) == [0, 1]
    other_template = [cand(0, 0.9), cand(1, 0.5, mention(1, "Frances", topic=True, template="general"))]
    assert order(other_template, 0.5) == [0, 1]
    described = [cand(0, 0.9), cand(1, 0.5, mention(1, "Frances", topic=True, template="described"))]
    assert order(described, 0.5) == [1, 0]


def test_a_story_only_the_graph_reached_stays_after_the_rest() -> None:
    graph_only = [cand(0, 0.9), cand(1, 0.3), cand(2, None, mention(2, "Frances", topic=True))]
    assert order(graph_only, 1.0) == [0, 1, 2]


@given(
    sims=st.lists(st.floats(min_value=0.05, max_value=1.0), min_size=2, max_size=8),
    topics=st.lists(st.booleans(), min_size=8, max_size=8),
    weight=st.floats(min_value=0.0, max_value=1.0),
)
def test_evidence_is_between_zero_and_one_and_zero_without_topic_hits(
    sims: list[float], topics: list[bool], weight: float
) -> None:
    cands = [cand(i, s, mention(i, "Frances", topic=topics[i])) for i, s in enumerate(sims)]
    counts = {("topic", "frances", "MENTIONS"): max(1, sum(topics[: len(sims)]))}
    for c, is_topic in zip(cands, topics, strict=False):
        value = topic_evidence(c.graph_hits, CONFIG, counts)
        assert 0.0 <= value <= 1.0
        assert (value > 0) == is_topic
    # the stories without topic hits keep their vector order among themselves (up to the
    # ranking's rounding of scores to 6 places: two nearly equal similarities tie, by story id)
    plain = [i for i in order(cands, weight) if not topics[i]]
    assert all(sims[a] >= sims[b] - 1e-5 for a, b in itertools.pairwise(plain))


def test_traversal_keeps_the_topic_hit_of_a_story_reached_twice_by_one_template() -> None:
    from heirloom.domain.traversal import _dedupe

    side, about = mention(1, "Carl", topic=False), mention(1, "Frances", topic=True)
    assert _dedupe([side, about]) == [about]
    assert _dedupe([about, side]) == [about]
    assert _dedupe([side, mention(2, "Carl", topic=False)]) == [side, mention(2, "Carl", topic=False)]
