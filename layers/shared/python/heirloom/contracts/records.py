"""The records of a legacy, as docs/dataset-format.md defines them (and as story events carry them)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator


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


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL and the graph's query protocol ends a string at one
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return value


AwareDatetime = Annotated[datetime, AfterValidator(_aware)]
#: any text a record carries: stored in PostgreSQL and the graph as it is
Text = Annotated[str, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": "^[^\\u0000]*$"})]
Name = Annotated[Text, Field(min_length=1, max_length=300)]


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
    detail: Text | None = Field(default=None, max_length=300)
    since: Text | None = Field(default=None, max_length=100)
    until: Text | None = Field(default=None, max_length=100)


class Link(Record):
    id: UUID
    legacy_a_id: UUID
    legacy_b_id: UUID
    status: LinkStatus
    share_mode: ShareMode
    shared_story_ids: tuple[UUID, ...] = ()

    @model_validator(mode="after")
    def _two_legacies(self) -> Link:
        if self.legacy_a_id == self.legacy_b_id:
            raise ValueError("a link joins two different legacies")
        return self


#: Largest story body accepted (characters); larger content is refused, never truncated.
MAX_STORY_CHARS = 200_000


class Story(Record):
    id: UUID
    legacy_id: UUID
    author_user_id: UUID
    title: Name
    content: Text = Field(min_length=1, max_length=MAX_STORY_CHARS)
    visibility: Visibility
    created_at: AwareDatetime
    updated_at: AwareDatetime
