"""Curation on the embedded engines (FalkorDB, or the Neptune path with HEIRLOOM_GRAPH=
neptune-local): merge suggestions with their evidence, merge then unmerge restoring the exact
graph (every node, edge and property), keep-apart remembered, and what a merged entity lets a
user see."""

from __future__ import annotations

import dataclasses
from uuid import UUID

import pytest

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.contracts.curation import KeepApartBody, MergeBody
from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedFact,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
)
from heirloom.domain import curation_api
from heirloom.domain.entity_sync import entity_id, graph_fingerprints
from heirloom.domain.names import one_of_many
from heirloom.errors import AccessDenied, Conflict, InvalidRequest, NotFound
from heirloom_dev.loader import load_dataset
from tests.support.dataset import MiniDataset
from tests.support.snapshot import graph_state

pytestmark = pytest.mark.integration


class ScriptedExtractor:
    """Entities by a word of the story's text."""

    def __init__(self, table: dict[str, ExtractedEntities]):
        self.table = table

    def extract(self, text, *, known_names=()):
        return next((e for w, e in self.table.items() if w in text), ExtractedEntities())


def _obj(name: str) -> ExtractedObject:
    return ExtractedObject(name=name, type="other", confidence=0.9)


def _event(name: str) -> ExtractedEvent:
    return ExtractedEvent(name=name, type="other", confidence=0.9)


PUBLIC = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9),),
    places=(ExtractedPlace(name="the river orchard", type="other", confidence=0.9),),
    events=(_event("wedding"),),
    objects=(_obj("accordion"), _obj("cider press")),
    relationships=(
        ExtractedRelationship(subject="Ada", predicate="OWNED", object="accordion", confidence=0.9),
        ExtractedRelationship(subject="Ada", predicate="PARTICIPATED_IN", object="wedding", confidence=0.9),
    ),
)
PRIVATE = ExtractedEntities(
    people=(ExtractedPerson(name="Ada Marsh", confidence=0.95),),
    places=(ExtractedPlace(name="the river orchard", type="other", confidence=0.9),),
    events=(_event("Uncle Dommie's wedding"),),
    objects=(_obj("Papa Sal's accordion"), _obj("accordion")),
    relationships=(
        ExtractedRelationship(
            subject="Ada Marsh", predicate="OWNED", object="Papa Sal's accordion", confidence=0.9
        ),
        ExtractedRelationship(
            subject="Ada Marsh", predicate="PARTICIPATED_IN", object="Uncle Dommie's wedding", confidence=0.9
        ),
    ),
    facts=(
        ExtractedFact(
            source="Ada Marsh",
            relation="KEPT",
            target="Papa Sal's accordion",
            verb="kept",
            sentence="Ada Marsh kept Papa Sal's accordion by the bed.",
            confidence=0.9,
        ),
    ),
)
#: the admirer's personal story: only its author may read what it names
PERSONAL = ExtractedEntities(objects=(_obj("Kay's secret accordion"),))


@pytest.fixture
def world(ports, tmp_path):
    mini = MiniDataset()
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    return p, mini, curation_api.CurationPorts(p.graph, p.stories, curation)


def eid(mini: MiniDataset, label: str, name: str) -> str:
    """The node id of the entity the stories name so; "wedding" alone is the public story's own
    (decision 0041)."""
    return entity_id(mini.legacy, label, f"{mini.public_story}|{name}" if one_of_many(label, name) else name)


def test_suggestions_name_their_evidence_and_only_readable_things(world):
    _ports, mini, cur = world
    found = curation_api.suggestions_for(cur, UUID(mini.legacy), UUID(mini.creator))
    pairs = {(s.a.name, s.b.name): s for s in found}
    accordion = pairs[("Papa Sal's accordion", "accordion")]
    assert accordion.evidence[0] == "name contained: 'accordion' in \"papa sal's accordion\""
    assert "mentioned together in 1 stories" in accordion.evidence
    assert accordion.shared_story_ids == (UUID(mini.private_story),)
    assert ("Uncle Dommie's wedding", "wedding") in pairs
    # the admirer's personal story is not the creator's to read: its entity is never suggested
    assert not any("secret" in s.a.name + s.b.name for s in found)


