"""EventBridge story events built for tests, as our producer sends them."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

from heirloom.contracts.events import StoryEvent
from heirloom.settings import Settings

AT = datetime(2024, 5, 1, tzinfo=UTC).isoformat()


def story_created(
    story_id: UUID,
    legacy_id: UUID,
    author_id: UUID,
    title: str,
    content: str,
    visibility: str = "public",
) -> StoryEvent:
    """A `Story Created` event for a story written on 2024-05-01."""
    story = {
        "id": str(story_id),
        "legacy_id": str(legacy_id),
        "author_user_id": str(author_id),
        "title": title,
        "content": content,
        "visibility": visibility,
        "created_at": AT,
        "updated_at": AT,
    }
    return StoryEvent.model_validate(
        {
            "version": "0",
            "id": str(uuid4()),
            "source": Settings().workflow.event_source,
            "account": "123456789012",
            "time": AT,
            "region": "us-east-1",
            "resources": [],
            "detail-type": "Story Created",
            "detail": {"schema_version": "1", "story": story},
        }
    )
