"""Fact edges on the embedded engines (FalkorDB here; test_neptune_parity runs them again on the
Neptune-protocol server): provenance per telling, scalar properties only, supersede by the same
narrator, conflicting accounts across narrators, and withdrawal restoring what was superseded."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from heirloom.contracts.extraction import ExtractedEntities, ExtractedFact, ExtractedObject, ExtractedPerson
from heirloom.contracts.records import Legacy, Person, Story, Visibility
from heirloom.domain import graph_sync
from heirloom.domain.entity_sync import sync_story_entities, withdraw_story

pytestmark = pytest.mark.integration

LEGACY = uuid.UUID("00000000-0000-4000-8000-0000000000f1")
ROSE = uuid.UUID("00000000-0000-4000-8000-0000000000a1")
WALT = uuid.UUID("00000000-0000-4000-8000-0000000000a2")
NARRATOR_A = uuid.UUID("00000000-0000-4000-8000-0000000000b1")
NARRATOR_B = uuid.UUID("00000000-0000-4000-8000-0000000000b2")
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _people(graph):
    graph_sync.sync_legacy(graph, Legacy(id=LEGACY, name="Rose", subject_person_id=ROSE))
    for pid, name in ((ROSE, "Rose Hale"), (WALT, "Walt Hale")):
        graph_sync.sync_person(graph, Person(id=pid, legacy_id=LEGACY, name=name))
    return graph


def _story(n: int, narrator: uuid.UUID, days: int) -> Story:
    at = T0 + timedelta(days=days)
    return Story(
        id=uuid.UUID(int=n), legacy_id=LEGACY, author_user_id=narrator, title=f"Story {n}",
        content="text", visibility=Visibility.PUBLIC, created_at=at, updated_at=at,
    )  # fmt: skip


def _married(sentence: str, *, negated: bool = False) -> ExtractedEntities:
    return ExtractedEntities(
        people=(ExtractedPerson(name="Rose", confidence=0.9), ExtractedPerson(name="Walt", confidence=0.9)),
        objects=(ExtractedObject(name="the ring", type="jewelry", confidence=0.9),),
        facts=(
            ExtractedFact(source="Rose", relation="MARRIED", target="Walt", verb="married",
                          sentence=sentence, negated=negated, confidence=0.9),
            ExtractedFact(source="Walt", relation="GAVE", target="the ring", verb="gave",
                          sentence="Walt gave her the ring.", confidence=0.8),
        ),
    )  # fmt: skip


RESOLVED = {"Rose": str(ROSE), "Walt": str(WALT)}


def _sync(graph, story: Story, entities: ExtractedEntities):
    graph_sync.sync_story(graph, story)
    return sync_story_entities(graph, story, entities, RESOLVED, [])


def married_edges(graph) -> dict[str, dict]:
    rows = graph.run(
        "MATCH (a:Person)-[r:FACT]->(b:Person) WHERE r.relation = 'MARRIED' "
        "RETURN r.story_id AS sid, r.years AS years, r.valid_to AS valid_to, r.invalid_reason AS reason, "
        "r.superseded_by AS by, r.conflicting AS conflicting, r.narrator AS narrator, r.sentence AS sentence"
    )
    return {row["sid"]: row for row in rows}


def test_a_fact_is_an_edge_with_its_sentence_and_provenance(graph):
    fx = _people(graph)
    story = _story(1, NARRATOR_A, 0)
    report = _sync(fx, story, _married("Rose married Walt in 1950."))
    assert report.facts == 2
    rows = fx.run(
        "MATCH (a:Person)-[r:FACT]->(b) RETURN a.name AS a, r.relation AS rel, r.verb AS verb, "
        "CASE WHEN b:Person THEN b.name ELSE r.name END AS b, r.story_id AS sid, r.narrator AS narrator, r.told_at AS told, "
        "r.years AS years, r.valid_to AS valid_to ORDER BY rel"
    )
    assert [(r["a"], r["rel"], r["verb"], r["b"]) for r in rows] == [
        ("Walt Hale", "GAVE", "gave", "the ring"),
        ("Rose Hale", "MARRIED", "married", "Walt Hale"),
    ]
    assert {r["sid"] for r in rows} == {str(story.id)}
    assert {r["narrator"] for r in rows} == {str(NARRATOR_A)}
    assert {r["told"] for r in rows} == {story.created_at.isoformat()}
    assert rows[1]["years"] == "|1950|" and rows[1]["valid_to"] == ""
    # every property of a fact edge is a scalar (Neptune has no list or map values)
    props = fx.run("MATCH ()-[r:FACT]->() RETURN r AS r")
    for row in props:
        assert all(not isinstance(v, list | dict) for k, v in row["r"].items() if not k.startswith("_"))


def test_the_same_narrator_restating_supersedes_and_withdrawal_restores(graph):
    fx = _people(graph)
    first, second = _story(1, NARRATOR_A, 0), _story(2, NARRATOR_A, 30)
    _sync(fx, first, _married("Rose married Walt in 1950."))
    _sync(fx, second, _married("Rose and Walt married in 1952, after the war."))
    edges = married_edges(fx)
    old, new = edges[str(first.id)], edges[str(second.id)]
    assert old["valid_to"] == second.created_at.isoformat()  # kept, not deleted
    assert old["by"] == str(second.id) and "1952" in old["reason"]
    assert new["valid_to"] == "" and not new["conflicting"] and not old["conflicting"]
    # a re-sync of the same story changes nothing
    _sync(fx, second, _married("Rose and Walt married in 1952, after the war."))
    assert married_edges(fx) == edges
    # the restatement is deleted: the earlier telling is current again
    withdraw_story(fx, str(second.id))
    assert set(married_edges(fx)) == {str(first.id)}
    assert married_edges(fx)[str(first.id)]["valid_to"] == ""
    assert married_edges(fx)[str(first.id)]["reason"] == ""


def test_an_edit_replaces_the_story_facts_and_agreement_supersedes_nothing(graph):
    fx = _people(graph)
    first, second = _story(1, NARRATOR_A, 0), _story(2, NARRATOR_A, 30)
    _sync(fx, first, _married("Rose married Walt in 1950."))
    _sync(fx, second, _married("Rose married Walt in 1950, at St. Anne's."))
    assert all(e["valid_to"] == "" for e in married_edges(fx).values())
    _sync(fx, second, _married("Rose never married Walt.", negated=True))  # the edit contradicts
    assert married_edges(fx)[str(first.id)]["by"] == str(second.id)
    assert "never married" in married_edges(fx)[str(second.id)]["sentence"]


def test_different_narrators_disagreeing_are_both_kept_as_conflicting(graph):
    fx = _people(graph)
    mine, theirs = _story(1, NARRATOR_A, 0), _story(2, NARRATOR_B, 30)
    _sync(fx, mine, _married("Rose married Walt in 1950."))
    _sync(fx, theirs, _married("Walt married Rose in 1953."))  # the other direction: same pair
    edges = married_edges(fx)
    assert {sid: (e["valid_to"], e["conflicting"]) for sid, e in edges.items()} == {
        str(mine.id): ("", True),
        str(theirs.id): ("", True),
    }
    withdraw_story(fx, str(theirs.id))  # one account left: no longer disputed
    assert married_edges(fx)[str(mine.id)]["conflicting"] is False


def test_templates_read_only_current_facts_with_their_sentence_and_story(graph):
    from tests.support.graph_fixture import run_template

    fx = _people(graph)
    first, second = _story(1, NARRATOR_A, 0), _story(2, NARRATOR_A, 30)
    _sync(fx, first, _married("Rose married Walt in 1950."))
    _sync(fx, second, _married("Rose and Walt married in 1952."))
    base = {"legacy_ids": [str(LEGACY)], "limit": 20}
    rows = run_template(fx, "story_facts", {**base, "ids": [str(WALT)]})
    married = {(r["story_id"], r["entity"], r["via"]) for r in rows if r["relationship"] == "MARRIED"}
    assert married == {(str(second.id), "Walt Hale", "Rose Hale")}  # the superseded telling is not read
    both = run_template(fx, "story_facts", {**base, "ids": [str(WALT), str(ROSE)]})
    assert all(r["linked"] for r in both if r["relationship"] == "MARRIED")
    told = run_template(fx, "fact_sentences", {**base, "ids": [str(ROSE)], "subject_id": str(ROSE)})
    assert [(r["subject"], r["predicate"], r["object"], r["sentence"], r["title"]) for r in told] == [
        ("Rose Hale", "MARRIED", "Walt Hale", "Rose and Walt married in 1952.", "Story 2")
    ]
    # another legacy's ids see nothing
    assert run_template(fx, "story_facts", {**base, "legacy_ids": ["other"], "ids": [str(WALT)]}) == []
    neighbours = run_template(fx, "fact_neighbours", {**base, "ids": [str(WALT)]})
    assert all(r["via"] == "Rose Hale" for r in neighbours)
    # each row names the story that told the fact it went through (AccessFilter checks it)
    assert {r["source_id"] for r in neighbours} == {str(second.id)}
