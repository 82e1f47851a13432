"""heirloom.domain.ordering: the stamp order, the verdicts, and the tie rules, which must give
the same state whatever order equal-time changes arrive in."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from heirloom.contracts.records import Link, LinkStatus, Role, ShareMode
from heirloom.domain.ordering import (
    ROLE_RANK,
    STATUS_RANK,
    Stamp,
    Verdict,
    lesser_role,
    narrower_link,
    same_link_state,
    verdict,
)

T = datetime(2024, 5, 1, tzinfo=UTC)
STORIES = [UUID(int=i) for i in range(1, 6)]


def test_time_then_sequence_and_no_sequence_first():
    assert Stamp.of(T) < Stamp.of(T, 0) < Stamp.of(T, 1) < Stamp.of(T + timedelta(seconds=1))
    assert Stamp.of(None) is None


def test_verdicts():
    at, later = Stamp(T), Stamp(T, 5)
    assert verdict(None, at, exists=False) is Verdict.APPLY
    assert verdict(None, at, exists=True) is Verdict.APPLY  # a dataset wrote it: any event is newer
    assert verdict(at, None, exists=True) is Verdict.SKIP  # a dataset record never overrides an event
    assert verdict(None, None, exists=True) is Verdict.APPLY  # dataset over dataset: the last load
    assert verdict(later, at, exists=True) is Verdict.SKIP
    assert verdict(at, at, exists=True) is Verdict.MERGE
    assert verdict(at, later, exists=True) is Verdict.APPLY


links = st.builds(
    Link,
    id=st.just(UUID(int=99)),
    legacy_a_id=st.just(UUID(int=100)),
    legacy_b_id=st.just(UUID(int=101)),
    status=st.sampled_from(list(LinkStatus)),
    share_mode=st.sampled_from(list(ShareMode)),
    shared_story_ids=st.lists(st.sampled_from(STORIES), unique=True, max_size=4).map(tuple),
)


@given(links, links, links)
def test_equal_time_link_states_meet_in_any_order(a, b, c):
    ab_c = narrower_link(narrower_link(a, b), c)
    for other in (narrower_link(narrower_link(c, b), a), narrower_link(a, narrower_link(c, b))):
        assert same_link_state(ab_c, other)
    assert same_link_state(narrower_link(a, a), a)


@given(links, links)
def test_the_meet_never_grants_more_than_either_state(a, b):
    m = narrower_link(a, b)
    assert STATUS_RANK[m.status] == max(STATUS_RANK[a.status], STATUS_RANK[b.status])
    for x in (a, b):
        if x.share_mode is ShareMode.SELECTIVE:
            assert m.share_mode is ShareMode.SELECTIVE and set(m.shared_story_ids) <= set(x.shared_story_ids)


@given(st.sampled_from(list(Role)), st.sampled_from(list(Role)))
def test_the_lesser_role(a, b):
    assert lesser_role(a, b) == lesser_role(b, a)
    assert ROLE_RANK[lesser_role(a, b)] == min(ROLE_RANK[a], ROLE_RANK[b])
