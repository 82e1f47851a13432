"""Entity graph sync on FalkorDB: every fact carries exactly the stories that support it;
edits replace a story's contributions; deletes withdraw them; replays change nothing."""

import dataclasses
import uuid
from datetime import timedelta

import pytest

from heirloom.contracts.extraction import (
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPerson,
    ExtractedPlace,
    ExtractedRelationship,
    TimeReference,
)
from heirloom.contracts.records import LinkStatus
from heirloom.domain import ingestion
from heirloom.domain.intent_step import build_gazetteer
from heirloom_dev.loader import load_dataset, read_dataset
from tests.support.dataset import MiniDataset


class ScriptedExtractor:
    """An EntityExtractor that answers from a table keyed by a word of the text."""

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def extract(self, text, *, known_names=()):
        self.calls += 1
        for word, entities in self.table.items():
            if word in text:
                return entities
        return ExtractedEntities()


ORCHARD = ExtractedEntities(
    people=(ExtractedPerson(name="Ada", confidence=0.9), ExtractedPerson(name="Mr. Quill", confidence=0.9)),
    places=(ExtractedPlace(name="the river orchard", type="other", confidence=0.9),),
    events=(ExtractedEvent(name="cider pressing", type="other", date="1950s", confidence=0.85),),
    objects=(ExtractedObject(name="cider press", type="other", confidence=0.4),),  # below threshold
    time_references=(TimeReference(period="1950s", context="autumns"),),
    relationships=(
        ExtractedRelationship(
            subject="Ada", predicate="PARTICIPATED_IN", object="cider pressing", confidence=0.9
        ),
    ),
)
ILLNESS = ExtractedEntities(
    people=(ExtractedPerson(name="Ada Marsh", confidence=0.95),),
    places=(ExtractedPlace(name="the river orchard", type="other", confidence=0.9),
            ExtractedPlace(name="County Hospital", type="other", confidence=0.9)),
    relationships=(ExtractedRelationship(subject="Ada Marsh", predicate="LIVED_IN", object="County Hospital",
                                         confidence=0.9),),
)  # fmt: skip


@pytest.fixture
def loaded(ports, tmp_path):
    mini = MiniDataset()
    extractor = ScriptedExtractor({"orchard": ORCHARD, "cider": ORCHARD, "illness": ILLNESS, "sick": ILLNESS})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1")
    load_dataset(p, mini.write(tmp_path / "ds"))
    return p, mini, extractor


def facts(graph):
    """Every extracted node and edge with its provenance, by name: an entity's stories are the
    stories pointing at it, a story's edge is its own, a person -> entity fact has one edge per
    supporting story (`story_id`)."""
    nodes = graph.run(
        "MATCH (e) WHERE e:Place OR e:Event OR e:Object "
        "OPTIONAL MATCH (s:Story)-[m]->(e) "
        "RETURN CASE WHEN e:Place THEN 'Place' WHEN e:Event THEN 'Event' ELSE 'Object' END AS label, "
        "e.name AS name, collect(s.id) AS story_ids"
    )
    edges = graph.run(
        "MATCH (a)-[r]->(b) WHERE r.kind IN ['MENTIONS', 'TOOK_PLACE_AT', 'REFERENCES', 'PARTICIPATED_IN', 'LIVED_IN'] "
        "RETURN coalesce(a.title, a.name) AS a, r.kind AS kind, b.name AS b, "
        "collect(coalesce(r.story_id, a.id)) AS story_ids"
    )
    return (
        {(n["label"], n["name"]): sorted(n["story_ids"]) for n in nodes},
        {(e["a"], e["kind"], e["b"]): sorted(e["story_ids"]) for e in edges},
    )


def _record(mini, story_id, tmp_path):
    """The mini dataset's story record `story_id`, as the loader reads it."""
    return next(
        s.record for s in read_dataset(mini.write(tmp_path / "x")).stories if str(s.record.id) == story_id
    )


def test_facts_carry_their_supporting_stories(loaded):
    ports, mini, _ = loaded
    nodes, edges = facts(ports.graph)
    pub, priv = mini.public_story, mini.private_story
    assert nodes == {
        ("Place", "river orchard"): sorted([pub, priv, mini.personal_story]),
        ("Event", "cider pressing"): sorted([pub, mini.personal_story]),
        ("Place", "County Hospital"): [priv],
    }
    # a fact supported only by the private story carries only that story's id
    assert edges[("Ada Marsh", "LIVED_IN", "County Hospital")] == [priv]
    assert edges[("The long illness", "MENTIONS", "Ada Marsh")] == [priv]
    assert edges[("Ada Marsh", "PARTICIPATED_IN", "cider pressing")] == sorted([pub, mini.personal_story])
    unresolved = ports.graph.run("MATCH (s:Story {id: $id}) RETURN s.unresolved_people AS u, s.years AS y",
                                 {"id": pub})  # fmt: skip
    assert unresolved[0]["u"] == "Mr. Quill" and unresolved[0]["y"].startswith("|1950|")


