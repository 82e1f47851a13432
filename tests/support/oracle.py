"""A deliberately simple, separate reading of FORMAT.md's visibility rules, for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRUSTED = {"creator", "admin", "advocate"}


def load(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [json.loads(line) for line in (root / f"{name}.jsonl").read_text().splitlines() if line.strip()]
        for name in ("legacies", "members", "links", "stories")
    }


def readable(data: dict[str, list[dict[str, Any]]], user: str, legacy: str) -> set[str]:
    role = next(
        (m["role"] for m in data["members"] if m["user_id"] == user and m["legacy_id"] == legacy), None
    )
    if role is None:
        return set()
    ok: set[str] = set()
    for s in data["stories"]:
        if s["legacy_id"] == legacy:
            if s["visibility"] == "public" or (s["visibility"] == "private" and role in TRUSTED):
                ok.add(s["id"])
            if s["visibility"] == "personal" and s["author_user_id"] == user:
                ok.add(s["id"])
    for link in data["links"]:
        if link["status"] != "active" or legacy not in (link["legacy_a_id"], link["legacy_b_id"]):
            continue
        other = link["legacy_b_id"] if link["legacy_a_id"] == legacy else link["legacy_a_id"]
        for s in data["stories"]:
            if s["legacy_id"] != other or s["visibility"] == "personal":
                continue
            if link["share_mode"] == "selective" and s["id"] not in link["shared_story_ids"]:
                continue
            if s["visibility"] == "public" or role in TRUSTED:
                ok.add(s["id"])
    return ok
