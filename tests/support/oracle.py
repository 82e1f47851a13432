"""A deliberately simple, separate reading of docs/dataset-format.md's visibility rules, for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRUSTED = {"creator", "admin", "advocate"}


def load(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [json.loads(line) for line in (root / f"{name}.jsonl").read_text().splitlines() if line.strip()]
        for name in ("legacies", "members", "links", "stories", "persons", "relationships")
        if (root / f"{name}.jsonl").exists()
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


def member_of(data: dict[str, list[dict[str, Any]]], user: str) -> set[str]:
    """The legacies `user` is a member of, in any role."""
    return {m["legacy_id"] for m in data["members"] if m["user_id"] == user}


def fact_allowed(
    data: dict[str, list[dict[str, Any]]],
    user: str,
    legacy: str,
    *,
    story_ids: list[str] | tuple[str, ...] = (),
    known_between: tuple[str, str] | None = None,
) -> bool:
    """A graph fact may be shown when a story the user may read (reading `legacy`) supports it,
    or it is a known relationship between persons one of whom belongs to a legacy the user is a
    member of."""
    if set(story_ids) & readable(data, user, legacy):
        return True
    if known_between is None:
        return False
    home = {p["id"]: p["legacy_id"] for p in data["persons"]}
    return any(home.get(pid) in member_of(data, user) for pid in known_between)
