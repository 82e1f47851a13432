"""The one order in which access-changing records are applied, whatever order they arrive in.

Every change to a membership (add, role, removal), a link (status, share mode, share list) or a
story (visibility, legacy, content) carries a stamp: the event's time (a story's `updated_at`),
then the source's sequence number when it sends one (none sorts before any). The stored state
is the one with the greatest stamp; at an equal stamp, the more restrictive of the states seen
(a removal over an add, the lesser role, the more restrictive link status, the narrower share
list, the more restrictive visibility). So a redelivered or late event never undoes a later or
equal-time restriction, and the result does not depend on delivery order.

Relationships are ordered the same way, each keyed by its two persons and its type: the
envelope's time, then the sequence; at an equal stamp a removal wins, and of two versions a
fixed order of the fields decides (`relationship_order`). Removals are remembered, so a late
add or update never brings back a relationship removed at the same time or later; a changed
type (`previous_type`) is the removal of the old key and the add of the new one, both at the
update's stamp.

A deleted story stays deleted: its tombstone outlives any create or update of that id, older
or newer (a story restored at the source comes back under a new id).

Dataset memberships, relationships and links (`heirloom load`) carry no time: they apply only
where no story event has set the record (nor removed the membership or relationship); elsewhere they are skipped and
reported. Dataset stories carry their `updated_at` and follow the story rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from heirloom.contracts.records import Link, LinkStatus, Relationship, Role, ShareMode, Visibility


@dataclass(frozen=True, order=True)
class Stamp:
    """When a change happened: time, then the source's sequence (-1: none sent)."""

    at: datetime
    seq: int = -1

    @classmethod
    def of(cls, at: datetime | None, seq: int | None = None) -> Stamp | None:
        """None for a record without time (a dataset's)."""
        return None if at is None else cls(at, -1 if seq is None else seq)


class Verdict(StrEnum):
    APPLY = "apply"  # the incoming state replaces the stored one
    MERGE = "merge"  # equal stamps: keep the more restrictive of the two
    SKIP = "skip"  # the stored state is newer (or set by an event, for a dataset record)


def verdict(stored: Stamp | None, incoming: Stamp | None, *, exists: bool) -> Verdict:
    """How an incoming change meets the stored record (`stored`: its stamp, None when a dataset
    wrote it; `exists`: whether there is one)."""
    if not exists or stored is None:
        return Verdict.APPLY
    if incoming is None or incoming < stored:
        return Verdict.SKIP
    return Verdict.MERGE if incoming == stored else Verdict.APPLY


#: least to most privileged
ROLE_RANK = {Role.ADMIRER: 0, Role.ADVOCATE: 1, Role.ADMIN: 2, Role.CREATOR: 3}
#: least to most restrictive
STATUS_RANK = {LinkStatus.ACTIVE: 0, LinkStatus.PENDING: 1, LinkStatus.REVOKED: 2}
#: least to most restrictive (a personal story has at most one reader and never crosses a link)
VISIBILITY_RANK = {Visibility.PUBLIC: 0, Visibility.PRIVATE: 1, Visibility.PERSONAL: 2}


def lesser_role(a: Role, b: Role) -> Role:
    return a if ROLE_RANK[a] <= ROLE_RANK[b] else b


def narrower_link(stored: Link, incoming: Link) -> Link:
    """The more restrictive of two states of one link: the more restrictive status, and only
    what both share (all / all: all; all / a list: the list; two lists: what both list)."""
    status = stored.status if STATUS_RANK[stored.status] >= STATUS_RANK[incoming.status] else incoming.status
    selective = [x for x in (stored, incoming) if x.share_mode is ShareMode.SELECTIVE]
    lists = selective or [stored, incoming]  # with `all`, the lists are kept but not read
    common = set(lists[0].shared_story_ids).intersection(*(x.shared_story_ids for x in lists[1:]))
    return stored.model_copy(
        update={
            "status": status,
            "share_mode": ShareMode.SELECTIVE if selective else ShareMode.ALL,
            "shared_story_ids": tuple(sorted(common, key=str)),
        }
    )


def same_link_state(a: Link, b: Link) -> bool:
    return (a.legacy_a_id, a.legacy_b_id, a.status, a.share_mode, set(a.shared_story_ids)) == (
        b.legacy_a_id,
        b.legacy_b_id,
        b.status,
        b.share_mode,
        set(b.shared_story_ids),
    )


def relationship_order(rel: Relationship) -> tuple[str, str, str]:
    """A fixed order of two versions of one relationship with the same stamp: the greater
    stays (no field is more restrictive than another; the order only makes the end state
    independent of delivery order)."""
    return (rel.detail or "", rel.since or "", rel.until or "")


def relationship_applies(
    stored: Relationship | None,
    stored_stamp: Stamp | None,
    removed: Stamp | None,
    incoming: Relationship,
    stamp: Stamp | None,
) -> bool:
    """Whether an add or update of one relationship (`stamp`: None from a dataset) replaces
    the stored state: not after a removal at the same time or later (or any removal, for a
    dataset record), nor over a newer change; at an equal stamp the greater version stays."""
    if removed is not None and (stamp is None or stamp <= removed):
        return False
    match verdict(stored_stamp, stamp, exists=stored is not None):
        case Verdict.SKIP:
            return False
        case Verdict.MERGE if stored is not None:
            return relationship_order(incoming) >= relationship_order(stored)
    return True
