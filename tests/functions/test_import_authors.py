"""An import names only an author it may (decision 0028). An S3 import (IngestObject, moto S3)
whose author is not a current member of the story's legacy (or no user at all: the refusal
reads alike), whose role may not give a story that visibility, or who is not the stored story's
author is refused for that record; an S3 import never writes a personal story. A dataset
(`heirloom load`) is the operator's: it loads whole and warns. Nothing of a refused record is stored: not the row, its chunks
or its graph node. Story events still trust their producer. On the embedded engines."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from heirloom.adapters.s3 import S3ObjectStore
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support.services import services_with

#: a version later than any the sample holds (a timestamp from the future is refused)
LATER = datetime.now(UTC).replace(microsecond=0).isoformat()

ROOT = Path(__file__).parents[2]
SAMPLE = ROOT / "examples" / "sample-legacy"
S3_EVENT = json.loads((ROOT / "events" / "ingest_object.json").read_text())
DOMINIC, LUCIA = "f8156de7-80fc-4f32-a0b0-5596b12c22c1", "d9fae9ea-c655-4158-be31-0f7567d461b3"
TESS = "6682da7a-63ea-4dc6-aba7-275b58a47242"  # admin of Dominic's legacy, no member of Lucia's
CAROL = "efb4bd44-7290-4d28-8581-4dff77293ebd"  # creator of Lucia's legacy, advocate of Dominic's
NICKI = "9db349f9-b9b6-4530-bcba-fc2f9e2c57d0"  # an admirer of Dominic's legacy
NOBODY = "00000000-0000-4000-8000-0000000000ab"  # no user
NEW = "5b0c6a1e-2d3f-4e5a-9b8c-7d6e5f4a3b2c"


def stored(visibility=None):
    """The first sample story record of that visibility (or any)."""
    rows = [json.loads(line) for line in (SAMPLE / "stories.jsonl").open() if line.strip()]
    return next(r for r in rows if visibility is None or r["visibility"] == visibility)


def record(**fields):
    return {
        "id": NEW,
        "legacy_id": LUCIA,
        "author_user_id": CAROL,
        "title": "The boat to Genoa",
        "content": "Lucia crossed on the boat to Genoa with her mother's trunk.",
        "visibility": "public",
        "created_at": "2023-05-01T10:00:00Z",
        "updated_at": "2023-05-01T10:00:00Z",
        **fields,
    }


def trace(ports, story_id):
    """The story as PostgreSQL, the chunk index and the graph hold it."""
    story = ports.stories.get_story(story_id)
    nodes = ports.graph.run("MATCH (s:Story {id: $id}) RETURN s.id AS id", {"id": str(story_id)})
    chunks = len(ports.vectors.chunks_of(story.id)) if story else 0
    return (story.model_dump() if story else None, chunks, len(nodes))


@pytest.fixture
def s3(ports):
    load_dataset(ports, SAMPLE)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="heirloom-imports")
        services = services_with(ingestion=ports, objects=S3ObjectStore(client))
        handler = load_handler("ingest_object")

        def put_and_import(doc, key="imports/story.json"):
            client.put_object(Bucket="heirloom-imports", Key=key, Body=json.dumps(doc).encode())
            event = json.loads(json.dumps(S3_EVENT))
            event["Records"][0]["s3"]["object"]["key"] = key
            result = handler(event, LambdaContext("IngestObject"), services=services)["results"][0]
            tags = client.get_object_tagging(Bucket="heirloom-imports", Key=key)["TagSet"]
            return result, {t["Key"]: t["Value"] for t in tags}

        yield put_and_import


@pytest.mark.parametrize(
    "fields,reason",
    [
        ({"author_user_id": TESS}, f"user {TESS} is not a member of legacy {LUCIA}"),
        ({"author_user_id": NOBODY}, f"user {NOBODY} is not a member of legacy {LUCIA}"),
        ({"legacy_id": DOMINIC, "author_user_id": NICKI, "visibility": "private"}, "admirer"),
        ({"visibility": "personal"}, "personal"),
        ({"author_user_id": TESS, "visibility": "personal"}, "personal"),
    ],
    ids=["member-of-another-legacy", "no-user", "admirer-private", "personal", "personal-of-another"],
)
def test_an_import_with_an_author_it_may_not_name_is_rejected_and_stores_nothing(s3, ports, fields, reason):
    counts = ports.stories.counts()
    result, tags = s3(record(**fields))
    assert result["status"] == "rejected" and reason in result["reason"]
    assert tags["heirloom-status"] == "rejected" and tags["heirloom-reason"]
    assert ports.stories.counts() == counts
    assert trace(ports, NEW) == (None, 0, 0)


def test_the_unknown_user_and_the_stranger_read_alike(s3):
    stranger, _ = s3(record(author_user_id=TESS), key="imports/a.json")
    nobody, _ = s3(record(author_user_id=NOBODY), key="imports/b.json")
    assert stranger["reason"].replace(TESS, "U") == nobody["reason"].replace(NOBODY, "U")


def test_a_member_who_may_write_it_is_imported(s3, ports):
    result, _ = s3(record())
    assert result["status"] == "imported" and result["change"] == "created"
    story, chunks, nodes = trace(ports, NEW)
    assert str(story["author_user_id"]) == CAROL and chunks >= 1 and nodes == 1


def test_an_import_may_not_change_a_stored_story_s_author(s3, ports):
    row = stored("public")
    other = CAROL if row["author_user_id"] != CAROL else TESS
    before = trace(ports, row["id"])
    newer = {
        **row,
        "author_user_id": other,
        "content": "Someone else's words.",
        "updated_at": "2025-01-01T00:00:00Z",
    }
    result, _ = s3(newer)
    assert result["status"] == "rejected" and "another author" in result["reason"]
    assert trace(ports, row["id"]) == before


def test_an_import_may_not_touch_a_stored_personal_story(s3, ports):
    row = stored("personal")
    before = trace(ports, row["id"])
    result, _ = s3({**row, "visibility": "public", "updated_at": "2025-01-01T00:00:00Z"})
    assert result["status"] == "rejected" and "personal" in result["reason"]
    assert trace(ports, row["id"]) == before


def test_a_dataset_record_with_a_stranger_as_author_loads_with_a_warning(ports, tmp_path):
    """A dataset is the operator's (check_dataset.py warns too): it loads whole and says which
    record an S3 import would refuse."""
    load_dataset(ports, SAMPLE)
    root = tmp_path / "ds"
    shutil.copytree(SAMPLE, root)
    (root / "stories.jsonl").write_text(json.dumps(record(author_user_id=TESS)) + "\n")
    report = load_dataset(ports, root)
    assert [
        w
        for w in report.warnings
        if w.startswith(f"stories.jsonl:1: author_user_id: user {TESS} is not a member")
    ]
    assert str(ports.stories.get_story(NEW).author_user_id) == TESS


def test_a_dataset_may_still_hold_personal_stories_of_their_authors(ports):
    load_dataset(ports, SAMPLE)
    row = stored("personal")
    story = ports.stories.get_story(row["id"])
    assert story.visibility == "personal" and str(story.author_user_id) == row["author_user_id"]


def test_loading_again_after_the_author_left_the_legacy_changes_nothing(ports):
    load_dataset(ports, SAMPLE)
    row = stored("public")
    event = json.loads((ROOT / "events" / "story_events" / "member_removed.json").read_text())
    event["time"] = LATER
    event["detail"] = {**event["detail"], "legacy_id": row["legacy_id"], "user_id": row["author_user_id"]}
    load_handler("story_events")(event, LambdaContext("StoryEvents"), services=services_with(ingestion=ports))
    assert ports.stories.role_of(row["author_user_id"], row["legacy_id"]) is None
    report = load_dataset(ports, SAMPLE)  # nothing newer: the departed author's stories stay as they are
    assert report.changed == 0


def test_loading_again_after_a_departed_author_s_story_was_deleted_fails_nothing(ports):
    load_dataset(ports, SAMPLE)
    row = stored("public")
    events = ROOT / "events" / "story_events"
    handler, services = load_handler("story_events"), services_with(ingestion=ports)
    gone = json.loads((events / "story_deleted.json").read_text())
    gone["detail"] = {**gone["detail"], "story_id": row["id"], "legacy_id": row["legacy_id"],
                      "deleted_at": LATER}  # fmt: skip
    left = json.loads((events / "member_removed.json").read_text())
    left["time"] = LATER
    left["detail"] = {**left["detail"], "legacy_id": row["legacy_id"], "user_id": row["author_user_id"]}
    for event in (gone, left):
        handler(event, LambdaContext("StoryEvents"), services=services)
    report = load_dataset(ports, SAMPLE)  # the deleted story's record is skipped, not refused
    assert report.changes["stories"]["skipped"] >= 1 and ports.stories.get_story(row["id"]) is None


def test_a_story_event_still_names_its_producer_s_author(ports):
    """Story events are our own producer's word (it authenticates who writes); membership
    events may arrive after the story's, so the author is not checked against the records."""
    load_dataset(ports, SAMPLE)
    event = json.loads((ROOT / "events" / "story_events" / "story_created.json").read_text())
    event["detail"]["story"] = record(author_user_id=TESS)
    applied = load_handler("story_events")(
        event, LambdaContext("StoryEvents"), services=services_with(ingestion=ports)
    )
    assert applied["change"] == "created"


