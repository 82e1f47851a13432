"""A small docs/dataset-format.md dataset built in code, for loader and ingestion tests."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def uid() -> str:
    return str(uuid.uuid4())


@dataclass
class MiniDataset:
    legacy: str = field(default_factory=uid)
    other_legacy: str = field(default_factory=uid)
    subject: str = field(default_factory=uid)
    sister: str = field(default_factory=uid)
    other_subject: str = field(default_factory=uid)
    creator: str = field(default_factory=uid)
    admirer: str = field(default_factory=uid)
    link: str = field(default_factory=uid)
    public_story: str = field(default_factory=uid)
    private_story: str = field(default_factory=uid)
    personal_story: str = field(default_factory=uid)
    linked_story: str = field(default_factory=uid)

    def files(self) -> dict[str, list[dict[str, Any]]]:
        t = "2024-05-01T10:00:00Z"

        def story(
            sid: str, legacy: str, title: str, content: str, visibility: str, author: str
        ) -> dict[str, Any]:
            return {
                "id": sid,
                "legacy_id": legacy,
                "author_user_id": author,
                "title": title,
                "content": content,
                "visibility": visibility,
                "created_at": t,
                "updated_at": t,
            }

        return {
            "dataset": [{"name": "mini", "description": "test", "source": "tests", "license": "CC0-1.0"}],
            "legacies": [
                {"id": self.legacy, "name": "Ada Marsh", "subject_person_id": self.subject},
                {"id": self.other_legacy, "name": "Ivy Marsh", "subject_person_id": self.other_subject},
            ],
            "persons": [
                {
                    "id": self.subject,
                    "legacy_id": self.legacy,
                    "name": "Ada Marsh",
                    "aliases": ["Nana Ada"],
                    "birth_year": 1930,
                    "death_year": 2010,
                },
                {
                    "id": self.sister,
                    "legacy_id": self.legacy,
                    "name": "Ivy Marsh",
                    "aliases": [],
                    "birth_year": 1933,
                    "death_year": None,
                },
                {
                    "id": self.other_subject,
                    "legacy_id": self.other_legacy,
                    "name": "Ivy Marsh",
                    "aliases": [],
                    "birth_year": 1933,
                    "death_year": None,
                },
            ],
            "users": [
                {"id": self.creator, "name": "Tom", "person_id": None},
                {"id": self.admirer, "name": "Kay", "person_id": None},
            ],
            "members": [
                {"legacy_id": self.legacy, "user_id": self.creator, "role": "creator"},
                {"legacy_id": self.legacy, "user_id": self.admirer, "role": "admirer"},
                {"legacy_id": self.other_legacy, "user_id": self.creator, "role": "creator"},
            ],
            "relationships": [
                {
                    "from_person_id": self.subject,
                    "to_person_id": self.sister,
                    "type": "FAMILY_OF",
                    "detail": "sister",
                    "since": None,
                    "until": None,
                },
            ],
            "links": [
                {
                    "id": self.link,
                    "legacy_a_id": self.legacy,
                    "legacy_b_id": self.other_legacy,
                    "status": "active",
                    "share_mode": "all",
                    "shared_story_ids": [],
                },
            ],
            "stories": [
                story(
                    self.public_story,
                    self.legacy,
                    "The orchard",
                    "Ada planted apple trees by the river.\n\n"
                    "Every autumn the family pressed cider in the barn.",
                    "public",
                    self.creator,
                ),
                story(
                    self.private_story,
                    self.legacy,
                    "The long illness",
                    "Ada was sick for a year with a lung illness and told nobody outside the family.",
                    "private",
                    self.creator,
                ),
                story(
                    self.personal_story,
                    self.legacy,
                    "My own note",
                    "Kay wrote this note about the orchard for herself alone.",
                    "personal",
                    self.admirer,
                ),
                story(
                    self.linked_story,
                    self.other_legacy,
                    "Ivy at sea",
                    "Ivy sailed to the islands in 1952 on a cargo ship.",
                    "public",
                    self.creator,
                ),
            ],
        }

    def write(self, root: Path, overrides: dict[str, list[dict[str, Any]]] | None = None) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        files = {**self.files(), **(overrides or {})}
        for name, rows in files.items():
            if name == "dataset":
                (root / "dataset.json").write_text(json.dumps(rows[0]))
            else:
                (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return root
