"""Curation's records in memory, for the unit tier (the PostgreSQL store's behaviour)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from heirloom.contracts.curation import CommunitySummary, ImpactState, MergeRecord, RebuildKind, Tier


class MemoryCurationStore:
    def __init__(self) -> None:
        self.merges: dict[UUID, MergeRecord] = {}
        self.apart: dict[UUID, set[frozenset[str]]] = {}
        self.impacts: dict[UUID, ImpactState] = {}
        self.summaries: dict[tuple[UUID, Tier], list[CommunitySummary]] = {}

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