def test_only_a_creator_or_admin_may_curate(world):
    _, mini, cur = world
    with pytest.raises(AccessDenied):
        curation_api.suggestions_for(cur, UUID(mini.legacy), UUID(mini.admirer))
    with pytest.raises(AccessDenied):
        body = MergeBody(
            survivor_id=eid(mini, "Object", "accordion"), absorbed_id=eid(mini, "Event", "wedding")
        )
        curation_api.merge_for(cur, UUID(mini.legacy), UUID(mini.admirer), body)


def test_merge_moves_edges_and_keeps_aliases_and_unmerge_restores_the_exact_graph(world):
    ports, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    survivor, absorbed = eid(mini, "Object", "accordion"), eid(mini, "Object", "Papa Sal's accordion")
    before = graph_state(ports.graph)
    marks_before = ports.stories.graph_fingerprints()

    result = curation_api.merge_for(cur, legacy, user, MergeBody(survivor_id=survivor, absorbed_id=absorbed))
    node = ports.graph.run("MATCH (o:Object {id: $id}) RETURN o.aliases AS aliases", {"id": survivor})
    assert node == [{"aliases": "Papa Sal's accordion"}]
    assert ports.graph.run("MATCH (o:Object {id: $id}) RETURN o.id AS id", {"id": absorbed}) == []
    owned = ports.graph.run(
        "MATCH (p:Person)-[r:OWNED]->(o:Object {id: $id}) RETURN r.story_id AS sid ORDER BY sid",
        {"id": survivor},
    )
    assert sorted(r["sid"] for r in owned) == sorted([mini.public_story, mini.private_story])
    # the fact edge moves too, with its sentence and provenance
    kept = ports.graph.run(
        "MATCH (p:Person)-[r:FACT]->(o:Object {id: $id}) RETURN r.story_id AS sid, r.sentence AS s, r.name AS n",
        {"id": survivor},
    )
    assert kept == [{"sid": mini.private_story, "s": "Ada Marsh kept Papa Sal's accordion by the bed.",
                     "n": "Papa Sal's accordion"}]  # fmt: skip
    assert result.moved_edges == 2  # OWNED and the KEPT fact from the private story (REFERENCES was there)
    # the moved stories' sync marks follow the graph (no "lost graph" on the next load)
    held = graph_fingerprints(ports.graph)
    assert {str(k): v for k, v in ports.stories.graph_fingerprints().items()} == held

    curation_api.unmerge_for(cur, legacy, user, result.merge_id)
    assert graph_state(ports.graph) == before
    assert ports.stories.graph_fingerprints() == marks_before
    with pytest.raises(Conflict):
        curation_api.unmerge_for(cur, legacy, user, result.merge_id)


def test_merges_undo_in_reverse_order_and_restore_the_graph(world):
    ports, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    before = graph_state(ports.graph)
    first = curation_api.merge_for(
        cur, legacy, user,
        MergeBody(survivor_id=eid(mini, "Object", "accordion"), absorbed_id=eid(mini, "Object", "Papa Sal's accordion")),
    )  # fmt: skip
    second = curation_api.merge_for(
        cur, legacy, user,
        MergeBody(survivor_id=eid(mini, "Event", "Uncle Dommie's wedding"), absorbed_id=eid(mini, "Event", "wedding")),
    )  # fmt: skip
    third = curation_api.merge_for(
        cur, legacy, user,
        MergeBody(survivor_id=eid(mini, "Object", "cider press"), absorbed_id=eid(mini, "Object", "accordion")),
    )  # fmt: skip
    with pytest.raises(Conflict):  # the accordion went into a later merge: undo that one first
        curation_api.unmerge_for(cur, legacy, user, first.merge_id)
    for done in (third, second, first):
        curation_api.unmerge_for(cur, legacy, user, done.merge_id)
    assert graph_state(ports.graph) == before


def test_a_merge_refuses_what_it_cannot_join(world):
    _, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    accordion = eid(mini, "Object", "accordion")
    with pytest.raises(InvalidRequest):
        curation_api.merge_for(cur, legacy, user, MergeBody(survivor_id=accordion, absorbed_id=accordion))
    with pytest.raises(InvalidRequest):
        body = MergeBody(survivor_id=accordion, absorbed_id=eid(mini, "Event", "wedding"))
        curation_api.merge_for(cur, legacy, user, body)
    with pytest.raises(NotFound):
        body = MergeBody(
            survivor_id=accordion, absorbed_id=entity_id(mini.other_legacy, "Object", "accordion")
        )
        curation_api.merge_for(cur, legacy, user, body)