def test_edit_replaces_exactly_the_story_contributions(loaded, tmp_path):
    ports, mini, extractor = loaded
    before = facts(ports.graph)
    story = _record(mini, mini.private_story, tmp_path)
    # an edit carries a newer updated_at (at an equal one the order of versions is fixed, not the last)
    later = story.updated_at + timedelta(hours=1)
    edited = story.model_copy(
        update={"content": "Ada was sick for a while, then recovered.", "updated_at": later}
    )
    ingestion.apply_story(ports, edited)
    nodes, edges = facts(ports.graph)
    assert ("Place", "County Hospital") in nodes  # still supported by the edited text (same entities)
    # an edit whose text no longer yields the hospital withdraws it
    extractor.table["sick"] = ExtractedEntities()
    again = {"content": "Ada was sick, nothing more.", "updated_at": later + timedelta(hours=1)}
    ingestion.apply_story(ports, edited.model_copy(update=again))
    nodes, edges = facts(ports.graph)
    assert ("Place", "County Hospital") not in nodes
    assert ("Ada Marsh", "LIVED_IN", "County Hospital") not in edges
    assert nodes[("Place", "river orchard")] == sorted([mini.public_story, mini.personal_story])
    assert (
        before[1][("Ada Marsh", "PARTICIPATED_IN", "cider pressing")]
        == edges[("Ada Marsh", "PARTICIPATED_IN", "cider pressing")]
    )


def test_delete_withdraws_only_what_the_story_alone_supported(loaded):
    ports, mini, _ = loaded
    ingestion.delete_story(ports, mini.private_story)
    nodes, edges = facts(ports.graph)
    assert ("Place", "County Hospital") not in nodes
    assert mini.private_story not in nodes[("Place", "river orchard")]
    assert edges and all(mini.private_story not in ids for ids in edges.values())
    assert ports.graph.run("MATCH (s:Story {id: $id}) RETURN s", {"id": mini.private_story}) == []
    assert (
        ports.stories.get_story(mini.private_story) is None
        and ports.vectors.chunks_of(mini.private_story) == []
    )


def test_replay_is_idempotent_and_skips_extraction(loaded, tmp_path):
    ports, mini, extractor = loaded
    before, calls = facts(ports.graph), extractor.calls
    load_dataset(ports, mini.write(tmp_path / "again"))
    assert facts(ports.graph) == before
    assert extractor.calls == calls  # content hash and extractor version unchanged: nothing re-extracted
    bumped = dataclasses.replace(ports, extractor_version="scripted-2")
    load_dataset(bumped, mini.write(tmp_path / "again2"))
    assert extractor.calls == calls + 4 and facts(ports.graph) == before


def test_a_lost_graph_is_rebuilt_by_the_next_load(loaded, tmp_path):
    """The graph store restarting empty (or from an older snapshot) while PostgreSQL keeps its
    sync marks: the local runtime notices, unmarks, and a reload rebuilds the same facts."""
    from heirloom_dev.runtime import repair_lost_graph

    ports, mini, extractor = loaded
    before, calls = facts(ports.graph), extractor.calls
    assert not repair_lost_graph(ports)  # in step: the marks stay
    ports.graph.delete_all()
    with pytest.warns(UserWarning, match="lost data"):
        assert repair_lost_graph(ports)
    assert ports.stories.graph_synced_count() == 0
    load_dataset(ports, mini.write(tmp_path / "again"))
    assert facts(ports.graph) == before
    assert extractor.calls > calls and ports.stories.graph_synced_count() > 0
    assert not repair_lost_graph(ports)


def test_a_weak_place_the_title_names_reaches_the_graph(loaded, tmp_path):
    """Ingestion hands the story's title to the shared rules: a place guessed below the
    threshold is written when the title names it, and only then."""
    ports, mini, _ = loaded
    guesses = ExtractedEntities(
        places=(
            ExtractedPlace(name="Quarry Glen", type="workplace", confidence=0.6),
            ExtractedPlace(name="Fenwick Row", type="workplace", confidence=0.6),
        )
    )
    p = _edit_extracted_as(
        ports, mini, tmp_path, guesses, "Summers at Quarry Glen",
        "Ada spent her summers at the glen, and wrote to Fenwick Row.",
    )  # fmt: skip
    nodes, _ = facts(p.graph)
    assert nodes[("Place", "Quarry Glen")] == [mini.public_story]
    assert ("Place", "Fenwick Row") not in nodes


