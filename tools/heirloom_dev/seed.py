"""`heirloom seed`: a dataset's (docs/dataset-format.md) legacies, persons, users, members,
relationships, links and stories into a deployed stack, with every user keyed to its Cognito
`sub`.

The API takes the caller's identity from the token's `sub`, so a member must be stored under
that id. A map file names each dataset user's Cognito username (e-mail):
`{"<dataset user id>": "person@example.org", ...}`. Each user is looked up (or, with
`create=True`, created with an invitation) in the stack's user pool; the dataset is rewritten with
the subs and sent as story events to the stack's bus (StoryEvents applies them, idempotently), in
the loader's order. Unmapped users are refused before anything is sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from heirloom.contracts.events import DETAIL_TYPES

#: loader file -> (detail-type, detail field)
EVENTS: tuple[tuple[str, str, str], ...] = (
    ("legacies", "Legacy Created", "legacy"),
    ("persons", "Person Created", "person"),
    ("users", "User Created", "user"),
    ("members", "Member Added", "member"),
    ("relationships", "Relationship Added", "relationship"),
    ("links", "Link Created", "link"),
    ("stories", "Story Created", "story"),
)
#: fields that hold a user id, per record kind
USER_FIELDS = {"users": ("id",), "members": ("user_id",), "stories": ("author_user_id",)}
BATCH = 10  # PutEvents entries per call


class SeedError(ValueError):
    """The map, the dataset or the user pool does not allow a complete seed; nothing was sent."""


def cognito_subs(
    cognito: Any, user_pool_id: str, usernames: Mapping[str, str], *, create: bool = False
) -> dict[str, UUID]:
    """dataset user id -> the Cognito user's `sub`."""
    out: dict[str, UUID] = {}
    for user_id, username in usernames.items():
        try:
            attributes = cognito.admin_get_user(UserPoolId=user_pool_id, Username=username)["UserAttributes"]
        except cognito.exceptions.UserNotFoundException:
            if not create:
                raise SeedError(f"{username} is not in the user pool (create it, or pass --create)") from None
            attributes = cognito.admin_create_user(
                UserPoolId=user_pool_id,
                Username=username,
                UserAttributes=[
                    {"Name": "email", "Value": username},
                    {"Name": "email_verified", "Value": "true"},
                ],
                DesiredDeliveryMediums=["EMAIL"],
            )["User"]["Attributes"]
        out[user_id] = UUID(next(a["Value"] for a in attributes if a["Name"] == "sub"))
    return out


def rekeyed(dataset: Any, subs: Mapping[str, UUID]) -> list[tuple[str, str, dict[str, Any]]]:
    """(detail-type, field, record JSON) of every record, user ids replaced by subs."""
    users = {str(item.record.id) for item in dataset.users}
    missing = sorted(users - set(subs))
    if missing:
        raise SeedError(f"no Cognito user mapped for dataset users {', '.join(missing)}")
    out = []
    for name, detail_type, field in EVENTS:
        for item in getattr(dataset, name):
            record: BaseModel = item.record
            data = record.model_dump(mode="json")
            for key in USER_FIELDS.get(name, ()):
                if data.get(key) is not None:
                    data[key] = str(subs[str(data[key])])
            out.append((detail_type, field, data))
    return out


def entries(
    records: Iterable[tuple[str, str, dict[str, Any]]], bus: str, source: str
) -> list[dict[str, Any]]:
    assert all(t in DETAIL_TYPES for t, _, _ in records)
    now = datetime.now(UTC)
    return [
        {
            "EventBusName": bus,
            "Source": source,
            "DetailType": detail_type,
            "Detail": json.dumps({"schema_version": "1", field: data}),
            "Time": now,
        }
        for detail_type, field, data in records
    ]


def send(events: Any, batch: list[dict[str, Any]]) -> None:
    for start in range(0, len(batch), BATCH):
        response = events.put_events(Entries=batch[start : start + BATCH])
        if response.get("FailedEntryCount"):
            failed = [e for e in response["Entries"] if e.get("ErrorCode")]
            raise SeedError(f"PutEvents refused {len(failed)} entries: {failed[:3]} (the rest were sent)")


def seed(
    dataset_dir: Path,
    usernames: Mapping[str, str],
    *,
    outputs: Mapping[str, str],
    cognito: Any,
    events: Any,
    source: str = "heirloom.stories",
    create: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Seed the stack whose CloudFormation outputs are `outputs` (UserPoolId, EventBusName)."""
    from heirloom_dev.loader import read_dataset

    dataset = read_dataset(dataset_dir)  # the whole folder is checked before anything is sent
    for line in dataset.warnings:
        print(f"heirloom seed: warning: {line}", file=sys.stderr)
    subs = cognito_subs(cognito, outputs["UserPoolId"], usernames, create=create)
    records = rekeyed(dataset, subs)
    batch = entries(records, outputs["EventBusName"], source)
    send(events, batch)
    counts: dict[str, int] = {}
    for detail_type, _, _ in records:
        counts[detail_type] = counts.get(detail_type, 0) + 1
    if progress:
        progress(", ".join(f"{n} {t}" for t, n in counts.items()))
    return counts
