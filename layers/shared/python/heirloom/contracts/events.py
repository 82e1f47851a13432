"""Story events on EventBridge: a versioned detail per detail-type, from a configurable source.

Every detail carries `schema_version` ("1") and may carry the source's `sequence` number.
Stories are ordered by their own `updated_at`, membership, relationship and link changes by the
envelope's `time`, each then by `sequence`, then the more restrictive state
(heirloom.domain.ordering); a delete (`deleted_at`) is final, kept as a tombstone even when it
arrives first; a removed membership or relationship is remembered (a late older add cannot bring
it back); a removed link stays as revoked. The other records are idempotent upserts: duplicates
and reordering are safe.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from heirloom.contracts.records import (
    AwareDatetime,
    Legacy,
    Link,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Story,
    User,
)

SCHEMA_VERSION = "1"
DEFAULT_SOURCE = "heirloom.stories"


class _Detail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["1"] = "1"
    #: the source's monotonic sequence number for the record, when it has one: orders two
    #: changes of the same time (EventBridge's `time` is to the second)
    sequence: int | None = Field(default=None, ge=0, le=2**63 - 1)


class StoryCreated(_Detail):
    kind: Literal["Story Created"] = "Story Created"
    story: Story


class StoryUpdated(_Detail):
    kind: Literal["Story Updated"] = "Story Updated"
    story: Story


class StoryDeleted(_Detail):
    kind: Literal["Story Deleted"] = "Story Deleted"
    story_id: UUID
    legacy_id: UUID
    deleted_at: AwareDatetime


class LegacyCreated(_Detail):
    kind: Literal["Legacy Created"] = "Legacy Created"
    legacy: Legacy


class PersonCreated(_Detail):
    kind: Literal["Person Created"] = "Person Created"
    person: Person


class UserCreated(_Detail):
    kind: Literal["User Created"] = "User Created"
    user: User


class RelationshipAdded(_Detail):
    kind: Literal["Relationship Added"] = "Relationship Added"
    relationship: Relationship


class RelationshipUpdated(_Detail):
    """The relationship's new state; `previous_type`, when its type changed, names the edge it
    replaces (a relationship is keyed by its two persons and its type)."""

    kind: Literal["Relationship Updated"] = "Relationship Updated"
    relationship: Relationship
    previous_type: RelationshipType | None = None


class RelationshipRemoved(_Detail):
    kind: Literal["Relationship Removed"] = "Relationship Removed"
    from_person_id: UUID
    to_person_id: UUID
    type: RelationshipType


class MemberAdded(_Detail):
    kind: Literal["Member Added"] = "Member Added"
    member: Member


class MemberRemoved(_Detail):
    kind: Literal["Member Removed"] = "Member Removed"
    legacy_id: UUID
    user_id: UUID


class LinkCreated(_Detail):
    kind: Literal["Link Created"] = "Link Created"
    link: Link


class LinkUpdated(_Detail):
    kind: Literal["Link Updated"] = "Link Updated"
    link: Link


class LinkRemoved(_Detail):
    """The link ends: kept as revoked with nothing shared (so a late create cannot revive it),
    its LINKED_TO edge dropped."""

    kind: Literal["Link Removed"] = "Link Removed"
    link_id: UUID
    legacy_a_id: UUID
    legacy_b_id: UUID


StoryEventDetail = Annotated[
    StoryCreated
    | StoryUpdated
    | StoryDeleted
    | LegacyCreated
    | PersonCreated
    | UserCreated
    | RelationshipAdded
    | RelationshipUpdated
    | RelationshipRemoved
    | MemberAdded
    | MemberRemoved
    | LinkCreated
    | LinkUpdated
    | LinkRemoved,
    Field(discriminator="kind"),
]
DETAIL_TYPES: tuple[str, ...] = (
    "Story Created",
    "Story Updated",
    "Story Deleted",
    "Legacy Created",
    "Person Created",
    "User Created",
    "Relationship Added",
    "Relationship Updated",
    "Relationship Removed",
    "Member Added",
    "Member Removed",
    "Link Created",
    "Link Updated",
    "Link Removed",
)
#: the detail model of each detail-type
_DETAIL: dict[str, type[_Detail]] = {
    model.model_fields["kind"].default: model
    for model in (StoryCreated, StoryUpdated, StoryDeleted, LegacyCreated, PersonCreated, UserCreated,
                  RelationshipAdded, RelationshipUpdated, RelationshipRemoved, MemberAdded, MemberRemoved,
                  LinkCreated, LinkUpdated, LinkRemoved)
}  # fmt: skip


class StoryEvent(BaseModel):
    """The EventBridge envelope fields we read."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    id: str
    source: str
    detail_type: str = Field(alias="detail-type")
    #: what orders the changes (domain/ordering.py): never from the future
    time: AwareDatetime
    detail: dict[str, Any]

    def parsed_detail(self) -> StoryEventDetail:
        """The typed detail; the detail-type selects the model (so an error's location starts in
        the detail: `story.title`, not the detail-type)."""
        detail: StoryEventDetail = _DETAIL[self.detail_type].model_validate(  # type: ignore[assignment]
            {**self.detail, "kind": self.detail_type}
        )
        return detail