def test_a_title_only_edit_re_extracts_the_title_marks_and_the_title_named_place(loaded, tmp_path):
    """The title is part of what the graph is built from (decision 0029): an edit of the title
    alone (content unchanged) re-extracts the story, so the place it names now is `in_title`
    and a weak place it now names is written; the same version again extracts nothing."""
    ports, mini, _ = loaded
    guesses = ExtractedEntities(
        places=(
            ExtractedPlace(name="Quarry Glen", type="workplace", confidence=0.6),
            ExtractedPlace(name="the river orchard", type="other", confidence=0.9),
        )
    )
    extractor = ScriptedExtractor({"glen": guesses})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-3")
    story = _record(mini, mini.public_story, tmp_path)
    first = story.model_copy(
        update={
            "title": "Summers",
            "content": "Ada spent her summers at the glen by the river orchard.",
            "updated_at": story.updated_at + timedelta(hours=1),
        }
    )
    ingestion.apply_story(p, first)
    nodes, _ = facts(p.graph)
    assert ("Place", "Quarry Glen") not in nodes
    assert title_marks(p.graph, mini.public_story) == {"river orchard": False}
    retitled = first.model_copy(
        update={
            "title": "Quarry Glen and the river orchard",
            "updated_at": first.updated_at + timedelta(hours=1),
        }
    )
    calls = extractor.calls
    ingestion.apply_story(p, retitled)
    assert extractor.calls == calls + 1
    nodes, _ = facts(p.graph)
    assert nodes[("Place", "Quarry Glen")] == [mini.public_story]
    assert title_marks(p.graph, mini.public_story) == {"river orchard": True, "Quarry Glen": True}
    ingestion.apply_story(p, retitled)  # a redelivery: up to date
    assert extractor.calls == calls + 1


def test_a_known_persons_name_is_written_as_no_place(loaded, tmp_path):
    """Ingestion gives extraction the legacy's persons and aliases; a place named as one of them
    (an extractor's mistake) is not written, whether confident or lifted by the title (0031)."""
    ports, mini, _ = loaded
    mistaken = ExtractedEntities(
        places=(
            ExtractedPlace(name="Nana Ada", type="locality", confidence=0.85),  # Ada Marsh's alias
            ExtractedPlace(name="Ada Marsh's", type="workplace", confidence=0.6),  # the title names it
            ExtractedPlace(name="Quarry Glen", type="landmark", confidence=0.85),
        )
    )
    p = _edit_extracted_as(
        ports, mini, tmp_path, mistaken, "Summers at Ada Marsh's", "Nana Ada spent her summers at the glen."
    )
    nodes, _ = facts(p.graph)
    assert nodes[("Place", "Quarry Glen")] == [mini.public_story]
    assert not {("Place", "Nana Ada"), ("Place", "Ada Marsh's"), ("Place", "Ada Marsh")} & set(nodes)


class NamesSeen(ScriptedExtractor):
    """A ScriptedExtractor that keeps the known names of its last call."""

    def extract(self, text, *, known_names=()):
        self.known = set(known_names)
        return super().extract(text, known_names=known_names)


def test_extraction_knows_the_people_of_actively_linked_legacies(loaded, tmp_path):
    """A story of Ivy's legacy that names Ada (whose record is in the legacy linked to it) has her
    names as people's: a place read as "Nana Ada" is not written. A revoked link gives nothing."""
    ports, mini, _ = loaded
    names = (("Nana Ada", "locality"), ("Quarry Glen", "landmark"))
    mistaken = ExtractedEntities(
        places=tuple(ExtractedPlace(name=n, type=t, confidence=0.85) for n, t in names)
    )
    extractor = NamesSeen({"glen": mistaken})
    edit = {"story_id": mini.linked_story, "extractor": extractor}
    p = _edit_extracted_as(
        ports, mini, tmp_path, mistaken, "Ivy at sea", "Nana Ada came to the glen.", **edit
    )
    assert {"Ada Marsh", "Nana Ada", "Ivy Marsh"} <= extractor.known
    nodes, _ = facts(p.graph)
    assert nodes[("Place", "Quarry Glen")] == [mini.linked_story]
    assert ("Place", "Nana Ada") not in nodes

    link = read_dataset(mini.write(tmp_path / "y")).links[0].record
    ingestion.apply_link(p, link.model_copy(update={"status": LinkStatus.REVOKED}))
    _edit_extracted_as(
        ports, mini, tmp_path, mistaken, "Ivy at sea", "Nana Ada came to the glen again.", hours=2, **edit
    )
    assert extractor.known == {"Ivy Marsh"}
    assert ("Place", "Nana Ada") in facts(p.graph)[0]


