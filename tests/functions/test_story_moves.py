"""Only story events move a story between legacies. An S3 import (IngestObject) or a dataset
record (`heirloom load`) that names, by its id, a story of another legacy is refused for that
record, and nothing of the story changes; the other records go in as before. On the embedded
engines, through the real handlers (moto S3) and the loader."""

import json
import shutil
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from heirloom.adapters.s3 import S3ObjectStore
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import DatasetError, load_dataset
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "examples" / "sample-legacy"
S3_EVENT = json.loads((ROOT / "events" / "ingest_object.json").read_text())
STORY = "1a882a54-39ff-490c-9cc4-356339055024"  # a public story of Dominic's legacy
DOMINIC, LUCIA = "f8156de7-80fc-4f32-a0b0-5596b12c22c1", "d9fae9ea-c655-4158-be31-0f7567d461b3"
AUTHOR = "efb4bd44-7290-4d28-8581-4dff77293ebd"  # Lucia's legacy's creator


def as_moved(**more):
    """The sample story's record, newer and naming Lucia's legacy."""
    record = next(json.loads(line) for line in (SAMPLE / "stories.jsonl").open() if STORY in line)
    return {
        **record,
        "legacy_id": LUCIA,
        "author_user_id": AUTHOR,
        "content": "Rewritten by someone else.",
        "updated_at": "2024-01-01T00:00:00Z",
        **more,
    }


def where(ports):
    """The story as PostgreSQL, the chunk index and the graph hold it."""
    story = ports.stories.get_story(STORY)
    legacies = ports.graph.run(
        "MATCH (:Story {id: $id})-[:BELONGS_TO]->(l:Legacy) RETURN l.id AS l", {"id": STORY}
    )
    return (
        str(story.legacy_id),
        story.content,
        story.updated_at,
        len(ports.vectors.chunks_of(story.id)),
        [r["l"] for r in legacies],
    )


@pytest.fixture
def loaded(ports):
    load_dataset(ports, SAMPLE)
    return ports


def test_an_import_naming_another_legacy_s_story_is_refused_and_the_rest_imported(loaded):
    ports, before = loaded, where(loaded)
    assert before[0] == DOMINIC and before[-1] == [DOMINIC]
    other = {**as_moved(), "id": "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", "title": "A new one"}
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="heirloom-imports")
        keys = ["imports/moved.json", "imports/new.json"]
        client.put_object(Bucket="heirloom-imports", Key=keys[0], Body=json.dumps(as_moved()).encode())
        client.put_object(Bucket="heirloom-imports", Key=keys[1], Body=json.dumps(other).encode())
        event = json.loads(json.dumps(S3_EVENT))
        event["Records"] = [json.loads(json.dumps(S3_EVENT["Records"][0])) for _ in keys]
        for record, key in zip(event["Records"], keys, strict=True):
            record["s3"]["object"]["key"] = key
        services = services_with(ingestion=ports, objects=S3ObjectStore(client))
        results = load_handler("ingest_object")(event, LambdaContext("IngestObject"), services=services)[
            "results"
        ]
        tags = {
            t["Key"]: t["Value"]
            for t in client.get_object_tagging(Bucket="heirloom-imports", Key=keys[0])["TagSet"]
        }
    refused, imported = results
    assert refused["status"] == "rejected" and "another legacy" in refused["reason"]
    assert tags["heirloom-status"] == "rejected" and "another legacy" in tags["heirloom-reason"]
    assert imported["status"] == "imported" and imported["change"] == "created"
    assert where(ports) == before  # nothing of the story changed, anywhere
    assert str(ports.stories.get_story(other["id"]).legacy_id) == LUCIA


def test_a_dataset_record_naming_another_legacy_s_story_is_refused(loaded, tmp_path):
    ports, before = loaded, where(loaded)
    root = tmp_path / "ds"
    shutil.copytree(SAMPLE, root)
    path = root / "stories.jsonl"
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if STORY in line)
    lines[number] = json.dumps(as_moved())
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=rf"stories.jsonl:{number + 1}: .*another legacy"):
        load_dataset(ports, root)
    assert where(ports) == before


def test_a_story_event_still_moves_the_story(loaded):
    ports = loaded
    event = json.loads((ROOT / "events" / "story_events" / "story_updated.json").read_text())
    event["detail"]["story"] = as_moved()
    handler = load_handler("story_events")
    applied = handler(event, LambdaContext("StoryEvents"), services=services_with(ingestion=ports))
    assert applied["change"] == "updated"
    legacy, content, _, _, in_graph = where(ports)
    assert (legacy, content, in_graph) == (LUCIA, "Rewritten by someone else.", [LUCIA])


def test_loading_the_dataset_again_after_an_event_moved_its_story_skips_the_older_record(loaded):
    ports = loaded
    event = json.loads((ROOT / "events" / "story_events" / "story_updated.json").read_text())
    event["detail"]["story"] = as_moved()
    load_handler("story_events")(event, LambdaContext("StoryEvents"), services=services_with(ingestion=ports))
    moved = where(ports)
    report = load_dataset(ports, SAMPLE)  # its record of the story is older than the move
    assert report.changes["stories"]["skipped"] == 1 and any("stories.jsonl" in s for s in report.skipped)
    assert where(ports) == moved
