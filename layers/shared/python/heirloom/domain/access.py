"""The visibility rules of docs/dataset-format.md, in one place.

`resolve_scope` turns membership and links into a `ReadScope`; the scope is evaluated in
Python (`ReadScope.allows`) by the access filter and compiled to SQL by the vector index, so
both apply the same grants.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from heirloom.contracts.access import Grant, ReadScope
from heirloom.contracts.records import READS_PRIVATE, Link, LinkStatus, Role, ShareMode, Visibility
from heirloom.errors import AccessDenied

#: a user who is not a member of the legacy being read is refused
NotAMember = AccessDenied


def not_a_member(user_id: UUID, legacy_id: UUID) -> AccessDenied:
    """The refusal of a non-member, the same whether the legacy exists or not (so it does not
    tell a stranger which legacy ids are in use)."""
    return NotAMember(f"user {user_id} is not a member of legacy {legacy_id}")


#: the visibilities a role may give a story it writes (docs/decisions/0021): those the role
#: reads, so no member publishes to readers above their own and loses sight of their story
CREATES: dict[Role, frozenset[Visibility]] = {
    role: frozenset({Visibility.PUBLIC, Visibility.PERSONAL})
    | ({Visibility.PRIVATE} if role in READS_PRIVATE else set())
    for role in Role
}


def require_may_create(role: Role, visibility: Visibility) -> None:
    """AccessDenied, with the visibilities the role may choose, unless `role` may give a story
    it writes `visibility`."""
    if visibility not in CREATES[role]:
        allowed = ", ".join(sorted(v.value for v in CREATES[role]))
        raise AccessDenied(
            f"a legacy's {role.value} may not create a {visibility.value} story; choose {allowed}"
        )


def resolve_scope(
    *,
    user_id: UUID,
    legacy_id: UUID,
    role: Role | None,
    links: Iterable[Link],
    member_legacy_ids: Iterable[UUID] = (),
) -> ReadScope:
    """Grants for `user_id` reading `legacy_id` with `role` there (None: not a member)."""
    if role is None:
        raise not_a_member(user_id, legacy_id)
    readable = (
        frozenset({Visibility.PUBLIC, Visibility.PRIVATE})
        if role in READS_PRIVATE
        else frozenset({Visibility.PUBLIC})
    )
    grants = [Grant(legacy_id=legacy_id, visibilities=readable, own_personal=True)]
    for link in links:
        other = link.other_side(legacy_id)
        if link.status is not LinkStatus.ACTIVE or other is None:
            continue
        allowlist = frozenset(link.shared_story_ids) if link.share_mode is ShareMode.SELECTIVE else None
        # personal stories never cross a link, not even to their author
        grants.append(Grant(legacy_id=other, visibilities=readable, story_ids=allowlist))
    members = frozenset(member_legacy_ids) | {legacy_id}
    return ReadScope(
        user_id=user_id, legacy_id=legacy_id, role=role, grants=tuple(grants), member_legacy_ids=members
    )
