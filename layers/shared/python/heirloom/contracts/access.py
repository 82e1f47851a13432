"""What a user may read, as values: the grants of a read scope, and the fields of a story that
decide who may read it (resolved by heirloom.domain.access)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from heirloom.contracts.records import Role, Visibility


class Grant(BaseModel):
    """What a user may read of one legacy."""

    model_config = ConfigDict(frozen=True)

    legacy_id: UUID
    visibilities: frozenset[Visibility]
    #: personal stories of this legacy written by the reader (primary legacy only)
    own_personal: bool = False
    #: with a selective link, only these stories cross; None means no allowlist
    story_ids: frozenset[UUID] | None = None


class StoryMeta(BaseModel):
    """The fields of a story that decide who may read it, and its title."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    legacy_id: UUID
    author_user_id: UUID
    visibility: Visibility
    title: str = ""
    #: the author's display name (credits a narrator's account of a disputed fact)
    author_name: str = ""
    #: when the story was written or last updated (recency), not when its events happened
    updated_at: datetime | None = None
    #: when the story was created (a scope with `as_of` reads only stories created by then)
    created_at: datetime | None = None


class ReadScope(BaseModel):
    model_config = ConfigDict(frozen=True)

    user_id: UUID
    legacy_id: UUID
    role: Role
    grants: tuple[Grant, ...]
    #: legacies the user is a member of (any role): for known relationships in the graph
    member_legacy_ids: frozenset[UUID] = frozenset()
    #: a context "as of" a time: only stories created by then (None: now)
    as_of: datetime | None = None

    @property
    def legacy_ids(self) -> tuple[UUID, ...]:
        return tuple(g.legacy_id for g in self.grants)

    def allows(self, story: StoryMeta) -> bool:
        if self.as_of is not None and (story.created_at is None or story.created_at > self.as_of):
            return False
        for grant in self.grants:
            if grant.legacy_id != story.legacy_id:
                continue
            if grant.story_ids is not None and story.id not in grant.story_ids:
                continue
            if story.visibility in grant.visibilities:
                return True
            if (
                grant.own_personal
                and story.visibility is Visibility.PERSONAL
                and story.author_user_id == self.user_id
            ):
                return True
        return False


class KnownRelationship(BaseModel):
    """A stored relationship with its two persons' names and legacies (a known connection as
    the context shows it, and the legacies its permission rule reads)."""

    model_config = ConfigDict(frozen=True)

    from_person_id: UUID
    to_person_id: UUID
    type: str
    detail: str | None = None
    since: str | None = None
    until: str | None = None
    from_name: str
    from_legacy_id: UUID
    to_name: str
    to_legacy_id: UUID
