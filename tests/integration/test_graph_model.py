"""The graph model Neptune accepts (docs/decisions/0007): no list or map property anywhere,
provenance as edges, per-story fingerprints for the lost-graph repair, moves and relinks that
rewrite their structural edges, and a rebuild that gives the graph of a clean load."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.contracts.extraction import ExtractedEntities
from heirloom.contracts.ingestion import BackfillRequest
from heirloom.contracts.records import Legacy
from heirloom.domain import ingestion, story_graph
from heirloom.domain.entity_sync import graph_fingerprints, sync_story_entities
from heirloom.domain.graph_queries import TEMPLATES
from heirloom.domain.graph_rebuild import rebuild_graph
from heirloom.domain.graph_schema import NODE_LABELS
from heirloom.domain.ingestion import IngestionPorts
from heirloom.ports import GraphStore
from heirloom.steps.backfill_plan import plan_backfill
from heirloom_dev.loader import load_dataset, read_dataset
from heirloom_dev.runtime import repair_lost_graph
from tests.integration.test_entity_sync import ILLNESS, ORCHARD, ScriptedExtractor, facts
from tests.support.dataset import MiniDataset
from tests.support.neptune import new_neptune_graph
from tests.support.sample import SAMPLE, fresh_ports
from tests.support.snapshot import assert_same_state, snapshot

DEV_LEGACY = Path("/work/shared/eval/dev-legacy")
if not DEV_LEGACY.is_dir():
    DEV_LEGACY = Path(__file__).parents[3] / "shared" / "eval" / "dev-legacy"


def non_scalar_properties(graph: GraphStore) -> tuple[list[str], int, int]:
    """Every node and edge of the store's prefix (each edge from its source's label) whose
    properties hold a list or a map; and how many nodes and edges were walked."""
    bad: list[str] = []
    nodes = edges = 0
    for label in sorted(NODE_LABELS):
        for row in graph.run(f"MATCH (n:{label}) RETURN n"):
            nodes += 1
            bad += [f"{label}.{k} = {v!r}" for k, v in row["n"].items()
                    if not k.startswith("_") and isinstance(v, list | tuple | dict)]  # fmt: skip
        for row in graph.run(f"MATCH (n:{label})-[r]->() RETURN r"):
            edges += 1
            bad += [f"{row['r'].get('_type')}.{k} = {v!r}" for k, v in row["r"].items()
                    if not k.startswith("_") and isinstance(v, list | tuple | dict)]  # fmt: skip
    return bad, nodes, edges


@pytest.fixture(params=["falkordb", "neptune-local"])
def engine_ports(request, local_stack) -> Iterator[IngestionPorts]:
    """Fresh ports with spaCy extraction, the graph on FalkorDB or behind the local Neptune
    openCypher server (the Neptune adapter over HTTP)."""
    with fresh_ports(local_stack, embedder=HashingEmbedder(64), name="shape") as ports:
        if request.param == "falkordb":
            yield ports
        else:
            server = request.getfixturevalue("neptune_server")
            graph = new_neptune_graph(server)
            try:
                yield dataclasses.replace(ports, graph=graph)
            finally:
                graph.delete_all()


@pytest.mark.parametrize("dataset", [SAMPLE, DEV_LEGACY], ids=["sample-legacy", "dev-legacy"])
def test_no_property_written_is_a_list_or_a_map(engine_ports, dataset):
    if not dataset.is_dir():
        pytest.skip(f"{dataset} is not here")
    load_dataset(engine_ports, dataset)
    bad, nodes, edges = non_scalar_properties(engine_ports.graph)
    assert bad == []
    assert nodes > 50 and edges > 100  # the walk saw the loaded graph
    counts = engine_ports.graph.count_nodes()
    assert nodes == sum(counts.values())
    assert engine_ports.graph.run("MATCH (p:Person)-[r:LIVED_IN|WORKED_AT|PARTICIPATED_IN|OWNED]->() "
                                  "RETURN count(r) AS n")[0]["n"] > 0  # fmt: skip


# -- provenance as edges on a scripted world ------------------------------------------------------
@pytest.fixture
def mini(local_stack, tmp_path) -> Iterator[tuple[IngestionPorts, MiniDataset, ScriptedExtractor, Path]]:
    world = MiniDataset()
    extractor = ScriptedExtractor({"orchard": ORCHARD, "cider": ORCHARD, "illness": ILLNESS, "sick": ILLNESS})
    with fresh_ports(local_stack, embedder=HashingEmbedder(64), extract=False, name="gm") as ports:
        scripted = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1")
        root = world.write(tmp_path / "ds")
        load_dataset(scripted, root)
        yield scripted, world, extractor, root


def _story(root: Path, sid: str) -> Any:
    return next(s.record for s in read_dataset(root).stories if str(s.record.id) == sid)


def _later(story: Any, **update: Any) -> Any:
    """A newer version of `story` with `update` applied."""
    return story.model_copy(update={"updated_at": story.updated_at + timedelta(hours=1), **update})


def test_a_fact_is_one_edge_per_supporting_story_and_reads_back_as_one_fact(mini):
    ports, world, _, _ = mini
    edges = ports.graph.run(
        "MATCH (p:Person)-[r:PARTICIPATED_IN]->(e:Event) RETURN p.name AS p, e.name AS e, r.story_id AS sid"
    )
    assert sorted(r["sid"] for r in edges) == sorted([world.public_story, world.personal_story])
    rows = ports.graph.run(
        TEMPLATES["facts"], {"person_ids": [world.subject], "subject_id": world.subject, "limit": 20}
    )
    pressing = [r for r in rows if r["predicate"] == "PARTICIPATED_IN"]
    assert len(pressing) == 1
    assert sorted(pressing[0]["story_ids"]) == sorted([world.public_story, world.personal_story])
    # deleting one supporting story removes exactly its edge; the fact stays, backed by the other
    ingestion.delete_story(ports, uuid.UUID(world.public_story))
    rows = ports.graph.run(
        TEMPLATES["facts"], {"person_ids": [world.subject], "subject_id": world.subject, "limit": 20}
    )
    assert [r["story_ids"] for r in rows if r["predicate"] == "PARTICIPATED_IN"] == [[world.personal_story]]


def test_a_fact_removed_by_an_edit_that_a_crash_brings_back_is_repaired(mini):
    """FalkorDB restarts from a snapshot taken before an edit that removed a fact: the graph
    holds the old version's facts while PostgreSQL marks the new one as synced. Story counts
    agree; the per-story fingerprint does not, so the next load rebuilds that story."""
    ports, world, extractor, root = mini
    old = _story(root, world.private_story)
    extractor.table["sick"] = ExtractedEntities()
    ingestion.apply_story(ports, _later(old, content="Ada was sick, nothing more."))
    assert ("Place", "County Hospital") not in facts(ports.graph)[0]
    assert not repair_lost_graph(ports)  # in step
    # the snapshot's graph: the old version's contribution written back, the marks untouched
    known = ports.stories.persons_of([old.legacy_id])
    mentions, unresolved = story_graph.resolve_mentions(ports, old, ILLNESS, known)
    sync_story_entities(ports.graph, old, ILLNESS, mentions, unresolved)
    assert ("Place", "County Hospital") in facts(ports.graph)[0]
    with pytest.warns(UserWarning, match="lost data"):
        assert repair_lost_graph(ports)
    assert ports.stories.graph_synced(uuid.UUID(world.private_story)) is None
    assert ports.stories.graph_synced(uuid.UUID(world.public_story)) is not None  # only that story
    # backfill planning now sees the story as behind (it said "nothing to do" before)
    page = plan_backfill(ports, BackfillRequest(after=None, page_size=50))
    assert page.story_ids == (uuid.UUID(world.private_story),)
    ingestion.apply_story(ports, _later(old, content="Ada was sick, nothing more."))
    nodes, edges = facts(ports.graph)
    assert ("Place", "County Hospital") not in nodes
    assert ("Ada Marsh", "LIVED_IN", "County Hospital") not in edges
    assert not repair_lost_graph(ports)


def test_a_story_moved_to_another_legacy_has_its_edge_and_entities_moved(mini):
    ports, world, _, root = mini
    story = _story(root, world.private_story)
    ingestion.apply_story(ports, _later(story, legacy_id=uuid.UUID(world.other_legacy)), may_move=True)
    legacies = ports.graph.run(
        "MATCH (s:Story {id: $id})-[r:BELONGS_TO]->(l:Legacy) RETURN l.id AS l", {"id": world.private_story}
    )
    assert [r["l"] for r in legacies] == [world.other_legacy]
    scoped = ports.graph.run(
        "MATCH (s:Story {id: $id})-[r]->(e) WHERE e:Place OR e:Event OR e:Object RETURN e.name AS name, e.legacy_id AS l",
        {"id": world.private_story},
    )
    assert {r["name"] for r in scoped} == {"river orchard", "County Hospital"}
    assert {r["l"] for r in scoped} == {world.other_legacy}
    # the old legacy keeps only what its own stories support
    hospital = ports.graph.run("MATCH (e:Place) WHERE e.name = 'County Hospital' RETURN e.legacy_id AS l")
    assert [r["l"] for r in hospital] == [world.other_legacy]
    assert not repair_lost_graph(ports)


def test_a_person_moved_to_another_legacy_belongs_to_it_only(mini):
    ports, world, _, root = mini
    person = next(p.record for p in read_dataset(root).persons if str(p.record.id) == world.sister)
    ingestion.apply_person(ports, person.model_copy(update={"legacy_id": uuid.UUID(world.other_legacy)}))
    rows = ports.graph.run(
        "MATCH (p:Person {id: $id})-[:BELONGS_TO]->(l:Legacy) RETURN l.id AS l, p.legacy_id AS pl",
        {"id": world.sister},
    )
    assert rows == [{"l": world.other_legacy, "pl": world.other_legacy}]


def test_a_link_between_other_legacies_rewrites_its_edge(mini):
    ports, _, _, root = mini
    third = Legacy(id=uuid.uuid4(), name="Third Legacy", subject_person_id=uuid.uuid4())
    ingestion.apply_legacy(ports, third)
    link = read_dataset(root).links[0].record
    ingestion.apply_link(ports, link.model_copy(update={"legacy_b_id": third.id}))
    rows = ports.graph.run(
        "MATCH (a:Legacy)-[r:LINKED_TO]->(b:Legacy) WHERE r.link_id = $id RETURN a.id AS a, b.id AS b",
        {"id": str(link.id)},
    )
    assert rows == [{"a": str(link.legacy_a_id), "b": str(third.id)}]


def test_rebuild_gives_the_graph_of_a_clean_load_and_a_second_rebuild_changes_nothing(mini):
    ports, world, _, _ = mini
    clean = snapshot(ports.stories.db, ports.graph)  # type: ignore[attr-defined]
    legacies = [uuid.UUID(world.legacy), uuid.UUID(world.other_legacy)]
    report = rebuild_graph(ports, legacies)
    assert report.stories == 4 and report.enriched == 4
    assert_same_state(snapshot(ports.stories.db, ports.graph), clean)  # type: ignore[attr-defined]
    rebuild_graph(ports, legacies)
    assert_same_state(snapshot(ports.stories.db, ports.graph), clean)  # type: ignore[attr-defined]
    assert set(graph_fingerprints(ports.graph)) == {
        world.public_story,
        world.private_story,
        world.personal_story,
        world.linked_story,
    }
