"""S3 imports: a story document under the import prefix feeds the same path as `Story Created`.

Documents are JSON in the docs/dataset-format.md story shape, or Markdown / plain text with a front-matter
header (`legacy`, `author`, `title`, `visibility`, optional `id`, `created_at`, `updated_at`).
A document that is not a valid story, or names an author it may not (a member of the legacy who
may write that visibility; never a personal story: decision 0028), is tagged rejected with the
reason; nothing is stored.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from pydantic import ValidationError

from heirloom.contracts.records import Story
from heirloom.edges import reason
from heirloom.errors import InvalidRequest
from heirloom.safejson import bounded_loads

#: largest object read at all (bytes); a story body is further capped at MAX_STORY_CHARS
MAX_OBJECT_BYTES = 1_000_000
IMPORT_NAMESPACE = uuid.UUID("0f7a4c2e-9b1d-4e6f-8a3c-5d7e9f1b2c4a")
FRONT_MATTER_KEYS = {"id", "legacy", "author", "title", "visibility", "created_at", "updated_at"}


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise InvalidRequest("a text document needs a front-matter header between '---' lines")
    try:
        end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration as exc:
        raise InvalidRequest("the front-matter header is not closed with '---'") from exc
    header: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise InvalidRequest(f"front matter line {line[:40]!r} is not 'key: value'")
        key = name.strip().lower()
        if key not in FRONT_MATTER_KEYS:
            raise InvalidRequest(f"unknown front-matter key {key!r}")
        header[key] = value.strip().strip('"').strip("'")
    return header, "\n".join(lines[end + 1 :]).strip()


def parse_document(bucket: str, key: str, body: bytes, now: datetime | None = None) -> Story:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest("the document is not UTF-8 text") from exc
    try:
        if key.lower().endswith(".json"):
            data = bounded_loads(text, what="document", max_bytes=MAX_OBJECT_BYTES)
            if not isinstance(data, dict):
                raise InvalidRequest("a JSON document must be one story object")
            return Story.model_validate(data)
        header, content = _front_matter(text)
        when = (now or datetime.now(UTC)).isoformat()
        return Story.model_validate(
            {
                "id": header.get("id") or str(uuid.uuid5(IMPORT_NAMESPACE, f"s3://{bucket}/{key}")),
                "legacy_id": header.get("legacy"),
                "author_user_id": header.get("author"),
                "title": header.get("title"),
                "visibility": header.get("visibility", "private"),
                "content": content,
                "created_at": header.get("created_at") or when,
                "updated_at": header.get("updated_at") or header.get("created_at") or when,
            }
        )
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"not valid JSON: {exc.msg}") from exc
    except ValidationError as exc:
        raise InvalidRequest(reason(exc)) from exc


def tag_value(text: str) -> str:
    """S3 tag values: at most 256 characters of letters, digits, spaces and + - = . _ : / @."""
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 +-=._:/@")
    return "".join(ch if ch in allowed else " " for ch in text)[:256]