def test_every_author_legacy_and_visibility_is_imported_exactly_when_the_rule_allows(s3, ports):
    """Every user of the sample (and no user) as the author of a new story in each legacy, in
    each visibility: imported exactly when docs/dataset-format.md's members make the author a
    member whose role reads that visibility, and never personal; a refused one leaves no trace."""
    members = [json.loads(line) for line in (SAMPLE / "members.jsonl").open() if line.strip()]
    users = [json.loads(line)["id"] for line in (SAMPLE / "users.jsonl").open() if line.strip()]
    legacies = [json.loads(line)["id"] for line in (SAMPLE / "legacies.jsonl").open() if line.strip()]
    role = {(m["legacy_id"], m["user_id"]): m["role"] for m in members}
    reads = {"creator": {"public", "private"}, "admin": {"public", "private"},
             "advocate": {"public", "private"}, "admirer": {"public"}}  # fmt: skip
    for n, (author, legacy, visibility) in enumerate(
        (a, lg, v) for a in [*users, NOBODY] for lg in legacies for v in ("public", "private", "personal")
    ):
        story_id = f"00000000-0000-4000-8000-{n:012d}"
        doc = record(id=story_id, legacy_id=legacy, author_user_id=author, visibility=visibility)
        result, _ = s3(doc, key=f"imports/{n}.json")
        allowed = visibility in reads.get(role.get((legacy, author), ""), set())
        assert (result["status"] == "imported") is allowed, (author, legacy, visibility, result)
        if not allowed:
            assert trace(ports, story_id) == (None, 0, 0)
        else:
            assert str(ports.stories.get_story(story_id).author_user_id) == author
