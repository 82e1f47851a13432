"""IngestObject with its sample S3 event (moto S3) on the embedded engines."""

import json
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import boto3
import pytest
from moto import mock_aws

from heirloom.adapters.s3 import S3ObjectStore
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]
EVENT = json.loads((ROOT / "events" / "ingest_object.json").read_text())
KEY = "imports/f8156de7/Dad's last Sunday dinner.md"
LEGACY, AUTHOR = "f8156de7-80fc-4f32-a0b0-5596b12c22c1", "6682da7a-63ea-4dc6-aba7-275b58a47242"
GOOD = f"""---
legacy: {LEGACY}
author: {AUTHOR}
title: Dad's last Sunday dinner
visibility: public
created_at: 2019-11-03T18:30:00Z
---
Dad carved the roast slowly and told a story about the furnace at the glass works.

Then he played the accordion until the neighbours joined in.
"""


@pytest.fixture
def s3(ports):
    load_dataset(ports, ROOT / "examples" / "sample-legacy")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="heirloom-imports")
        services = services_with(ingestion=ports, objects=S3ObjectStore(client))
        handler = load_handler("ingest_object")

        def put_and_import(body, key=KEY):
            client.put_object(Bucket="heirloom-imports", Key=key, Body=body)
            event = json.loads(json.dumps(EVENT))
            event["Records"][0]["s3"]["object"]["key"] = key.replace(" ", "+").replace("'", "%27")
            result = handler(event, LambdaContext("IngestObject"), services=services)["results"][0]
            tags = client.get_object_tagging(Bucket="heirloom-imports", Key=key)["TagSet"]
            return result, {t["Key"]: t["Value"] for t in tags}

        yield put_and_import


def test_a_markdown_document_becomes_a_story(s3, ports):
    result, tags = s3(GOOD.encode())
    assert result["status"] == "imported" and tags["heirloom-status"] == "imported"
    story = ports.stories.get_story(tags["heirloom-story"])
    assert story.title == "Dad's last Sunday dinner" and str(story.legacy_id) == LEGACY
    assert len(ports.vectors.chunks_of(story.id)) == 2
    again, _ = s3(GOOD.encode())
    assert again["change"] == "unchanged"


def test_a_json_story_document(s3, ports):
    doc = {"id": "3e1f5a7c-9b2d-4c6e-8f0a-1b3d5f7a9c2e", "legacy_id": LEGACY, "author_user_id": AUTHOR,
           "title": "Glass", "content": "He cut glass for forty years.", "visibility": "private",
           "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z"}  # fmt: skip
    result, tags = s3(json.dumps(doc).encode(), key="imports/glass.json")
    assert result["status"] == "imported" and tags["heirloom-story"] == doc["id"]
    assert ports.stories.get_story(doc["id"]).visibility == "private"


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"no header at all", "front-matter"),
        (GOOD.replace("visibility: public", "visibility: secret").encode(), "visibility"),
        (
            GOOD.replace(f"legacy: {LEGACY}", "legacy: 00000000-0000-4000-8000-00000000dead").encode(),
            "unknown legacy",
        ),
        (GOOD.replace("title: ", "mood: ").encode(), "mood"),
        (b"\xff\xfe\x00bad", "UTF-8"),
        (b"---\nlegacy: x\n", "not closed"),
    ],
)
def test_bad_documents_are_tagged_rejected_and_store_nothing(s3, ports, body, reason):
    before = ports.stories.counts()
    result, tags = s3(body)
    assert result["status"] == "rejected" and reason in result["reason"]
    assert tags["heirloom-status"] == "rejected" and tags["heirloom-reason"]
    assert ports.stories.counts() == before


def test_oversized_objects_are_rejected_before_reading(s3, ports):
    result, _ = s3(b"x" * 1_000_001)
    assert result["status"] == "rejected" and "limit" in result["reason"]


def test_a_document_of_a_deleted_story_is_skipped_and_tagged_so(s3, ports):
    doc = {"id": "3e1f5a7c-9b2d-4c6e-8f0a-1b3d5f7a9c2e", "legacy_id": LEGACY, "author_user_id": AUTHOR,
           "title": "Glass", "content": "He cut glass for forty years.", "visibility": "private",
           "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z"}  # fmt: skip
    ports.stories.delete_story(
        UUID(doc["id"]), datetime(2019, 1, 1, tzinfo=UTC), UUID(LEGACY)
    )  # an older delete
    result, tags = s3(json.dumps(doc).encode(), key="imports/glass.json")
    assert result["change"] == "skipped" and tags["heirloom-status"] == "skipped" and tags["heirloom-reason"]
    assert ports.stories.get_story(doc["id"]) is None


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 8 levels"),
        (b'{"id": ' + b"7" * 5000 + b"}", "more than 20 digits"),
    ],
)
def test_hostile_json_documents_are_rejected_not_a_crash(s3, ports, body, reason):
    """json.loads raised RecursionError / ValueError: the handler crashed instead of tagging."""
    before = ports.stories.counts()
    result, tags = s3(body, key="imports/hostile.json")
    assert result["status"] == "rejected" and reason in result["reason"]
    assert tags["heirloom-status"] == "rejected" and ports.stories.counts() == before
