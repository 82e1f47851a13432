"""`heirloom seed`: every user of a dataset keyed to its Cognito sub in the story events sent to
the stack's bus; unmapped or unknown users stop it before anything is sent."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

import pytest

from heirloom.contracts.events import StoryEvent
from heirloom_dev.seed import SeedError, seed
from tests.support.dataset import MiniDataset

OUTPUTS = {"UserPoolId": "pool", "EventBusName": "Heirloom-dev-bus"}


class UserNotFoundException(Exception):
    pass


class Pool:
    """Cognito: admin_get_user / admin_create_user over a dict of username -> sub."""

    class exceptions:  # boto3 names it so
        UserNotFoundException = UserNotFoundException

    def __init__(self, users):
        self.users = dict(users)
        self.created = []

    def admin_get_user(self, UserPoolId, Username):
        assert UserPoolId == "pool"
        if Username not in self.users:
            raise UserNotFoundException(Username)
        return {
            "UserAttributes": [
                {"Name": "email", "Value": Username},
                {"Name": "sub", "Value": self.users[Username]},
            ]
        }

    def admin_create_user(self, UserPoolId, Username, UserAttributes, DesiredDeliveryMediums):
        self.created.append(Username)
        self.users[Username] = str(uuid.uuid4())
        return {"User": {"Attributes": [{"Name": "sub", "Value": self.users[Username]}]}}


class Bus:
    def __init__(self):
        self.calls = []

    def put_events(self, Entries):
        assert len(Entries) <= 10
        self.calls.append(Entries)
        return {"FailedEntryCount": 0, "Entries": [{"EventId": "e"} for _ in Entries]}


@pytest.fixture
def dataset(tmp_path):
    ds = MiniDataset()
    return ds, ds.write(tmp_path / "ds"), ds.files()


def usernames(files):
    return {u["id"]: f"user{i}@example.org" for i, u in enumerate(files["users"])}


def test_every_user_id_becomes_the_cognito_sub(dataset):
    _, root, files = dataset
    names = usernames(files)
    subs = {name: str(uuid.uuid4()) for name in names.values()}
    bus = Bus()
    counts = seed(root, names, outputs=OUTPUTS, cognito=Pool(subs), events=bus)
    sent = [e for call in bus.calls for e in call]
    assert counts["User Created"] == len(files["users"]) and counts["Story Created"] == len(files["stories"])
    assert len(sent) == sum(counts.values()) and {e["EventBusName"] for e in sent} == {"Heirloom-dev-bus"}
    new_id = {old: subs[name] for old, name in names.items()}
    details = []
    for entry in sent:  # each one parses as StoryEvents would parse it
        event = StoryEvent.model_validate({"id": "1", "source": entry["Source"], "detail-type": entry["DetailType"],
                                           "time": datetime.now().astimezone(), "detail": json.loads(entry["Detail"])})  # fmt: skip
        details.append((entry["DetailType"], event.parsed_detail()))
    users = [str(d.user.id) for t, d in details if t == "User Created"]
    members = [str(d.member.user_id) for t, d in details if t == "Member Added"]
    authors = [str(d.story.author_user_id) for t, d in details if t == "Story Created"]
    assert sorted(users) == sorted(new_id.values())
    assert set(members) | set(authors) <= set(new_id.values())
    assert not (set(members) | set(authors) | set(users)) & set(names)  # no dataset id left
    # the loader's order: legacies first, stories last
    order = [t for t, _ in details]
    assert order[0] == "Legacy Created" and order[-1] == "Story Created"


def test_an_unmapped_or_unknown_user_stops_the_seed_before_anything_is_sent(dataset):
    _, root, files = dataset
    names = usernames(files)
    bus = Bus()
    first, *rest = names
    with pytest.raises(SeedError, match=f"no Cognito user mapped for dataset users {first}"):
        seed(root, {k: names[k] for k in rest}, outputs=OUTPUTS, cognito=Pool({n: str(uuid.uuid4()) for n in names.values()}), events=bus)  # fmt: skip
    with pytest.raises(SeedError, match="is not in the user pool"):
        seed(root, names, outputs=OUTPUTS, cognito=Pool({}), events=bus)
    assert bus.calls == []
    pool = Pool({})
    seed(root, names, outputs=OUTPUTS, cognito=pool, events=bus, create=True)
    assert sorted(pool.created) == sorted(names.values()) and bus.calls


def test_a_story_whose_author_is_no_member_of_its_legacy_is_sent_with_a_warning(dataset, tmp_path, capsys):
    """Story events trust their producer (decision 0028) and a dataset is the operator's: the
    seed sends the story and warns of the author an S3 import would refuse."""
    ds, _, files = dataset
    stories = [
        *files["stories"],
        {**files["stories"][-1], "id": str(uuid.uuid4()), "author_user_id": ds.admirer},
    ]
    root = ds.write(tmp_path / "forged", {"stories": stories})
    bus = Bus()
    names = usernames(files)
    seed(root, names, outputs=OUTPUTS, cognito=Pool({n: str(uuid.uuid4()) for n in names.values()}), events=bus)  # fmt: skip
    assert bus.calls
    assert f"warning: stories.jsonl:{len(stories)}: author_user_id:" in capsys.readouterr().err
