"""The processing ledger (what is indexed and graph-synced, for which content, model and
extractor) and the ingestion failure log."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from psycopg.types.json import Jsonb

from heirloom.adapters.postgres.rows import (
    StoreBase,
)
from heirloom.contracts.extraction import NamedThing


class ProcessingLedger(StoreBase):
    def graph_synced(self, story_id: UUID) -> tuple[str, str] | None:
        row = self._one(
            "SELECT graph_hash, extractor_version FROM story_processing WHERE story_id = %s AND graph_hash IS NOT NULL",
            (story_id,),
        )
        return (row["graph_hash"], row["extractor_version"] or "") if row else None

    @contextmanager
    def story_graph_lock(self, story_id: UUID) -> Iterator[None]:
        """A transaction-level advisory lock keyed by the story (Aurora has them; RDS Proxy pins
        nothing beyond the transaction), on the database's lock connection: the writes made
        meanwhile commit on their own, as they would without it."""
        with self.db.hold(f"story-graph:{story_id}"):
            yield

    def mark_graph_synced(
        self, story_id: UUID, content_hash: str, extractor_version: str, fingerprint: str | None = None
    ) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO story_processing (story_id, graph_hash, extractor_version, graph_fingerprint)"
                " VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (story_id) DO UPDATE SET graph_hash = EXCLUDED.graph_hash,"
                " extractor_version = EXCLUDED.extractor_version,"
                " graph_fingerprint = EXCLUDED.graph_fingerprint, processed_at = now()",
                (story_id, content_hash, extractor_version, fingerprint),
            )

    def set_named_things(self, story_id: UUID, things: Sequence[NamedThing]) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO story_processing (story_id, named_things) VALUES (%s, %s)"
                " ON CONFLICT (story_id) DO UPDATE SET named_things = EXCLUDED.named_things",
                (story_id, Jsonb([t.model_dump(mode="json") for t in things])),
            )

    def named_things_of(self, legacy_id: UUID) -> dict[UUID, tuple[NamedThing, ...]]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT p.story_id, p.named_things FROM story_processing p JOIN stories s ON s.id = p.story_id"
                " WHERE s.legacy_id = %s AND p.named_things <> '[]'::jsonb",
                (legacy_id,),
            )
            .fetchall()
        )
        return {r["story_id"]: tuple(NamedThing.model_validate(t) for t in r["named_things"]) for r in rows}

    def graph_synced_count(self) -> int:
        row = self._one("SELECT count(*) AS n FROM story_processing WHERE graph_hash IS NOT NULL", ())
        return int(row["n"]) if row else 0

    def graph_fingerprints(self) -> dict[UUID, str | None]:
        rows = (
            self.db.connection()
            .execute("SELECT story_id, graph_fingerprint FROM story_processing WHERE graph_hash IS NOT NULL")
            .fetchall()
        )
        return {r["story_id"]: r["graph_fingerprint"] for r in rows}

    def forget_graph_synced(self, story_ids: Sequence[UUID] | None = None) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE story_processing SET graph_hash = NULL, extractor_version = NULL, graph_fingerprint = NULL"
                " WHERE graph_hash IS NOT NULL AND (%s::uuid[] IS NULL OR story_id = ANY(%s::uuid[]))",
                (None if story_ids is None else list(story_ids),) * 2,
            )

    def stories_needing_processing(
        self,
        *,
        after: UUID | None,
        limit: int,
        embedder: str,
        extractor_version: str | None,
        chunk_format: str,
    ) -> list[UUID]:
        rows = (
            self.db.connection()
            .execute(
                # d.digest is domain.chunking.digest_of(title, content hash): the story_digest
                "SELECT s.id FROM stories s LEFT JOIN story_processing p ON p.story_id = s.id,"
                " LATERAL (SELECT encode(sha256(convert_to(encode(sha256(convert_to(s.title, 'UTF8')), 'hex')"
                " || ':' || s.content_hash, 'UTF8')), 'hex') AS digest) d"
                " WHERE (%s::uuid IS NULL OR s.id > %s::uuid)"
                " AND (p.story_id IS NULL OR p.chunks_hash IS DISTINCT FROM d.digest || ':' || %s"
                " OR p.embedder IS DISTINCT FROM %s"
                " OR (%s::text IS NOT NULL AND (p.graph_hash IS DISTINCT FROM d.digest"
                " OR p.extractor_version IS DISTINCT FROM %s::text)))"
                " ORDER BY s.id LIMIT %s",
                (after, after, chunk_format, embedder, extractor_version, extractor_version, limit),
            )
            .fetchall()
        )
        return [r["id"] for r in rows]

    def record_ingest_failure(self, story_id: UUID, error: str, cause: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO ingest_failures (story_id, error, cause) VALUES (%s, %s, %s)",
                (story_id, error[:200], cause[:2000]),
            )

    def counts(self) -> dict[str, int]:
        tables = [
            "legacies",
            "persons",
            "users",
            "legacy_members",
            "person_relationships",
            "legacy_links",
            "stories",
            "story_chunks",
        ]
        conn = self.db.connection()
        return {t: int(conn.execute(f"SELECT count(*) AS c FROM {t}").fetchone()["c"]) for t in tables}  # type: ignore[index]
