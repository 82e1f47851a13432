"""One set of record rules for `heirloom load` and story events (contracts.records): the same
records are refused by both, for the same reason, worded for people (characters, not items)."""

import copy
import json
from pathlib import Path

import pytest

from heirloom.contracts.context import ContextRequest
from heirloom.contracts.events import StoryEvent
from heirloom.domain.story_events import parse_detail
from heirloom.errors import InvalidRequest
from heirloom_dev.loader import DatasetError, read_dataset
from tests.support.dataset import MiniDataset

ROOT = Path(__file__).parents[2]
#: the detail-type and detail key that carry a record of each dataset file
EVENT_OF = {
    "legacies": ("Legacy Created", "legacy"),
    "persons": ("Person Created", "person"),
    "users": ("User Created", "user"),
    "members": ("Member Added", "member"),
    "relationships": ("Relationship Added", "relationship"),
    "links": ("Link Created", "link"),
    "stories": ("Story Created", "story"),
}


def _same_person(rows):
    rows[0]["to_person_id"] = rows[0]["from_person_id"]


BAD = {
    "updated before created": ("stories", lambda r: r[0].update(updated_at="2024-04-30T10:00:00Z"),
                               "updated_at: updated_at is earlier than created_at"),
    "blank content": ("stories", lambda r: r[0].update(content=" \n\t "), "content: text must not be blank"),
    "blank title": ("stories", lambda r: r[0].update(title="   "), "title: text must not be blank"),
    "invisible title": ("stories", lambda r: r[0].update(title="\u200b\ufeff \u2060"), "title: text must not be blank"),
    "title of 301 characters": ("stories", lambda r: r[0].update(title="x" * 301),
                                "title: String should have at most 300 characters"),
    "empty title": ("stories", lambda r: r[0].update(title=""), "title: String should have at least 1 character"),
    "content too long": ("stories", lambda r: r[0].update(content="x" * 200_001),
                         "content: String should have at most 200000 characters"),
    "blank person name": ("persons", lambda r: r[0].update(name=" "), "name: text must not be blank"),
    "blank alias": ("persons", lambda r: r[0].update(aliases=["Nana", "  "]), "aliases.1: text must not be blank"),
    "blank legacy name": ("legacies", lambda r: r[0].update(name="\u2003"), "name: text must not be blank"),
    "blank user name": ("users", lambda r: r[0].update(name="\n"), "name: text must not be blank"),
    "blank relationship detail": ("relationships", lambda r: r[0].update(detail="  "),
                                  "detail: text must not be blank"),
    "relationship detail too long": ("relationships", lambda r: r[0].update(detail="x" * 301),
                                     "detail: String should have at most 300 characters"),
    "self-relationship": ("relationships", _same_person, "to_person_id: a relationship joins two different persons"),
    "self-link": ("links", lambda r: r[0].update(legacy_b_id=r[0]["legacy_a_id"]),
                  "legacy_b_id: a link joins two different legacies"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_loader_and_events_refuse_the_same_records_for_the_same_reason(tmp_path, case):
    file, mutate, expected = BAD[case]
    mini = MiniDataset()
    rows = copy.deepcopy(mini.files()[file])
    mutate(rows)
    with pytest.raises(DatasetError) as loaded:
        read_dataset(mini.write(tmp_path, {file: rows}))
    assert str(loaded.value).startswith(f"{file}.jsonl:1: {expected}")
    said = str(loaded.value).removeprefix(f"{file}.jsonl:1: ")

    detail_type, key = EVENT_OF[file]
    envelope = {
        "id": "1",
        "source": "heirloom.stories",
        "detail-type": detail_type,
        "time": "2024-05-02T10:00:00Z",
    }
    event = StoryEvent.model_validate({**envelope, "detail": {"schema_version": "1", key: rows[0]}})
    with pytest.raises(InvalidRequest) as sent:
        parse_detail(event)
    assert str(sent.value) == f"{detail_type}: {key}.{said}"


@pytest.mark.parametrize("query", ["   ", "\n\t", "\u2003\u3000"])
def test_a_blank_question_is_refused(query):
    with pytest.raises(ValueError, match=r"query\n.*must not be blank"):
        ContextRequest(
            legacy_id=MiniDataset().legacy, user_id=MiniDataset().creator, persona="friend", query=query
        )


def test_every_sample_story_event_is_valid():
    for path in sorted((ROOT / "events" / "story_events").glob("*.json")):
        parse_detail(StoryEvent.model_validate(json.loads(path.read_text())))


@pytest.mark.parametrize("kind", ["Name", "Detail", "Period", "NonBlankText", "StoryContent"])
def test_the_api_schema_refuses_the_blank_text_the_check_refuses(kind):
    # the OpenAPI document publishes each type's pattern: a client (or schemathesis) that follows
    # it must never send what the validator then refuses as blank ("\x1d" alone: a 400 once)
    import re
    import sys

    from pydantic import TypeAdapter, ValidationError

    from heirloom.contracts import records

    adapter = TypeAdapter(getattr(records, kind))
    pattern = re.compile(adapter.json_schema()["pattern"])
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    for text in [*spaces, "".join(spaces), " a ", "\x1d\x1ex"]:
        try:
            adapter.validate_python(text)
            accepted = True
        except ValidationError:
            accepted = False
        assert (pattern.search(text) is not None) == accepted, (kind, repr(text))
