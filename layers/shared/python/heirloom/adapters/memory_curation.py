"""Curation's records in memory, for the unit tier (the PostgreSQL store's behaviour)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from heirloom.contracts.curation import (
    CommunitySummary,
    GraphChange,
    ImpactState,
    MergeRecord,
    RebuildKind,
    StagedItem,
    StagedStatus,
    Tier,
)
from heirloom.contracts.extraction import ExtractedEntities
from heirloom.domain.names import name_key


class MemoryCurationStore:
    def __init__(self) -> None:
        self.merges: dict[UUID, MergeRecord] = {}
        self.apart: dict[UUID, set[frozenset[str]]] = {}
        self.impacts: dict[UUID, ImpactState] = {}
        self.summaries: dict[tuple[UUID, Tier], list[CommunitySummary]] = {}
        self.staging_on: set[UUID] = set()
        self.extractions: dict[UUID, tuple[str, str, ExtractedEntities]] = {}
        self.items: dict[UUID, StagedItem] = {}
        self.log: list[GraphChange] = []

    def record_merge(self, merge: MergeRecord) -> None:
        self.merges[merge.id] = merge.model_copy(update={"merged_at": datetime.now(UTC)})

    def get_merge(self, merge_id: UUID) -> MergeRecord | None:
        return self.merges.get(merge_id)

    def active_merges(self, legacy_id: UUID) -> list[MergeRecord]:
        return [m for m in self.merges.values() if m.legacy_id == legacy_id and m.unmerged_at is None]

    def mark_unmerged(self, merge_id: UUID, user_id: UUID) -> bool:
        merge = self.merges.get(merge_id)
        if merge is None or merge.unmerged_at is not None:
            return False
        self.merges[merge_id] = merge.model_copy(update={"unmerged_at": datetime.now(UTC)})
        return True

    def keep_apart(self, legacy_id: UUID, a: str, b: str, user_id: UUID) -> None:
        self.apart.setdefault(legacy_id, set()).add(frozenset((a, b)))

    def kept_apart(self, legacy_id: UUID) -> set[frozenset[str]]:
        return set(self.apart.get(legacy_id, set()))

    def record_impact(self, legacy_id: UUID, changes: int) -> None:
        if changes > 0:
            state = self.impact(legacy_id)
            self.impacts[legacy_id] = state.model_copy(update={"impact": state.impact + changes})

    def impact(self, legacy_id: UUID) -> ImpactState:
        return self.impacts.get(legacy_id, ImpactState(legacy_id=legacy_id))

    def spend_impact(self, legacy_id: UUID, spent: int, build: RebuildKind) -> None:
        left = max(self.impact(legacy_id).impact - spent, 0)
        self.impacts[legacy_id] = ImpactState(legacy_id=legacy_id, impact=left, last_build=build)

    def save_communities(self, legacy_id: UUID, tier: Tier, communities: Sequence[CommunitySummary]) -> None:
        self.summaries[(legacy_id, tier)] = list(communities)

    def communities(self, legacy_id: UUID, tier: Tier) -> list[CommunitySummary]:
        return list(self.summaries.get((legacy_id, tier), []))

    # -- staging --
    def staging_enabled(self, legacy_id: UUID) -> bool:
        return legacy_id in self.staging_on

    def set_staging(self, legacy_id: UUID, enabled: bool) -> None:
        (self.staging_on.add if enabled else self.staging_on.discard)(legacy_id)

    def save_extraction(self, story_id: UUID, digest: str, version: str, entities: ExtractedEntities) -> None:
        self.extractions[story_id] = (digest, version, entities)

    def extraction(self, story_id: UUID) -> tuple[str, str, ExtractedEntities] | None:
        return self.extractions.get(story_id)

    def stage(self, story_id: UUID, digest: str, items: Sequence[StagedItem]) -> None:
        for key, old in list(self.items.items()):
            if old.story_id == story_id and old.content_hash != digest and old.status == "pending":
                del self.items[key]
        for staged in items:
            if staged.id in self.items:
                continue
            item = staged
            earlier = [
                i
                for i in self.items.values()
                if (i.story_id, i.label, name_key(i.name)) == (item.story_id, item.label, name_key(item.name))
                and i.status == "approved"
            ]
            if earlier:
                last = max(earlier, key=lambda i: i.decided_at or datetime.min.replace(tzinfo=UTC))
                item = item.model_copy(
                    update={
                        "status": "approved",
                        "final_name": last.final_name,
                        "final_type": last.final_type,
                        "decided_by": last.decided_by,
                        "decided_at": last.decided_at,
                    }
                )
            self.items[item.id] = item

    def staged_of_story(self, story_id: UUID, digest: str) -> list[StagedItem]:
        return [i for i in self.items.values() if i.story_id == story_id and i.content_hash == digest]

    def staged(self, legacy_id: UUID, status: StagedStatus | None = None) -> list[StagedItem]:
        return [i for i in self.items.values() if i.legacy_id == legacy_id and status in (None, i.status)]

    def get_staged(self, item_id: UUID) -> StagedItem | None:
        return self.items.get(item_id)

    def decide(self, item: StagedItem) -> None:
        self.items[item.id] = item.model_copy(update={"decided_at": datetime.now(UTC)})

    # -- changelog --
    def record_change(self, change: GraphChange) -> None:
        self.log.append(change.model_copy(update={"id": len(self.log) + 1, "at": datetime.now(UTC)}))

    def changes(self, legacy_id: UUID, *, before: int | None = None, limit: int = 50) -> list[GraphChange]:
        found = [
            c
            for c in reversed(self.log)
            if c.legacy_id == legacy_id and (before is None or (c.id or 0) < before)
        ]
        return found[:limit]
