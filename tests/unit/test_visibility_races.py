"""A story's visibility decides which names other stories established it may link (decision
0040). Found by an ordering audit: a visibility change landing while the story's own ingestion
was in GraphSync was lost (the stale sync marked the story done after the change unmarked it),
and a failure after the row was written lost the re-link of the stories writing its names for
good. In memory, with the workflow's steps run by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from heirloom.adapters.memory import memory_services
from heirloom.contracts.events import StoryEvent
from heirloom.contracts.extraction import ExtractedEntities, ExtractedObject
from heirloom.contracts.ingestion import GraphSyncInput
from heirloom.contracts.records import Legacy, Member, Person, Role, User
from heirloom.domain import ingestion, story_graph
from heirloom.errors import StoreUnavailable
from heirloom.settings import Settings
from heirloom.steps.chunk_embed import chunk_embed_step
from heirloom.steps.extract_entities import extract_step
from heirloom.steps.graph_sync import graph_sync_step
from heirloom.steps.story_events import handle_story_event

SOURCE = Settings().workflow.event_source
T0 = datetime(2024, 5, 1, tzinfo=UTC)
CAT = "When we moved to Wren Court our cat Biscuit came too, in a basket."
SICK = "Biscuit was sick all week."


class CatExtractor:
    version = "cat-1"

    def extract(self, text, *, known_names=()):
        cat = ExtractedObject(name="Biscuit", type="animal", confidence=0.95)
        return ExtractedEntities(objects=(cat,) if "our cat Biscuit" in text else ())


class World:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started: list[UUID] = []
        #: the things each story's last graph write linked
        self.linked: dict[UUID, list[str]] = {}
        write = story_graph.sync_story_entities

        def spy(graph, story, entities, *args, **kwargs):
            self.linked[story.id] = sorted(o.name for o in entities.objects)
            return write(graph, story, entities, *args, **kwargs)

        monkeypatch.setattr(story_graph, "sync_story_entities", spy)
        self.svc = memory_services(extractor=CatExtractor(), start_ingestion=self.started.append)
        self.ports = self.svc.ingestion
        self.legacy, subject, self.author = uuid4(), uuid4(), uuid4()
        stores = self.svc.stories
        stores.upsert_person(Person(id=subject, legacy_id=self.legacy, name="Edith"))
        stores.upsert_legacy(Legacy(id=self.legacy, name="Edith", subject_person_id=subject))
        stores.upsert_user(User(id=self.author, name="Ann"))
        stores.upsert_member(Member(legacy_id=self.legacy, user_id=self.author, role=Role.CREATOR))

    def send(self, story: UUID, content: str, visibility: str, minutes: int = 0) -> str:
        at = (T0 + timedelta(minutes=minutes)).isoformat()
        body = {"id": str(story), "legacy_id": str(self.legacy), "author_user_id": str(self.author),
                "title": "t", "content": content, "visibility": visibility, "created_at": T0.isoformat(),
                "updated_at": at}  # fmt: skip
        event = StoryEvent.model_validate({
            "id": str(uuid4()), "source": SOURCE, "time": at, "detail-type": "Story Updated" if minutes else "Story Created",
            "detail": {"schema_version": "1", "story": body},
        })  # fmt: skip
        return handle_story_event(self.ports, event, source=SOURCE, start_ingestion=self.started.append).value

    def workflow(self, story: UUID) -> None:
        """One ingest_story execution: ChunkEmbed and ExtractEntities, then GraphSync."""
        results = (chunk_embed_step(self.ports, story), extract_step(self.ports, story))
        graph_sync_step(self.ports, GraphSyncInput(story_id=story, results=results), self.started.append)

    def drain(self) -> None:
        while self.started:
            self.workflow(self.started.pop(0))

    def animals(self, story: UUID) -> list[str]:
        return self.linked.get(story, [])


def test_a_visibility_change_during_the_storys_own_graph_sync_is_not_lost(monkeypatch):
    w = World(monkeypatch)
    source, story = uuid4(), uuid4()
    assert w.send(source, CAT, "private") == "created"
    w.drain()
    assert w.send(story, SICK, "private") == "created"  # its execution starts ...
    assert w.started == [story]
    w.started.clear()
    results = (chunk_embed_step(w.ports, story), extract_step(w.ports, story))
    read = w.ports.stories.get_story

    def made_public_meanwhile(story_id):
        found = read(story_id)  # ... whose GraphSync reads the story as private ...
        monkeypatch.setattr(w.ports.stories, "get_story", read)
        assert w.send(story, SICK, "public", minutes=2) == "updated"  # ... then this lands
        return found

    monkeypatch.setattr(w.ports.stories, "get_story", made_public_meanwhile)
    graph_sync_step(w.ports, GraphSyncInput(story_id=story, results=results), w.started.append)
    assert w.animals(story) == ["Biscuit"]  # written as the private story it read
    w.drain()  # the execution the change started
    assert w.animals(story) == []  # a private story's name reaches no public one
    assert not ingestion.story_behind(w.ports, story)


def test_a_failure_after_the_write_leaves_the_stories_writing_its_names_behind(monkeypatch):
    w = World(monkeypatch)
    source, other = uuid4(), uuid4()
    w.send(source, CAT, "public")
    w.send(other, SICK, "public")
    w.drain()
    assert w.animals(other) == ["Biscuit"]

    write = w.ports.stories.upsert_story

    def written_then_lost(*args, **kwargs):  # the row is committed, then the connection drops
        write(*args, **kwargs)
        raise StoreUnavailable("connection reset")

    with monkeypatch.context() as m:
        m.setattr(w.ports.stories, "upsert_story", written_then_lost)
        with pytest.raises(StoreUnavailable):
            w.send(source, CAT, "personal", minutes=1)
    assert w.send(source, CAT, "personal", minutes=1) == "unchanged"  # the redelivery
    assert ingestion.story_behind(w.ports, other)  # the backfill takes it up ...
    w.workflow(other)
    assert w.animals(other) == []  # ... and a personal story's name reaches no public one
