"""Whether the asker's kin word names a linked legacy's subject (decision 0027): "what did my
mother write" said by the daughter of a linked legacy's subject asks for that subject's own
account, as "what did Mina write" does when the gazetteer finds her name.

Only records decide it, never a story: the asked legacy's links, each linked legacy's subject
and the recorded relationships the kin word was followed through. An active or a revoked link
counts (both sides accepted it; the question is about that person whatever the link's state
now), a pending one does not (the other side never agreed). The label opens nothing: the read
scope and the cross-legacy traversal follow active links only (AccessFilter, `graph_queries`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

from heirloom.contracts.records import LinkStatus, Person
from heirloom.ports import StoryStore

#: the link states whose other legacy's subject a question can be about
COUNTED: frozenset[LinkStatus] = frozenset({LinkStatus.ACTIVE, LinkStatus.REVOKED})


def linked_legacies(
    store: StoryStore, legacy_id: UUID, statuses: frozenset[LinkStatus] = frozenset({LinkStatus.ACTIVE})
) -> list[UUID]:
    """The legacies linked to `legacy_id` by a link of these statuses, in link order; by default
    the actively linked ones (what the read scope, the gazetteer and the asker's relatives reach)."""
    return [
        other
        for link in store.links_of(legacy_id)
        if link.status in statuses and (other := link.other_side(legacy_id)) is not None
    ]


def subjects_of(store: StoryStore, legacy_ids: Iterable[UUID]) -> list[UUID]:
    """The subject person ids of these legacies, in their order (a legacy not stored has none)."""
    return [lg.subject_person_id for lg in map(store.get_legacy, legacy_ids) if lg is not None]


def linked_subjects(store: StoryStore, legacy_id: UUID) -> tuple[UUID, ...]:
    """The subject person ids of the legacies linked to `legacy_id` by an active or revoked link."""
    return tuple(dict.fromkeys(subjects_of(store, linked_legacies(store, legacy_id, COUNTED))))


def names_linked_subject(kin: Sequence[Person], subjects: Sequence[UUID]) -> bool:
    """Whether one of the people the asker's kin words resolved to is a linked subject."""
    return any(p.id in subjects for p in kin)
