"""Routing story events to the ingestion path shared with S3 imports and `heirloom load`."""

from __future__ import annotations

from pydantic import ValidationError

from heirloom.contracts.events import (
    StoryEvent,
    StoryEventDetail,
)
from heirloom.edges import parse, reason
from heirloom.errors import InvalidRequest


def parse_detail(event: StoryEvent) -> StoryEventDetail:
    try:
        return event.parsed_detail()
    except ValidationError as exc:
        raise InvalidRequest(f"{event.detail_type}: {reason(exc)}") from exc


def parse_event(raw: object) -> StoryEvent:
    return parse(StoryEvent, raw)
