"""Curation's records in PostgreSQL: merges (with what each changed), kept-apart pairs, graph
impact since the last community build, community summaries per legacy and tier, staged entities
with their decisions, and the changelog."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from heirloom.adapters.postgres.rows import StoreBase
from heirloom.contracts.curation import (
    CommunitySummary,
    GraphChange,
    ImpactState,
    MergeChanges,
    MergeRecord,
    RebuildKind,
    StagedItem,
    StagedStatus,
    Tier,
)
from heirloom.contracts.extraction import ExtractedEntities

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


_STAGED_COLUMNS = (
    "id, legacy_id, story_id, content_hash, label, name, type, sentences, status, final_name, final_type,"
    " decided_by, decided_at"
)


def _staged(row: dict[str, Any]) -> StagedItem:
    return StagedItem(**{**row, "sentences": tuple(row["sentences"])})


def _change(row: dict[str, Any]) -> GraphChange:
    return GraphChange(**row)


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

    # -- staging --
    def staging_enabled(self, legacy_id: UUID) -> bool:
        row = self._one("SELECT staging FROM legacies WHERE id = %s", (legacy_id,))
        return bool(row and row["staging"])

    def set_staging(self, legacy_id: UUID, enabled: bool) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE legacies SET staging = %s WHERE id = %s", (enabled, legacy_id))

    def save_extraction(self, story_id: UUID, digest: str, version: str, entities: ExtractedEntities) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO staged_extractions (story_id, content_hash, extractor_version, entities)"
                " SELECT %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM stories WHERE id = %s)"
                " ON CONFLICT (story_id) DO UPDATE SET content_hash = EXCLUDED.content_hash,"
                " extractor_version = EXCLUDED.extractor_version, entities = EXCLUDED.entities",
                (story_id, digest, version, Jsonb(entities.model_dump(mode="json")), story_id),
            )

    def extraction(self, story_id: UUID) -> tuple[str, str, ExtractedEntities] | None:
        row = self._one(
            "SELECT content_hash, extractor_version, entities FROM staged_extractions WHERE story_id = %s",
            (story_id,),
        )
        if row is None:
            return None
        return (
            row["content_hash"],
            row["extractor_version"],
            ExtractedEntities.model_validate(row["entities"]),
        )

    def stage(self, story_id: UUID, digest: str, items: Sequence[StagedItem]) -> None:
        from heirloom.domain.names import name_key

        with self.db.transaction() as conn:
            conn.execute(
                "DELETE FROM staged_entities WHERE story_id = %s AND content_hash <> %s AND status = 'pending'",
                (story_id, digest),
            )
            for i in items:
                # an approval of the same label and name in this story's earlier text carries over
                conn.execute(
                    "INSERT INTO staged_entities (id, legacy_id, story_id, content_hash, label, name_key, name,"
                    " type, sentences, status, final_name, final_type, decided_by, decided_at)"
                    " SELECT %(id)s, %(legacy_id)s, %(story_id)s, %(content_hash)s, %(label)s, %(key)s,"
                    " %(name)s, %(type)s, %(sentences)s, coalesce(a.status, 'pending'), a.final_name,"
                    " a.final_type, a.decided_by, a.decided_at"
                    " FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT status, final_name, final_type, decided_by,"
                    " decided_at FROM staged_entities WHERE story_id = %(story_id)s AND label = %(label)s"
                    " AND name_key = %(key)s AND status = 'approved' ORDER BY decided_at DESC LIMIT 1) a ON true"
                    " WHERE EXISTS (SELECT 1 FROM stories WHERE id = %(story_id)s)"
                    " ON CONFLICT DO NOTHING",
                    {
                        "id": i.id,
                        "legacy_id": i.legacy_id,
                        "story_id": i.story_id,
                        "content_hash": i.content_hash,
                        "label": i.label,
                        "key": name_key(i.name),
                        "name": i.name,
                        "type": i.type,
                        "sentences": list(i.sentences),
                    },
                )

    def staged_of_story(self, story_id: UUID, digest: str) -> list[StagedItem]:
        return self._staged_rows(
            "story_id = %s AND content_hash = %s ORDER BY staged_at, id", (story_id, digest)
        )

    def staged(self, legacy_id: UUID, status: StagedStatus | None = None) -> list[StagedItem]:
        if status is None:
            return self._staged_rows("legacy_id = %s ORDER BY staged_at, id", (legacy_id,))
        return self._staged_rows("legacy_id = %s AND status = %s ORDER BY staged_at, id", (legacy_id, status))

    def get_staged(self, item_id: UUID) -> StagedItem | None:
        found = self._staged_rows("id = %s", (item_id,))
        return found[0] if found else None

    def _staged_rows(self, where: str, params: tuple[Any, ...]) -> list[StagedItem]:
        rows = (
            self.db.connection()
            .execute(f"SELECT {_STAGED_COLUMNS} FROM staged_entities WHERE {where}", params)
            .fetchall()
        )
        return [_staged(r) for r in rows]

    def decide(self, item: StagedItem) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE staged_entities SET status = %s, final_name = %s, final_type = %s, decided_by = %s,"
                " decided_at = now() WHERE id = %s",
                (item.status, item.final_name, item.final_type, item.decided_by, item.id),
            )

    # -- changelog --
    def record_change(self, change: GraphChange) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO graph_changes (legacy_id, source, story_id, actor_id, action, detail)"
                " SELECT %s, %s, %s, %s, %s, %s WHERE EXISTS (SELECT 1 FROM legacies WHERE id = %s)",
                (
                    change.legacy_id,
                    change.source,
                    change.story_id,
                    change.actor_id,
                    change.action,
                    Jsonb(change.detail),
                    change.legacy_id,
                ),
            )

    def changes(self, legacy_id: UUID, *, before: int | None = None, limit: int = 50) -> list[GraphChange]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, at, source, story_id, actor_id, action, detail FROM graph_changes"
                " WHERE legacy_id = %s AND (%s::bigint IS NULL OR id < %s) ORDER BY id DESC LIMIT %s",
                (legacy_id, before, before, limit),
            )
            .fetchall()
        )
        return [_change(r) for r in rows]
