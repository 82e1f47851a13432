"""The visibility rules of docs/dataset-format.md, role by role and link state by link state."""

from uuid import uuid4

import pytest

from heirloom.contracts.access import StoryMeta
from heirloom.contracts.records import Link, LinkStatus, Role, ShareMode, Visibility
from heirloom.domain.access import NotAMember, resolve_scope

USER, OTHER = uuid4(), uuid4()
L, M = uuid4(), uuid4()


def story(legacy, visibility, author=OTHER, sid=None):
    return StoryMeta(id=sid or uuid4(), legacy_id=legacy, author_user_id=author, visibility=visibility)


def link(status=LinkStatus.ACTIVE, mode=ShareMode.ALL, shared=()):
    return Link(
        id=uuid4(), legacy_a_id=M, legacy_b_id=L, status=status, share_mode=mode, shared_story_ids=shared
    )


@pytest.mark.parametrize("role", [Role.CREATOR, Role.ADMIN, Role.ADVOCATE])
def test_trusted_roles_read_public_private_and_own_personal(role):
    scope = resolve_scope(user_id=USER, legacy_id=L, role=role, links=[])
    assert scope.allows(story(L, Visibility.PUBLIC))
    assert scope.allows(story(L, Visibility.PRIVATE))
    assert scope.allows(story(L, Visibility.PERSONAL, author=USER))
    assert not scope.allows(story(L, Visibility.PERSONAL))


def test_admirer_reads_public_and_own_personal_only():
    scope = resolve_scope(user_id=USER, legacy_id=L, role=Role.ADMIRER, links=[])
    assert scope.allows(story(L, Visibility.PUBLIC))
    assert not scope.allows(story(L, Visibility.PRIVATE))
    assert scope.allows(story(L, Visibility.PERSONAL, author=USER))
    assert not scope.allows(story(L, Visibility.PERSONAL))


def test_non_member_is_refused():
    with pytest.raises(NotAMember):
        resolve_scope(user_id=USER, legacy_id=L, role=None, links=[])


@pytest.mark.parametrize("role,private_crosses", [(Role.ADVOCATE, True), (Role.ADMIRER, False)])
def test_active_all_link_respects_the_role_in_the_reading_legacy(role, private_crosses):
    scope = resolve_scope(user_id=USER, legacy_id=L, role=role, links=[link()])
    assert scope.allows(story(M, Visibility.PUBLIC))
    assert scope.allows(story(M, Visibility.PRIVATE)) is private_crosses
    # personal stories never cross, not even to their author
    assert not scope.allows(story(M, Visibility.PERSONAL, author=USER))


def test_selective_link_carries_only_listed_stories():
    shared = uuid4()
    scope = resolve_scope(
        user_id=USER, legacy_id=L, role=Role.CREATOR, links=[link(mode=ShareMode.SELECTIVE, shared=(shared,))]
    )
    assert scope.allows(story(M, Visibility.PUBLIC, sid=shared))
    assert not scope.allows(story(M, Visibility.PUBLIC))


@pytest.mark.parametrize("status", [LinkStatus.PENDING, LinkStatus.REVOKED])
def test_inactive_links_carry_nothing(status):
    scope = resolve_scope(user_id=USER, legacy_id=L, role=Role.CREATOR, links=[link(status=status)])
    assert not scope.allows(story(M, Visibility.PUBLIC))
    assert scope.legacy_ids == (L,)


def test_unrelated_legacy_is_never_readable():
    scope = resolve_scope(user_id=USER, legacy_id=L, role=Role.CREATOR, links=[link()])
    assert not scope.allows(story(uuid4(), Visibility.PUBLIC))