def test_keep_apart_is_remembered(world):
    _, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    a, b = eid(mini, "Event", "wedding"), eid(mini, "Event", "Uncle Dommie's wedding")
    curation_api.keep_apart_for(cur, legacy, user, KeepApartBody(entity_a=a, entity_b=b))
    curation_api.keep_apart_for(cur, legacy, user, KeepApartBody(entity_a=b, entity_b=a))  # same pair
    names = {(s.a.name, s.b.name) for s in curation_api.suggestions_for(cur, legacy, user)}
    assert ("Uncle Dommie's wedding", "wedding") not in names
    assert ("Papa Sal's accordion", "accordion") in names
    # remembered in PostgreSQL: a new store over the same database sees it
    again = curation_api.CurationPorts(cur.graph, cur.stories, PgCurationStore(cur.stories.db))
    assert ("Uncle Dommie's wedding", "wedding") not in {
        (s.a.name, s.b.name) for s in curation_api.suggestions_for(again, legacy, user)
    }
    with pytest.raises(NotFound):
        body = KeepApartBody(entity_a=a, entity_b=entity_id(mini.other_legacy, "Event", "x"))
        curation_api.keep_apart_for(cur, legacy, user, body)


def test_a_story_extracted_again_after_a_merge_points_at_the_survivor(world, tmp_path):
    from datetime import timedelta

    from heirloom.domain import ingestion
    from heirloom_dev.loader import read_dataset

    ports, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    survivor, absorbed = eid(mini, "Object", "Papa Sal's accordion"), eid(mini, "Object", "accordion")
    curation_api.merge_for(cur, legacy, user, MergeBody(survivor_id=survivor, absorbed_id=absorbed))
    story = next(
        s.record
        for s in read_dataset(mini.write(tmp_path / "again")).stories
        if str(s.record.id) == mini.public_story
    )
    edited = story.model_copy(
        update={"content": story.content + " Again.", "updated_at": story.updated_at + timedelta(hours=1)}
    )
    ingestion.apply_story(ports, edited)  # extracts "accordion" again
    assert ports.graph.run("MATCH (o:Object {id: $id}) RETURN o.id AS id", {"id": absorbed}) == []
    edges = ports.graph.run(
        "MATCH (s:Story {id: $sid})-[r:REFERENCES]->(o:Object {id: $id}) RETURN r.name AS name",
        {"sid": mini.public_story, "id": survivor},
    )
    assert edges == [{"name": "accordion"}]  # the name the story uses, kept on its edge
    owned = ports.graph.run(
        "MATCH (:Person)-[r:OWNED {story_id: $sid}]->(o:Object {id: $id}) RETURN r.name AS name",
        {"sid": mini.public_story, "id": survivor},
    )
    assert owned == [{"name": "accordion"}]
    held = graph_fingerprints(ports.graph, story_ids=[mini.public_story])
    assert ports.stories.graph_fingerprints()[UUID(mini.public_story)] == held[mini.public_story]


def test_a_curator_cannot_merge_or_keep_apart_what_no_story_they_may_read_names(world):
    """Entity ids follow from names (entity_sync.entity_id): a curator must not learn from a
    merge or keep-apart whether an unreadable story (another member's personal one) names
    something, nor fold its entity into one everyone reads. It answers as a missing entity."""
    ports, mini, cur = world
    legacy, user = UUID(mini.legacy), UUID(mini.creator)
    secret, accordion = eid(mini, "Object", "Kay's secret accordion"), eid(mini, "Object", "accordion")
    missing = eid(mini, "Object", "no such thing")
    before = graph_state(ports.graph)
    answers = []
    for guess in (secret, missing):
        for call in (
            lambda g: curation_api.merge_for(
                cur, legacy, user, MergeBody(survivor_id=accordion, absorbed_id=g)
            ),
            lambda g: curation_api.merge_for(
                cur, legacy, user, MergeBody(survivor_id=g, absorbed_id=accordion)
            ),
            lambda g: curation_api.keep_apart_for(
                cur, legacy, user, KeepApartBody(entity_a=g, entity_b=accordion)
            ),
        ):
            with pytest.raises(NotFound) as refused:
                call(guess)
            answers.append(str(refused.value).replace(guess, "<id>"))
    assert answers[:3] == answers[3:]  # the secret one reads exactly as one that does not exist
    assert graph_state(ports.graph) == before and cur.curation.kept_apart(legacy) == set()


