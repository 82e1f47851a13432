"""The records of a legacy, as FORMAT.md defines them (and as story events carry them)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


class Role(StrEnum):
    CREATOR = "creator"
    ADMIN = "admin"
    ADVOCATE = "advocate"
    ADMIRER = "admirer"


#: Roles that read a legacy's private stories.
READS_PRIVATE = frozenset({Role.CREATOR, Role.ADMIN, Role.ADVOCATE})


class Visibility(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    PERSONAL = "personal"


class RelationshipType(StrEnum):
    FAMILY_OF = "FAMILY_OF"
    KNEW = "KNEW"
    WORKED_WITH = "WORKED_WITH"
    FRIENDS_WITH = "FRIENDS_WITH"


class LinkStatus(StrEnum):
    ACTIVE = "active"
    PENDING = "pending"
    REVOKED = "revoked"


class ShareMode(StrEnum):
    ALL = "all"
    SELECTIVE = "selective"


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp must carry a timezone")
    return value


AwareDatetime = Annotated[datetime, AfterValidator(_aware)]
Name = Annotated[str, Field(min_length=1, max_length=300)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Legacy(Record):
    id: UUID
    name: Name
    subject_person_id: UUID


class Person(Record):
    id: UUID
    legacy_id: UUID
    name: Name
    aliases: tuple[Name, ...] = ()
    birth_year: int | None = Field(default=None, ge=1000, le=2200)
    death_year: int | None = Field(default=None, ge=1000, le=2200)


class User(Record):
    id: UUID
    name: Name
    person_id: UUID | None = None


class Member(Record):
    legacy_id: UUID
    user_id: UUID
    role: Role


class Relationship(Record):
    from_person_id: UUID
    to_person_id: UUID
    type: RelationshipType
    detail: str | None = Field(default=None, max_length=300)
    since: str | None = Field(default=None, max_length=100)
    until: str | None = Field(default=None, max_length=100)


class Link(Record):
    id: UUID
    legacy_a_id: UUID
    legacy_b_id: UUID
    status: LinkStatus
    share_mode: ShareMode
    shared_story_ids: tuple[UUID, ...] = ()


#: Largest story body accepted (characters); larger content is refused, never truncated.
MAX_STORY_CHARS = 200_000


class Story(Record):
    id: UUID
    legacy_id: UUID
    author_user_id: UUID
    title: Name
    content: str = Field(min_length=1, max_length=MAX_STORY_CHARS)
    visibility: Visibility
    created_at: AwareDatetime
    updated_at: AwareDatetime
