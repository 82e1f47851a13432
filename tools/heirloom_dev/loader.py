"""`heirloom load DIR`: a docs/dataset-format.md dataset, ingested through the domain's ingestion path.

The whole folder is parsed and its references checked before anything is written, so a bad
line stops the load with `file:line: field: reason` and nothing of the dataset is stored.
Writes then go record by record, each in its own transaction; re-loading changes nothing.
Memberships and links carry no time: one that a story event has changed or removed since keeps
the event's state, as does a story an event updated later or deleted; the report lists what was
skipped (heirloom.domain.ordering).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel, ValidationError

from heirloom.contracts.records import Legacy, Link, Member, Person, Relationship, Story, User
from heirloom.domain import ingestion
from heirloom.domain.ingestion import IngestionPorts, StoryOfAnotherLegacy, UnknownReference
from heirloom.edges import reason
from heirloom.ports import Change

M = TypeVar("M", bound=BaseModel)
#: what `errors="surrogateescape"` makes of a byte that is not UTF-8
_UNDECODABLE = re.compile("[\udc80-\udcff]")


class DatasetError(ValueError):
    """A dataset line that cannot be loaded; the message names file, line and field."""


@dataclass
class Located:
    file: str
    line: int
    record: Any


@dataclass
class Dataset:
    root: Path
    legacies: list[Located] = field(default_factory=list)
    persons: list[Located] = field(default_factory=list)
    users: list[Located] = field(default_factory=list)
    members: list[Located] = field(default_factory=list)
    relationships: list[Located] = field(default_factory=list)
    links: list[Located] = field(default_factory=list)
    stories: list[Located] = field(default_factory=list)
    #: `file:line: why` for each story whose author S3 imports would refuse (loaded all the same)
    warnings: list[str] = field(default_factory=list)


#: Files in load order, each with its record model.
FILES: tuple[tuple[str, type[BaseModel]], ...] = (
    ("legacies", Legacy),
    ("persons", Person),
    ("users", User),
    ("members", Member),
    ("relationships", Relationship),
    ("links", Link),
    ("stories", Story),
)


def _read(path: Path, model: type[M]) -> Iterator[Located]:
    # undecodable bytes become lone surrogates (valid UTF-8 never decodes to one): found per line
    with path.open(encoding="utf-8", errors="surrogateescape") as fh:
        for number, raw in enumerate(fh, start=1):
            bad = _UNDECODABLE.search(raw)
            if bad:
                byte = ord(bad.group()) - 0xDC00
                raise DatasetError(
                    f"{path.name}:{number}: not valid UTF-8 (byte 0x{byte:02x} at column {bad.start() + 1})"
                )
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path.name}:{number}: not valid JSON: {exc.msg}") from exc
            except (ValueError, RecursionError) as exc:  # a 5,000-digit number, nesting too deep
                raise DatasetError(f"{path.name}:{number}: not valid JSON: {type(exc).__name__}") from exc
            if not isinstance(data, dict):
                raise DatasetError(f"{path.name}:{number}: expected a JSON object")
            try:
                yield Located(path.name, number, model.model_validate(data))
            except ValidationError as exc:
                raise DatasetError(f"{path.name}:{number}: {reason(exc, limit=1, whole='record')}") from exc


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file; DatasetError with `file:line: reason` for a line that
    is not UTF-8, not JSON or not an object."""
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{path.name}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{where}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            ) from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 5,000-digit number, nesting
            raise DatasetError(f"{where}: not valid JSON: {getattr(exc, 'msg', type(exc).__name__)}") from exc
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        rows.append(row)
    return rows


def read_dataset(root: Path) -> Dataset:
    if not root.is_dir():
        raise DatasetError(f"{root}: not a folder")
    dataset = Dataset(root=root)
    for name, model in FILES:
        path = root / f"{name}.jsonl"
        if not path.is_file():
            if name in ("legacies", "stories"):
                raise DatasetError(f"{path.name}: missing")
            continue
        getattr(dataset, name).extend(_read(path, model))
    _check_references(dataset)
    return dataset


