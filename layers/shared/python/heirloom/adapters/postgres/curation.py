"""Curation's records in PostgreSQL: merges (with what each changed), kept-apart pairs, graph
impact since the last community build, and community summaries per legacy and tier."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from heirloom.adapters.postgres.rows import StoreBase
from heirloom.contracts.curation import (
    CommunitySummary,
    ImpactState,
    MergeChanges,
    MergeRecord,
    RebuildKind,
    Tier,
)

_MERGE_COLUMNS = "id, legacy_id, label, survivor_id, absorbed_id, changes, merged_by, merged_at, unmerged_at"


def _merge(row: dict[str, Any]) -> MergeRecord:
    return MergeRecord(
        id=row["id"],
        legacy_id=row["legacy_id"],
        label=row["label"],
        survivor_id=row["survivor_id"],
        absorbed_id=row["absorbed_id"],
        changes=MergeChanges.model_validate(row["changes"]),
        merged_by=row["merged_by"],
        merged_at=row["merged_at"],
        unmerged_at=row["unmerged_at"],
    )


class PgCurationStore(StoreBase):
    def record_merge(self, merge: MergeRecord) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO entity_merges (id, legacy_id, label, survivor_id, absorbed_id, changes, merged_by)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    merge.id,
                    merge.legacy_id,
                    merge.label,
                    merge.survivor_id,
                    merge.absorbed_id,
                    Jsonb(merge.changes.model_dump(mode="json")),
                    merge.merged_by,
                ),
            )

    def get_merge(self, merge_id: UUID) -> MergeRecord | None:
        row = self._one(f"SELECT {_MERGE_COLUMNS} FROM entity_merges WHERE id = %s", (merge_id,))
        return _merge(row) if row else None

    def active_merges(self, legacy_id: UUID) -> list[MergeRecord]:
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_MERGE_COLUMNS} FROM entity_merges WHERE legacy_id = %s AND unmerged_at IS NULL"
                " ORDER BY merged_at, id",
                (legacy_id,),
            )
            .fetchall()
        )
        return [_merge(r) for r in rows]

    def mark_unmerged(self, merge_id: UUID, user_id: UUID) -> bool:
        with self.db.transaction() as conn:
            row = conn.execute(
                "UPDATE entity_merges SET unmerged_at = now(), unmerged_by = %s"
                " WHERE id = %s AND unmerged_at IS NULL RETURNING id",
                (user_id, merge_id),
            ).fetchone()
        return row is not None

    def keep_apart(self, legacy_id: UUID, a: str, b: str, user_id: UUID) -> None:
        first, second = sorted((a, b))
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO entity_keep_apart (legacy_id, entity_a, entity_b, decided_by)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (legacy_id, first, second, user_id),
            )

    def kept_apart(self, legacy_id: UUID) -> set[frozenset[str]]:
        rows = (
            self.db.connection()
            .execute("SELECT entity_a, entity_b FROM entity_keep_apart WHERE legacy_id = %s", (legacy_id,))
            .fetchall()
        )
        return {frozenset((r["entity_a"], r["entity_b"])) for r in rows}

    def record_impact(self, legacy_id: UUID, changes: int) -> None:
        if changes <= 0:
            return
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO graph_impact (legacy_id, impact) SELECT %s, %s"
                " WHERE EXISTS (SELECT 1 FROM legacies WHERE id = %s)"
                " ON CONFLICT (legacy_id) DO UPDATE SET impact = graph_impact.impact + EXCLUDED.impact",
                (legacy_id, changes, legacy_id),
            )

    def impact(self, legacy_id: UUID) -> ImpactState:
        row = self._one("SELECT impact, last_build FROM graph_impact WHERE legacy_id = %s", (legacy_id,))
        if row is None:
            return ImpactState(legacy_id=legacy_id)
        return ImpactState(legacy_id=legacy_id, impact=row["impact"], last_build=row["last_build"])

    def spend_impact(self, legacy_id: UUID, spent: int, build: RebuildKind) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO graph_impact (legacy_id, impact, last_build, last_built_at)"
                " VALUES (%s, 0, %s, now())"
                " ON CONFLICT (legacy_id) DO UPDATE SET impact = greatest(graph_impact.impact - %s, 0),"
                " last_build = EXCLUDED.last_build, last_built_at = now()",
                (legacy_id, build, spent),
            )

    def save_communities(self, legacy_id: UUID, tier: Tier, communities: Sequence[CommunitySummary]) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM communities WHERE legacy_id = %s AND tier = %s", (legacy_id, tier))
            for c in communities:
                conn.execute(
                    "INSERT INTO communities (legacy_id, tier, community_no, component_key, member_ids,"
                    " summary, story_ids) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        legacy_id,
                        tier,
                        c.number,
                        c.component_key,
                        list(c.member_ids),
                        c.summary,
                        list(c.story_ids),
                    ),
                )

    def communities(self, legacy_id: UUID, tier: Tier) -> list[CommunitySummary]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT community_no, component_key, member_ids, summary, story_ids FROM communities"
                " WHERE legacy_id = %s AND tier = %s ORDER BY community_no",
                (legacy_id, tier),
            )
            .fetchall()
        )
        return [
            CommunitySummary(
                legacy_id=legacy_id,
                tier=tier,
                number=r["community_no"],
                component_key=r["component_key"],
                member_ids=tuple(r["member_ids"]),
                summary=r["summary"],
                story_ids=tuple(r["story_ids"]),
            )
            for r in rows
        ]
