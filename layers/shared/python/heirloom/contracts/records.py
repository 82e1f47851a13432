"""The records of a legacy, as docs/dataset-format.md defines them (and as story events carry them)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)


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


#: how far past this machine's clock a record's timestamp may be (producers' clocks differ)
CLOCK_SKEW = timedelta(days=1)
#: the earliest timestamp a record may carry: an earlier one, with a zone east of UTC, is a BC
#: date in PostgreSQL, which psycopg cannot read back
EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)


def plausible_time(value: datetime) -> datetime:
    """A timestamp that can have happened: changes are ordered by time, and one from the future
    would make every later, real change look older (and be skipped) until then."""
    if value < EARLIEST:
        raise ValueError("timestamp is before the year 1000")
    if value > datetime.now(UTC) + CLOCK_SKEW:
        raise ValueError("timestamp is in the future (more than a day past now)")
    return value


def _no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL and the graph's query protocol ends a string at one
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return value


#: what `str.strip()` removes, spelled out so the API schema's pattern and the check agree
_SPACE = "\\t\\n\\u000b\\f\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
#: characters that show nothing (zero-width spaces and joiners, word joiner, BOM): text made
#: only of them and whitespace is blank too
_INVISIBLE = "\\u180e\\u200b-\\u200d\\u2060\\ufeff"
_SAYS_SOMETHING = re.compile(f"[^\\u0000{_SPACE}{_INVISIBLE}]")


def _not_blank(value: str) -> str:
    if not _SAYS_SOMETHING.search(value):
        raise ValueError("text must not be blank (only whitespace)")
    return value


_NO_NUL = Field(json_schema_extra={"pattern": "^[^\\u0000]*$"})
_NON_BLANK = Field(json_schema_extra={"pattern": f"^[^\\u0000]*[^\\u0000{_SPACE}{_INVISIBLE}][^\\u0000]*$"})
AwareDatetime = Annotated[datetime, AfterValidator(_aware), AfterValidator(plausible_time)]
#: any text a record carries: stored in PostgreSQL and the graph as it is. Length limits go
#: before the validators (as in `Name`), else pydantic reports them in "items", not characters.
Text = Annotated[str, AfterValidator(_no_nul), _NO_NUL]
#: text that must say something: not empty, not only whitespace
NonBlankText = Annotated[str, AfterValidator(_no_nul), AfterValidator(_not_blank), _NON_BLANK]
#: a relationship's detail ("mother") and its years ("1952"): when given, not blank
Detail = Annotated[
    str, StringConstraints(max_length=300), AfterValidator(_no_nul), AfterValidator(_not_blank), _NON_BLANK
]
Period = Annotated[
    str, StringConstraints(max_length=100), AfterValidator(_no_nul), AfterValidator(_not_blank), _NON_BLANK
]
#: a name or title: 1-300 characters, not only whitespace
Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=300),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
    _NON_BLANK,
]


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
    detail: Detail | None = None
    since: Period | None = None
    until: Period | None = None

    @field_validator("to_person_id")
    @classmethod
    def _two_persons(cls, value: UUID, info: ValidationInfo) -> UUID:
        if value == info.data.get("from_person_id"):
            raise ValueError("a relationship joins two different persons")
        return value


class Link(Record):
    id: UUID
    legacy_a_id: UUID
    legacy_b_id: UUID
    status: LinkStatus
    share_mode: ShareMode
    shared_story_ids: tuple[UUID, ...] = ()

    @field_validator("legacy_b_id")
    @classmethod
    def _two_legacies(cls, value: UUID, info: ValidationInfo) -> UUID:
        if value == info.data.get("legacy_a_id"):
            raise ValueError("a link joins two different legacies")
        return value

    def other_side(self, legacy_id: UUID) -> UUID | None:
        """The legacy this link joins `legacy_id` to; None when `legacy_id` is neither side."""
        if legacy_id == self.legacy_a_id:
            return self.legacy_b_id
        return self.legacy_a_id if legacy_id == self.legacy_b_id else None


#: Largest story body accepted (characters); larger content is refused, never truncated.
MAX_STORY_CHARS = 200_000
#: a story's body: 1-200,000 characters, not only whitespace
StoryContent = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_STORY_CHARS),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
    _NON_BLANK,
]


class Story(Record):
    id: UUID
    legacy_id: UUID
    author_user_id: UUID
    title: Name
    content: StoryContent
    visibility: Visibility
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @field_validator("updated_at")
    @classmethod
    def _not_before_created(cls, value: datetime, info: ValidationInfo) -> datetime:
        created = info.data.get("created_at")
        if created is not None and value < created:
            raise ValueError("updated_at is earlier than created_at")
        return value