def _edit_extracted_as(
    ports, mini, tmp_path, entities, title, content, *, story_id=None, extractor=None, hours=1
):
    """A story of the mini dataset (the public one unless `story_id`) edited to `title` and
    `content`, `hours` after its stored version, and applied with an extractor that answers
    `entities` for it (`extractor`, else a ScriptedExtractor; a version of its own): the ports
    it was applied with."""
    extractor = extractor or ScriptedExtractor({"glen": entities})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version=f"scripted {title}")
    story = _record(mini, story_id or mini.public_story, tmp_path)
    edited = story.model_copy(
        update={"title": title, "content": content, "updated_at": story.updated_at + timedelta(hours=hours)}
    )
    ingestion.apply_story(p, edited)
    return p


def title_marks(graph, story_id):
    """The story's places and whether its edge to each is `in_title`."""
    rows = graph.run(
        "MATCH (s:Story {id: $id})-[r]->(x:Place) WHERE r.kind = 'TOOK_PLACE_AT' RETURN x.name AS x, r.in_title AS t",
        {"id": story_id},
    )
    return {r["x"]: r["t"] for r in rows}


def test_a_things_owner_named_two_ways_is_one_thing_each_story_in_its_words(
    loaded, tmp_path, unhurried_names
):
    """ "Nana Ada's quilt" and "Ada Marsh's quilt" are one Object when both owners resolve to
    Ada Marsh: keyed by her id and the thing, each story's edge keeps the name it wrote. An
    owner no person resolves ("Mr. Quill") keeps a thing of its own, and a story withdrawn takes
    only its own edge."""
    ports, mini, _ = loaded
    nana = ExtractedEntities(
        people=(ExtractedPerson(name="Nana Ada", confidence=0.9),),
        objects=(ExtractedObject(name="Nana Ada's quilt", type="textile", confidence=0.9),),
    )
    full = ExtractedEntities(
        people=(
            ExtractedPerson(name="Ada Marsh", confidence=0.95),
            ExtractedPerson(name="Mr. Quill", confidence=0.9),
        ),
        objects=(
            ExtractedObject(name="Ada Marsh's quilt", type="textile", confidence=0.9),
            ExtractedObject(name="Mr. Quill's quilt", type="textile", confidence=0.9),
        ),
    )
    p = dataclasses.replace(
        ports,
        extractor=ScriptedExtractor({"glen": nana, "stitched": full}),
        extractor_version="scripted owned",
    )
    for story_id, content in ((mini.public_story, "At the glen."), (mini.private_story, "She stitched it.")):
        story = _record(mini, story_id, tmp_path)
        ingestion.apply_story(
            p,
            story.model_copy(
                update={"content": content, "updated_at": story.updated_at + timedelta(hours=1)}
            ),
        )

    def quilts():
        rows = p.graph.run(
            "MATCH (s:Story)-[r:REFERENCES]->(o:Object) RETURN s.id AS sid, coalesce(r.name, o.name) AS written, o.id AS oid"
        )
        return {(r["sid"], r["written"]): r["oid"] for r in rows}

    got = quilts()
    assert set(got) == {
        (mini.public_story, "Nana Ada's quilt"),
        (mini.private_story, "Ada Marsh's quilt"),
        (mini.private_story, "Mr. Quill's quilt"),
    }
    assert got[(mini.public_story, "Nana Ada's quilt")] == got[(mini.private_story, "Ada Marsh's quilt")]
    assert got[(mini.private_story, "Mr. Quill's quilt")] != got[(mini.private_story, "Ada Marsh's quilt")]
    # a question may name the thing in either story's words
    gazetteer, _ = build_gazetteer(uuid.UUID(mini.legacy), p.stories, p.graph)
    for question in ("Who has Nana Ada's quilt now?", "Who has Ada Marsh's quilt now?"):
        found = {m.node_id for mention in gazetteer.find(question) for m in mention.matches()}
        assert got[(mini.private_story, "Ada Marsh's quilt")] in found, question

    ingestion.delete_story(p, mini.private_story)
    assert set(quilts()) == {(mini.public_story, "Nana Ada's quilt")}
