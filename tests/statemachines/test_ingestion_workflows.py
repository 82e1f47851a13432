"""ingest_story and backfill ASL in moto's interpreter with the real handlers on the embedded
engines: the graph and index end in step with PostgreSQL; a second backfill does nothing;
a failing step is recorded for replay."""

import dataclasses
import uuid
from datetime import timedelta

import pytest

from heirloom.contracts.extraction import ExtractedEntities, ExtractedPlace
from heirloom.contracts.ingestion import BackfillRequest
from heirloom.domain import graph_sync
from heirloom.domain.chunking import content_hash, story_digest
from heirloom.domain.ingestion import apply_story, story_behind
from heirloom.domain.story_index import index_key
from heirloom.steps.backfill_plan import plan_backfill
from heirloom_dev.loader import read_dataset
from heirloom_dev.workflow import LocalWorkflows
from tests.support.dataset import MiniDataset
from tests.support.services import services_with


class PlaceExtractor:
    version = "places-1"

    def extract(self, text, *, known_names=()):
        places = [ExtractedPlace(name=w.strip(".,"), type="other", confidence=0.9) for w in text.split()
                  if w[:1].isupper() and len(w) > 3]  # fmt: skip
        return ExtractedEntities(places=tuple(places[:3]), extractor_version=self.version)


def store_unprocessed(ports, folder, extra_stories: int = 0):
    """The mini dataset (plus `extra_stories` copies of its first story under new ids) in
    PostgreSQL and the structural graph, nothing indexed or extracted yet; the ports extract
    places."""
    ds = read_dataset(MiniDataset().write(folder))
    p = dataclasses.replace(ports, extractor=PlaceExtractor(), extractor_version="places-1")
    for item in ds.legacies + ds.persons + ds.users:
        kind = type(item.record).__name__
        {"Legacy": p.stories.upsert_legacy, "Person": p.stories.upsert_person, "User": p.stories.upsert_user}[
            kind
        ](item.record)
    stories = [i.record for i in ds.stories]
    stories += [stories[0].model_copy(update={"id": uuid.uuid4()}) for _ in range(extra_stories)]
    for story in stories:
        p.stories.upsert_story(story, content_hash(story.content))
        graph_sync.sync_story(p.graph, story)
    return p, stories


@pytest.fixture
def stored_only(ports, tmp_path):
    """The mini dataset in PostgreSQL and the structural graph, nothing indexed or extracted yet."""
    return store_unprocessed(ports, tmp_path / "ds")


def test_ingest_story_indexes_extracts_and_syncs(stored_only):
    ports, stories = stored_only
    story = stories[0]
    with LocalWorkflows(services=services_with(ingestion=ports, stories=ports.stories)).start() as wf:
        ex = wf.run("ingest_story", {"story_id": str(story.id)})
    assert ex.status == "SUCCEEDED", ex.cause
    assert ex.output["graph"] == {"status": "synced"}
    assert len(ports.vectors.chunks_of(story.id)) == 2
    assert ports.stories.graph_synced(story.id) == (story_digest(story.title, story.content), "places-1")


def test_backfill_processes_everything_once_then_nothing(stored_only):
    ports, stories = stored_only
    with LocalWorkflows(services=services_with(ingestion=ports, stories=ports.stories)).start() as wf:
        first = wf.run("backfill", {"next": {"after": None, "page_size": 3}, "pace_seconds": 0})
        assert first.status == "SUCCEEDED", first.cause
        assert all(ports.stories.graph_synced(s.id) for s in stories)
        assert all(ports.vectors.chunks_of(s.id) for s in stories)
        calls = len(wf.invocations)
        second = wf.run("backfill", {"next": {"after": None, "page_size": 3}, "pace_seconds": 0})
        assert second.status == "SUCCEEDED"
        assert wf.invocations[calls:] == ["BackfillPlan"]  # one empty page, no ingestion


def test_a_failing_step_is_recorded_for_replay(stored_only):
    ports, stories = stored_only

    def broken(event, context):
        raise RuntimeError("embedding service down")

    services = services_with(ingestion=ports, stories=ports.stories)
    with LocalWorkflows({"ChunkEmbed": broken}, services=services).start() as wf:
        ex = wf.run("ingest_story", {"story_id": str(stories[1].id)})
    assert ex.status == "FAILED" and ex.error == "IngestionFailed"
    rows = ports.stories.db.connection().execute("SELECT story_id, error FROM ingest_failures").fetchall()
    assert [(r["story_id"], r["error"]) for r in rows] == [(stories[1].id, "RuntimeError")]
    with LocalWorkflows(services=services).start() as wf:  # replay: the story is still behind
        assert wf.run("ingest_story", {"story_id": str(stories[1].id)}).status == "SUCCEEDED"
    assert ports.vectors.chunks_of(stories[1].id)


def _place_marks(ports, story_id):
    """The story's places and whether its edge to each is `in_title`."""
    rows = ports.graph.run(
        "MATCH (s:Story {id: $id})-[r:TOOK_PLACE_AT]->(x:Place) RETURN x.name AS x, r.in_title AS t",
        {"id": str(story_id)},
    )
    return {r["x"]: r["t"] for r in rows}


def test_a_title_only_edit_is_planned_and_re_extracted_and_re_embedded_once(stored_only):
    """The title is part of what the index and graph are built from (decision 0029): an edit
    of the title alone puts the story behind, the backfill plans it (and only it), the ingest
    workflow re-embeds it (chunks embed the title) and re-extracts it (its `in_title` marks
    follow the new title); then nothing is behind."""

    ports, stories = stored_only
    services = services_with(ingestion=ports, stories=ports.stories)
    with LocalWorkflows(services=services).start() as wf:
        assert (
            wf.run("backfill", {"next": {"after": None, "page_size": 3}, "pace_seconds": 0}).status
            == "SUCCEEDED"
        )
    story = stories[0]
    place = next(x for x, in_title in _place_marks(ports, story.id).items() if not in_title)
    assert ports.vectors.indexed_hash(story.id) == index_key(
        story_digest(story.title, story.content), ports.chunk_max_tokens
    )
    retitled = story.model_copy(
        update={"title": f"Days at {place}", "updated_at": story.updated_at + timedelta(hours=1)}
    )
    apply_story(ports, retitled, process=False)  # what a story_updated event does before its hand-over
    assert story_behind(ports, story.id)
    page = plan_backfill(ports, BackfillRequest(after=None, page_size=10))
    assert page.story_ids == (story.id,)
    with LocalWorkflows(services=services).start() as wf:
        ex = wf.run("ingest_story", {"story_id": str(story.id)})
    assert ex.status == "SUCCEEDED", ex.cause
    assert ex.output["graph"] == {"status": "synced"}
    assert _place_marks(ports, story.id)[place] is True
    assert ports.stories.graph_synced(story.id) == (story_digest(retitled.title, story.content), "places-1")
    # embedded again under the new title
    assert ports.vectors.indexed_hash(story.id) == index_key(
        story_digest(retitled.title, story.content), ports.chunk_max_tokens
    )
    assert not story_behind(ports, story.id)
    assert plan_backfill(ports, BackfillRequest(after=None, page_size=10)).story_ids == ()  # idempotent
    # another largest chunk (CHUNK_MAX_TOKENS) is another chunk format: the story is behind again
    smaller = dataclasses.replace(ports, chunk_max_tokens=300)
    assert story_behind(smaller, story.id)
    assert story.id in plan_backfill(smaller, BackfillRequest(after=None, page_size=10)).story_ids