#: file -> (field, the file it must name a record of), checked in this order
REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "legacies": (("subject_person_id", "persons"),),
    "persons": (("legacy_id", "legacies"),),
    "users": (("person_id", "persons"),),
    "members": (("legacy_id", "legacies"), ("user_id", "users")),
    "relationships": (("from_person_id", "persons"), ("to_person_id", "persons")),
    "links": (("legacy_a_id", "legacies"), ("legacy_b_id", "legacies")),
    "stories": (("legacy_id", "legacies"), ("author_user_id", "users")),
}
#: the record kind each file holds, as errors name it
KINDS = {"legacies": "legacy", "persons": "person", "users": "user", "links": "link", "stories": "story"}


def _check_references(ds: Dataset) -> None:
    for name, kind in KINDS.items():
        seen: set[UUID] = set()
        for item in getattr(ds, name):
            if item.record.id in seen:
                raise DatasetError(f"{item.file}:{item.line}: id: duplicate {kind} {item.record.id}")
            seen.add(item.record.id)
    known = {name: {x.record.id for x in getattr(ds, name)} for name in ("legacies", "persons", "users")}
    for name, fields in REFERENCES.items():
        for item in getattr(ds, name):
            for field_name, target in fields:
                value = getattr(item.record, field_name)
                if value is not None and value not in known[target]:
                    raise DatasetError(
                        f"{item.file}:{item.line}: {field_name}: unknown {KINDS[target]} {value}"
                    )
    # decision 0028: S3 imports refuse a story whose author is no member of its legacy who may
    # write it; a dataset is the operator's and is loaded whole (as check_dataset.py only warns)
    roles = {(m.record.legacy_id, m.record.user_id): m.record.role for m in ds.members}
    for item in ds.stories:
        story = item.record
        why = ingestion.author_refusal(story, roles.get((story.legacy_id, story.author_user_id)))
        if why is not None:
            ds.warnings.append(f"{item.file}:{item.line}: {why} (loaded; an S3 import would refuse it)")


#: why a dataset record was not applied (heirloom.domain.ordering), by file
SKIP_REASONS = {
    "persons": "a story event changed this person; kept as it left it",
    "members": "a story event changed or removed this membership; kept as it left it",
    "relationships": "a story event changed or removed this relationship; kept as it left it",
    "links": "a story event changed this link; kept as it left it",
    "stories": "a newer version of this story is stored, or it was deleted; kept",
}


@dataclass
class LoadReport:
    changes: dict[str, Counter[str]] = field(default_factory=dict)
    #: `file:line: why` for each record not applied because a story event's state stands
    skipped: list[str] = field(default_factory=list)
    #: the dataset's warnings (`Dataset.warnings`)
    warnings: list[str] = field(default_factory=list)

    def add(self, kind: str, change: Change) -> None:
        self.changes.setdefault(kind, Counter())[change.value] += 1

    @property
    def changed(self) -> int:
        return sum(c[Change.CREATED.value] + c[Change.UPDATED.value] for c in self.changes.values())


APPLY: dict[str, Callable[[IngestionPorts, Any], Change]] = {
    "legacies": ingestion.apply_legacy,
    "persons": ingestion.apply_person,
    "users": ingestion.apply_user,
    "members": ingestion.apply_member,
    "relationships": ingestion.apply_relationship,
    "links": ingestion.apply_link,
    "stories": ingestion.apply_story,
}


def load_dataset(
    ports: IngestionPorts, root: Path, progress: Callable[[str], None] | None = None
) -> LoadReport:
    dataset = read_dataset(root)
    report = LoadReport(warnings=dataset.warnings)
    for name, _model in FILES:
        items: list[Located] = getattr(dataset, name)
        for item in items:
            try:
                change = APPLY[name](ports, item.record)
            except (UnknownReference, StoryOfAnotherLegacy) as exc:
                raise DatasetError(f"{item.file}:{item.line}: {exc}") from exc
            report.add(name, change)
            if change is Change.SKIPPED:
                report.skipped.append(f"{item.file}:{item.line}: {SKIP_REASONS.get(name, 'skipped')}")
        if progress and items:
            progress(f"{name}: {dict(report.changes.get(name, {}))}")
    return report
