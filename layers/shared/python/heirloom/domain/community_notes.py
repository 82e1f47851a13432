"""The community summaries a context may carry: for the `general` intent ("sum up her life"),
those of the tier the user's role reads, each kept only when every story it was built from is
one the user may read (fails closed: one unreadable story drops the summary, cited or not; the
first `MAX_STORIES` are cited as its provenance)."""

from __future__ import annotations

from uuid import UUID

from heirloom.contracts.access import ReadScope
from heirloom.contracts.context import CommunityNote, ContextRequest, FilteredContext, Intent
from heirloom.contracts.curation import Tier
from heirloom.contracts.records import Visibility
from heirloom.domain.communities import MAX_STORIES
from heirloom.ports import AccessReads, CurationStore


def wants_communities(request: ContextRequest, filtered: FilteredContext) -> bool:
    return filtered.intent.intent is Intent.GENERAL and request.mode != "vector" and request.graph_enabled


def tier_of(scope: ReadScope) -> Tier:
    primary = next((g for g in scope.grants if g.legacy_id == scope.legacy_id), None)
    return "private" if primary is not None and Visibility.PRIVATE in primary.visibilities else "public"


def readable_communities(
    curation: CurationStore, records: AccessReads, scope: ReadScope, limit: int
) -> tuple[CommunityNote, ...]:
    """The largest `limit` summaries of the user's tier whose stories the user may all read."""
    found = curation.communities(scope.legacy_id, tier_of(scope))
    ids: set[UUID] = {s for c in found for s in c.story_ids}
    metas = {m.id: m for m in records.story_meta(ids)}
    notes = []
    for c in sorted(found, key=lambda c: (-len(c.story_ids), c.number)):
        if not c.story_ids or not all(s in metas and scope.allows(metas[s]) for s in c.story_ids):
            continue
        cited = c.story_ids[:MAX_STORIES]
        notes.append(
            CommunityNote(summary=c.summary, story_ids=cited, titles=tuple(metas[s].title for s in cited))
        )
        if len(notes) == limit:
            break
    return tuple(notes)