def test_suggestion_evidence_names_no_person_only_an_unreadable_story_ties_to_the_pair(ports, tmp_path):
    """The admirer's personal story says Ivy Marsh owned both accordions: the creator may not
    read it, so Ivy is no "shared people" evidence of the pair the creator is shown."""
    mini = MiniDataset()
    bert = ExtractedEntities(
        people=(ExtractedPerson(name="Ivy Marsh", confidence=0.9),),
        objects=(_obj("accordion"), _obj("Papa Sal's accordion")),
        relationships=tuple(
            ExtractedRelationship(subject="Ivy Marsh", predicate="OWNED", object=o, confidence=0.9)
            for o in ("accordion", "Papa Sal's accordion")
        ),
    )
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": bert})
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    cur = curation_api.CurationPorts(p.graph, p.stories, curation)
    # Ivy is tied to both in the graph (the personal story's OWNED edges)
    owners = p.graph.run(
        "MATCH (p:Person)-[r:OWNED]->(o:Object) WHERE o.legacy_id = $l RETURN p.name AS name",
        {"l": mini.legacy},
    )
    assert {r["name"] for r in owners} >= {"Ivy Marsh"}
    found = curation_api.suggestions_for(cur, UUID(mini.legacy), UUID(mini.creator))
    pair = next(s for s in found if {s.a.name, s.b.name} == {"Papa Sal's accordion", "accordion"})
    assert not any("Ivy" in e for e in pair.evidence), pair.evidence


def test_a_curator_learns_nothing_of_another_curators_merge_of_what_only_they_may_read(ports, tmp_path):
    """Found by an access audit. The admirer, made an admin here, merges the thing only her
    personal story names into the public "accordion". The creator may not read that story: the
    merged name is no alias in their suggestions, the merge is not in their changelog, and
    undoing it reads as a merge that does not exist. Its author still sees and undoes it."""
    mini = MiniDataset()
    files = mini.files()
    members = [
        {**m, "role": "admin"} if m["user_id"] == mini.admirer and m["legacy_id"] == mini.legacy else m
        for m in files["members"]
    ]
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds", {"members": members}))
    cur = curation_api.CurationPorts(p.graph, p.stories, curation)
    legacy, kay, tom = UUID(mini.legacy), UUID(mini.admirer), UUID(mini.creator)
    secret, accordion = eid(mini, "Object", "Kay's secret accordion"), eid(mini, "Object", "accordion")

    done = curation_api.merge_for(cur, legacy, kay, MergeBody(survivor_id=accordion, absorbed_id=secret))
    aliases = {
        a for s in curation_api.suggestions_for(cur, legacy, tom) for r in (s.a, s.b) for a in r.aliases
    }
    assert not any("secret" in a for a in aliases)
    shown = {r.name: r.aliases for s in curation_api.suggestions_for(cur, legacy, kay) for r in (s.a, s.b)}
    assert shown["accordion"] == ("Kay's secret accordion",)  # to the one who may read it

    def merges(user):
        return [c for c in curation_api.changelog_for(cur, legacy, user).changes if c.action == "merge"]

    assert merges(tom) == [] and [c.detail["merge_id"] for c in merges(kay)] == [str(done.merge_id)]
    unknown = UUID(int=7)
    answers = []
    for merge_id in (done.merge_id, unknown):
        with pytest.raises(NotFound) as refused:
            curation_api.unmerge_for(cur, legacy, tom, merge_id)
        answers.append(str(refused.value).replace(str(merge_id), "<id>"))
    assert answers[0] == answers[1]
    assert curation_api.unmerge_for(cur, legacy, kay, done.merge_id).unmerged
