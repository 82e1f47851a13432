"""Staging on the embedded engines (FalkorDB, or the Neptune path with HEIRLOOM_GRAPH=
neptune-local): with a legacy's staging on, extracted places, events and objects stay out of the
graph (so out of every retrieval) until a curator approves them; a rejection survives a
re-extraction of the same text and not a change of it; decisions are recorded in the changelog;
a staged item never shows a story the curator may not read."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from uuid import UUID

import pytest

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.contracts.curation import DecisionBody, StagingSetting
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
)
from heirloom.domain import curation_api, ingestion, story_graph
from heirloom.domain.chunking import story_digest
from heirloom.domain.entity_sync import entity_id
from heirloom.errors import AccessDenied, Conflict, InvalidRequest, NotFound
from heirloom_dev.loader import load_dataset, read_dataset
from tests.integration.test_curation import ScriptedExtractor
from tests.support.dataset import MiniDataset

pytestmark = pytest.mark.integration

ORCHARD = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9),),
    places=(ExtractedPlace(name="barn", type="building", confidence=0.9),),
    objects=(
        ExtractedObject(name="apple trees", type="other", confidence=0.9),
        ExtractedObject(name="cider", type="other", confidence=0.9),
    ),
    relationships=(
        ExtractedRelationship(subject="Ada", predicate="OWNED", object="apple trees", confidence=0.9),
        ExtractedRelationship(subject="Ada", predicate="WORKED_AT", object="barn", confidence=0.9),
    ),
)
#: the admirer's personal story: the creator may not read it
SECRET = ExtractedEntities(objects=(ExtractedObject(name="secret note", type="document", confidence=0.9),))


@pytest.fixture
def staged(ports, tmp_path):
    """The mini dataset loaded without entities, then the legacy's staging turned on and its
    stories extracted (as a delivery or backfill would)."""
    mini = MiniDataset()
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    cur = curation_api.CurationPorts(p.graph, p.stories, curation)
    curation_api.set_staging_for(cur, UUID(mini.legacy), UUID(mini.creator), StagingSetting(enabled=True))
    p = dataclasses.replace(
        p,
        extractor=ScriptedExtractor({"apple": ORCHARD, "herself": SECRET}),
        extractor_version="scripted-1",
    )
    for sid in (mini.public_story, mini.personal_story):
        story = p.stories.get_story(UUID(sid))
        assert story is not None
        assert story_graph.enrich_story(p, story, story_digest(story.title, story.content))
    return p, mini, cur


def nodes(graph, label: str) -> set[str]:
    return {str(r["name"]) for r in graph.run(f"MATCH (e:{label}) RETURN e.name AS name")}


def person_edges(graph, sid: str) -> set[tuple[str, str]]:
    rows = graph.run(
        "MATCH (:Person)-[r]->(e) WHERE r.story_id = $sid RETURN r.kind AS kind, e.name AS name", {"sid": sid}
    )
    return {(str(r["kind"]), str(r["name"])) for r in rows}


def item(cur, mini: MiniDataset, name: str, status: str | None = "pending"):
    found = curation_api.staged_for(cur, UUID(mini.legacy), UUID(mini.creator), status)  # type: ignore[arg-type]
    return next(i for i in found if i.name == name)


def test_staged_entities_stay_out_of_the_graph_and_suggestions_until_approved(staged):
    ports, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    assert nodes(ports.graph, "Object") == set() and nodes(ports.graph, "Place") == set()
    assert person_edges(ports.graph, mini.public_story) == set()
    # the known person is still mentioned: people are known records, not staged
    assert ports.graph.run(
        "MATCH (s:Story {id: $sid})-[:MENTIONS]->(p:Person) RETURN p.id AS id", {"sid": mini.public_story}
    ) == [{"id": mini.subject}]
    pending = curation_api.staged_for(cur, legacy, creator)
    assert {(i.label, i.name) for i in pending} == {
        ("Place", "barn"),
        ("Object", "apple trees"),
        ("Object", "cider"),
    }
    barn = item(cur, mini, "barn")
    assert barn.sentences == ("Every autumn the family pressed cider in the barn.",)
    assert curation_api.suggestions_for(cur, legacy, creator) == []

    approved = curation_api.decide_for(cur, legacy, creator, item(cur, mini, "apple trees").id, True)
    assert approved.status == "approved" and approved.decided_by == creator
    assert nodes(ports.graph, "Object") == {"apple trees"}
    assert person_edges(ports.graph, mini.public_story) == {("OWNED", "apple trees")}
    assert nodes(ports.graph, "Place") == set()  # the barn still waits, and its edge with it

    # an edit of name and type is what enters, the person edge follows it
    curation_api.decide_for(
        cur, legacy, creator, barn.id, True, DecisionBody(name="the old barn", type="workplace")
    )
    held = ports.graph.run(
        "MATCH (p:Place {id: $id}) RETURN p.name AS name, p.type AS type",
        {"id": entity_id(mini.legacy, "Place", "the old barn")},
    )
    assert held == [{"name": "the old barn", "type": "workplace"}]
    assert ("WORKED_AT", "the old barn") in person_edges(ports.graph, mini.public_story)
    # the graph is marked synced with the story's text: an unchanged delivery extracts nothing
    story = ports.stories.get_story(UUID(mini.public_story))
    assert not story_graph.enrich_story(ports, story, story_digest(story.title, story.content))


def test_a_rejection_survives_re_extraction_of_the_same_text_but_not_a_change(staged, tmp_path):
    ports, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    cider = item(cur, mini, "cider")
    rejected = curation_api.decide_for(cur, legacy, creator, cider.id, False)
    assert rejected.status == "rejected"
    curation_api.decide_for(cur, legacy, creator, item(cur, mini, "apple trees").id, True)

    ports.stories.forget_graph_synced([UUID(mini.public_story)])  # e.g. a rebuild extracts again
    story = ports.stories.get_story(UUID(mini.public_story))
    assert story_graph.enrich_story(ports, story, story_digest(story.title, story.content))
    assert nodes(ports.graph, "Object") == {"apple trees"}
    assert "cider" not in {i.name for i in curation_api.staged_for(cur, legacy, creator)}
    assert item(cur, mini, "cider", "rejected").id == cider.id

    # the text changes: cider is staged again (pending, still not in the graph); the approval
    # of the apple trees carries over to the new text
    record = next(
        s.record
        for s in read_dataset(mini.write(tmp_path / "again")).stories
        if str(s.record.id) == mini.public_story
    )
    edited = record.model_copy(
        update={
            "content": record.content + " The apples were sweet.",
            "updated_at": record.updated_at + timedelta(hours=1),
        }
    )
    ingestion.apply_story(ports, edited)
    again = item(cur, mini, "cider")
    assert again.id != cider.id and again.status == "pending"
    # the earlier text's undecided items are gone (its barn stood for the new one), its decided stay
    pending = curation_api.staged_for(cur, legacy, creator)
    assert sorted(i.name for i in pending) == ["barn", "cider"]
    assert all(i.content_hash == story_digest(edited.title, edited.content) for i in pending)
    with pytest.raises(Conflict):  # a decision on the earlier text's item
        curation_api.decide_for(cur, legacy, creator, cider.id, True)
    assert nodes(ports.graph, "Object") == {"apple trees"}
    assert person_edges(ports.graph, mini.public_story) == {("OWNED", "apple trees")}


def test_only_a_creator_or_admin_may_stage_list_or_decide(staged):
    _, mini, cur = staged
    legacy, admirer = UUID(mini.legacy), UUID(mini.admirer)
    some = item(cur, mini, "cider")
    calls = [
        lambda: curation_api.staging_for(cur, legacy, admirer),
        lambda: curation_api.set_staging_for(cur, legacy, admirer, StagingSetting(enabled=False)),
        lambda: curation_api.staged_for(cur, legacy, admirer),
        lambda: curation_api.decide_for(cur, legacy, admirer, some.id, True),
        lambda: curation_api.decide_for(cur, legacy, admirer, some.id, False),
        lambda: curation_api.changelog_for(cur, legacy, admirer),
    ]
    for call in calls:
        with pytest.raises(AccessDenied):
            call()
    assert item(cur, mini, "cider").status == "pending"


def test_a_staged_item_never_shows_a_story_the_curator_may_not_read(staged):
    ports, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    everything = curation_api.staged_for(cur, legacy, creator, None)
    assert all(str(i.story_id) == mini.public_story for i in everything)
    secret = next(i for i in cur.curation.staged(legacy) if i.name == "secret note")
    assert str(secret.story_id) == mini.personal_story
    with pytest.raises(NotFound):  # as if it did not exist: no sentence, no story id
        curation_api.decide_for(cur, legacy, creator, secret.id, True)
    assert nodes(ports.graph, "Object") == set()
    page = curation_api.changelog_for(cur, legacy, creator)
    assert all(str(c.story_id) != mini.personal_story for c in page.changes)


def test_bad_decisions_are_refused_and_nothing_is_stored(staged):
    ports, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    barn = item(cur, mini, "barn")
    with pytest.raises(InvalidRequest):
        curation_api.decide_for(cur, legacy, creator, barn.id, True, DecisionBody(type="spaceship"))
    with pytest.raises(InvalidRequest):
        curation_api.decide_for(cur, legacy, creator, barn.id, False, DecisionBody(name="x"))
    with pytest.raises(NotFound):
        curation_api.decide_for(cur, UUID(mini.other_legacy), creator, barn.id, True)
    assert item(cur, mini, "barn").status == "pending"
    assert nodes(ports.graph, "Place") == set()


def test_decisions_and_syncs_are_in_the_changelog_newest_first_and_paged(staged):
    _, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    curation_api.decide_for(cur, legacy, creator, item(cur, mini, "cider").id, False)
    page = curation_api.changelog_for(cur, legacy, creator, limit=2)
    assert [c.action for c in page.changes] == ["story_synced", "staged_rejected"]
    decision = page.changes[1]
    assert decision.source == "person" and decision.actor_id == creator
    assert decision.detail["name"] == "cider" and decision.at is not None
    assert page.next_before is not None
    rest = curation_api.changelog_for(cur, legacy, creator, before=page.next_before)
    actions = [c.action for c in rest.changes]
    assert {"staging_on", "story_synced", "person_synced"} <= set(actions) and rest.next_before is None
    assert actions.index("story_synced") < actions.index("staging_on")  # newest first


def test_records_and_deletes_are_in_the_changelog_shown_to_whoever_could_read_them(staged):
    ports, mini, cur = staged
    legacy, creator = UUID(mini.legacy), UUID(mini.creator)
    sister = ports.stories.get_person(UUID(mini.sister))
    ingestion.apply_person(ports, sister.model_copy(update={"name": sister.name + " Hale"}))
    ingestion.delete_story(ports, UUID(mini.personal_story))  # the admirer's: not the creator's to read
    ingestion.delete_story(ports, UUID(mini.public_story))
    changes = curation_api.changelog_for(cur, legacy, creator).changes
    assert [c.action for c in changes[:2]] == ["story_deleted", "person_synced"]
    assert changes[0].source == "event" and str(changes[0].story_id) == mini.public_story
    assert changes[1].detail["person_id"] == mini.sister
    # the public story's earlier sync stays readable after its delete; nothing of the personal one
    assert any(c.action == "story_synced" and str(c.story_id) == mini.public_story for c in changes)
    assert all(str(c.story_id) != mini.personal_story for c in changes)
    everything = cur.curation.changes(legacy)
    assert any(c.action == "story_deleted" and str(c.story_id) == mini.personal_story for c in everything)


def test_stage_then_approve_makes_an_entity_retrievable_by_the_context_workflow(staged, unhurried_names):
    from heirloom.contracts.context import ContextRequest, Intent
    from tests.support import pipeline
    from tests.support.services import context_services

    ports, mini, cur = staged
    request = ContextRequest(
        legacy_id=mini.legacy,
        user_id=mini.creator,
        persona="biographer",
        query="Tell me about the apple trees.",
    )

    def graph_entities() -> set[str]:
        # a new container each time: the gazetteer is cached per container (GAZETTEER_TTL_S)
        services = context_services(ports)
        out = pipeline.assemble(services, request, Intent.ENTITY_FOCUSED)
        return {str(h.get("entity")) for h in out["graph_results"]} | {
            str(h.get("via")) for h in out["graph_results"]
        }

    assert "apple trees" not in graph_entities()  # staged: the graph cannot find it
    curation_api.decide_for(
        cur, UUID(mini.legacy), UUID(mini.creator), item(cur, mini, "apple trees").id, True
    )
    assert "apple trees" in graph_entities()
