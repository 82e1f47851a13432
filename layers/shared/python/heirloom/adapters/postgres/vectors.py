"""PgVectorIndex: the story chunks and their embeddings (pgvector), searched within a read scope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from heirloom.adapters.postgres.database import PgDatabase, SchemaMismatch
from heirloom.adapters.postgres.rows import advisory_lock
from heirloom.contracts.access import ReadScope
from heirloom.contracts.context import ChunkResult
from heirloom.ports import Chunk, EmbeddedChunk


def scope_sql(scope: ReadScope) -> tuple[str, list[Any]]:
    """The `ReadScope` as a WHERE fragment over `stories s` (the same grants as `allows`)."""
    clauses: list[str] = []
    params: list[Any] = []
    for grant in scope.grants:
        parts = ["s.legacy_id = %s"]
        params.append(grant.legacy_id)
        vis = "s.visibility = ANY(%s)"
        params.append(sorted(v.value for v in grant.visibilities))
        if grant.own_personal:
            vis = f"({vis} OR (s.visibility = 'personal' AND s.author_user_id = %s))"
            params.append(scope.user_id)
        parts.append(vis)
        if grant.story_ids is not None:
            parts.append("s.id = ANY(%s)")
            params.append(sorted(grant.story_ids))
        clauses.append("(" + " AND ".join(parts) + ")")
    if not clauses:
        return "FALSE", params
    if scope.as_of is not None:
        params.append(scope.as_of)
        return "((" + " OR ".join(clauses) + ") AND s.created_at <= %s)", params
    return "(" + " OR ".join(clauses) + ")", params


#: a read scope with at most this many chunks is searched exactly rather than through HNSW
#: (measured at 10k stories: exact wins up to ~4-5k chunks, a few families' worth)
EXACT_MAX_CHUNKS = 4000


class PgVectorIndex:
    def __init__(
        self,
        db: PgDatabase,
        *,
        model_id: str,
        ef_search: int = 100,
        exact_max_chunks: int = EXACT_MAX_CHUNKS,
    ):
        self.db = db
        self.model_id = model_id
        self._ef_search = ef_search
        self._exact_max_chunks = exact_max_chunks

    def replace_chunks(self, story_id: UUID, chunks: Sequence[EmbeddedChunk], content_hash: str) -> None:
        self.replace_many([(story_id, chunks, content_hash)])

    def replace_many(self, items: Sequence[tuple[UUID, Sequence[EmbeddedChunk], str]]) -> None:
        """`replace_chunks` for several stories (distinct ids) in one transaction and one round
        trip: the chunks inserted with their text-search vector (title + paragraph) in one
        statement, so each row and its index entries are written once."""
        import numpy as np
        from pgvector import Vector

        if not items:
            return
        ids = [story_id for story_id, _, _ in items]
        rows = [(story_id, c) for story_id, chunks, _ in items for c in chunks]
        with self.db.transaction() as conn, conn.pipeline():
            # one writer at a time per story (two loads or deliveries of one story would both
            # delete, then both insert its chunks: a unique violation), the locks taken in key
            # order so that two writers of several stories never deadlock
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 0))"
                " FROM (SELECT k FROM unnest(%s::text[]) AS k ORDER BY k OFFSET 0) AS keys",
                (sorted({f"chunks:{i}" for i in ids}),),
            )
            conn.execute(
                "INSERT INTO index_meta (key, value) VALUES ('embedding_model', %s) ON CONFLICT (key) DO NOTHING",
                (self.model_id,),
            )
            conn.execute("DELETE FROM story_chunks WHERE story_id = ANY(%s)", (ids,))
            if rows:
                conn.execute(
                    "INSERT INTO story_chunks (story_id, chunk_index, content, token_count, embedding, tsv)"
                    " SELECT c.story_id, c.chunk_index, c.content, c.token_count, c.embedding,"
                    " to_tsvector('english', (SELECT s.title FROM stories s WHERE s.id = c.story_id) || ' ' || c.content)"
                    " FROM unnest(%s::uuid[], %s::int[], %s::text[], %s::int[], %s::vector[])"
                    " AS c (story_id, chunk_index, content, token_count, embedding)",
                    (
                        [story_id for story_id, _ in rows],
                        [c.index for _, c in rows],
                        [c.text for _, c in rows],
                        [c.token_count for _, c in rows],
                        [Vector(np.asarray(c.embedding, dtype=np.float32)) for _, c in rows],
                    ),
                )
            conn.execute(
                "INSERT INTO story_processing (story_id, chunks_hash, embedder)"
                " SELECT p.story_id, p.chunks_hash, %s FROM unnest(%s::uuid[], %s::text[]) AS p (story_id, chunks_hash)"
                " ON CONFLICT (story_id) DO UPDATE SET chunks_hash = EXCLUDED.chunks_hash,"
                " embedder = EXCLUDED.embedder, processed_at = now()",
                (self.model_id, ids, [content_hash for _, _, content_hash in items]),
            )
            claimed = conn.execute("SELECT value FROM index_meta WHERE key = 'embedding_model'")
            self._check_model(claimed.fetchone())

    def _check_model(self, row: dict[str, Any] | None) -> None:
        """The index belongs to the first model that wrote to it (claimed without locking the row,
        so concurrent writers do not queue on it); a mismatch rolls the transaction back."""
        if row is not None and row["value"] != self.model_id:
            raise SchemaMismatch(
                f"the chunk index holds vectors of {row['value']!r}, not {self.model_id!r}: "
                "never mix two models in one index"
            )

    def indexed_hash(self, story_id: UUID) -> str | None:
        row = (
            self.db.connection()
            .execute(
                "SELECT chunks_hash FROM story_processing WHERE story_id = %s AND embedder = %s",
                (story_id, self.model_id),
            )
            .fetchone()
        )
        return row["chunks_hash"] if row else None

    def delete_chunks(self, story_id: UUID) -> None:
        with self.db.transaction() as conn:
            advisory_lock(conn, f"chunks:{story_id}")
            conn.execute("DELETE FROM story_chunks WHERE story_id = %s", (story_id,))
            conn.execute("UPDATE story_processing SET chunks_hash = NULL WHERE story_id = %s", (story_id,))

    def search(
        self,
        embedding: Sequence[float],
        scope: ReadScope,
        k: int,
        *,
        also: Sequence[tuple[UUID, int]] = (),
    ) -> list[ChunkResult]:
        """The `k` chunks nearest to `embedding` among those `scope` may read, nearest first, then
        the readable chunks `also` names (story id, chunk index) that are not among them, with
        their similarity too; in one statement.

        A scope of at most `exact_max_chunks` chunks (a family and its linked legacies) is
        searched exactly: its chunks are found through the stories index and compared one by
        one, which at that size is faster than the HNSW index and misses nothing. A larger scope
        goes through the HNSW index with pgvector's iterative scan, which keeps scanning until
        `k` rows pass the scope filter (a plain HNSW scan stops after `ef_search` candidates,
        most of them other families' chunks, and returns fewer than `k`)."""
        import numpy as np
        from pgvector import Vector

        where, params = scope_sql(scope)
        query_vec = Vector(np.asarray(embedding, dtype=np.float32))
        cap = int(self._exact_max_chunks)
        with self.db.transaction() as conn:
            conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                (str(int(self._ef_search)),),
            )
            rows = conn.execute(
                # the readable stories, then their chunks story by story (LATERAL ... OFFSET 0: by
                # the primary key, never a scan of the whole table)
                f"WITH readable AS MATERIALIZED (SELECT s.id, s.legacy_id FROM stories s WHERE {where}),"
                " small AS MATERIALIZED ("
                " SELECT count(*) <= %s AS yes FROM (SELECT 1 FROM readable r CROSS JOIN LATERAL"
                " (SELECT 1 FROM story_chunks c WHERE c.story_id = r.id OFFSET 0) c LIMIT %s) n),"
                " hits AS ("
                # exact: the outer OFFSET 0 keeps the ORDER BY from being answered by the HNSW index
                " (SELECT * FROM ("
                " SELECT r.id AS story_id, r.legacy_id, c.chunk_index, c.content, c.token_count, c.distance"
                " FROM readable r CROSS JOIN LATERAL ("
                " SELECT c.chunk_index, c.content, c.token_count, c.embedding <=> %s AS distance"
                " FROM story_chunks c WHERE c.story_id = r.id OFFSET 0) c"
                " WHERE (SELECT yes FROM small) OFFSET 0) exact ORDER BY distance LIMIT %s)"
                " UNION ALL"
                " (SELECT c.story_id, s.legacy_id, c.chunk_index, c.content, c.token_count,"
                " c.embedding <=> %s AS distance FROM story_chunks c JOIN stories s ON s.id = c.story_id"
                f" WHERE NOT (SELECT yes FROM small) AND {where} ORDER BY c.embedding <=> %s LIMIT %s))"
                " SELECT story_id, legacy_id, chunk_index, content, token_count, 1 - distance AS similarity,"
                " 0 AS part, distance FROM hits"
                " UNION ALL"
                " SELECT c.story_id, s.legacy_id, c.chunk_index, c.content, c.token_count,"
                " 1 - (c.embedding <=> %s), 1, 0"
                " FROM unnest(%s::uuid[], %s::int[]) AS a (story_id, chunk_index)"
                " JOIN story_chunks c ON c.story_id = a.story_id AND c.chunk_index = a.chunk_index"
                " JOIN stories s ON s.id = c.story_id"
                f" WHERE {where} AND NOT EXISTS"
                " (SELECT 1 FROM hits h WHERE h.story_id = a.story_id AND h.chunk_index = a.chunk_index)"
                " ORDER BY part, distance",
                [
                    *params,
                    cap,
                    cap + 1,
                    query_vec,
                    int(k),
                    query_vec,
                    *params,
                    query_vec,
                    int(k),
                    query_vec,
                    [story_id for story_id, _ in also],
                    [int(index) for _, index in also],
                    *params,
                ],
            ).fetchall()
        return [_chunk_result(r, similarity=float(r["similarity"])) for r in rows]

    def search_text(self, text: str, scope: ReadScope, k: int) -> list[ChunkResult]:
        """Chunks sharing words with `text`, scored by the summed inverse document frequency of
        the shared words over that of all query words (0..1). It needs no query embedding, so it
        can run while the query is embedded; `similarity` is left at 0 (`search(also=...)` gives it).

        One statement: the query's lexemes, their document frequencies among the chunks `scope`
        may read (so the weights never depend on stories the reader cannot see, and rare words
        of this family weigh more than words rare elsewhere), the best `4k` candidates by
        `ts_rank`, and each candidate's share of the IDF weight."""
        where, params = scope_sql(scope)
        rows = (
            self.db.connection()
            .execute(
                "WITH terms AS MATERIALIZED ("
                " SELECT lexeme, quote_literal(lexeme)::tsquery AS tq"
                " FROM unnest(tsvector_to_array(to_tsvector('english', %s))) AS lexeme),"
                " scoped AS MATERIALIZED ("
                " SELECT s.id AS story_id, s.legacy_id, c.chunk_index, c.tsv FROM stories s CROSS JOIN LATERAL"
                " (SELECT c.chunk_index, c.tsv FROM story_chunks c WHERE c.story_id = s.id OFFSET 0) c"
                f" WHERE {where}),"
                " idf AS MATERIALIZED ("
                " SELECT t.tq, ln((n.total - d.df + 0.5)::float8 / (d.df + 0.5) + 1.0) AS w"
                " FROM terms t CROSS JOIN (SELECT count(*) AS total FROM scoped) n"
                " CROSS JOIN LATERAL (SELECT count(*) AS df FROM scoped sc WHERE sc.tsv @@ t.tq) d),"
                " q AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS query FROM terms),"
                " hits AS ("
                " SELECT sc.story_id, sc.legacy_id, sc.chunk_index, sc.tsv, ts_rank(sc.tsv, q.query) AS rank"
                " FROM scoped sc CROSS JOIN q WHERE sc.tsv @@ q.query ORDER BY rank DESC LIMIT %s)"
                " SELECT h.story_id, h.legacy_id, h.chunk_index, c.content, c.token_count,"
                " (SELECT coalesce(sum(i.w) FILTER (WHERE h.tsv @@ i.tq), 0) / nullif(sum(i.w), 0) FROM idf i)"
                " AS lexical"
                " FROM hits h JOIN story_chunks c ON c.story_id = h.story_id AND c.chunk_index = h.chunk_index"
                " ORDER BY h.rank DESC",
                [text, *params, int(k) * 4],
            )
            .fetchall()
        )
        hits = [_chunk_result(r, lexical=round(float(r["lexical"] or 0.0), 6)) for r in rows]
        hits.sort(key=lambda h: -h.lexical)
        return hits[:k]

    def chunks_of(self, story_id: UUID) -> list[Chunk]:
        # the one story's list, whatever form of its id the caller passed
        return next(iter(self.chunks_of_many([story_id]).values()), [])

    def chunks_of_many(self, story_ids: Sequence[UUID]) -> dict[UUID, list[Chunk]]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT story_id, chunk_index, content, token_count FROM story_chunks"
                " WHERE story_id = ANY(%s) ORDER BY story_id, chunk_index",
                (list(story_ids),),
            )
            .fetchall()
        )
        out: dict[UUID, list[Chunk]] = {}
        for r in rows:
            out.setdefault(r["story_id"], []).append(
                Chunk(index=r["chunk_index"], text=r["content"], token_count=r["token_count"])
            )
        return out

    def count(self) -> int:
        row = self.db.connection().execute("SELECT count(*) AS c FROM story_chunks").fetchone()
        return int(row["c"]) if row else 0


def _chunk_result(row: dict[str, Any], *, similarity: float = 0.0, lexical: float = 0.0) -> ChunkResult:
    return ChunkResult(
        story_id=row["story_id"],
        legacy_id=row["legacy_id"],
        chunk_index=row["chunk_index"],
        text=row["content"],
        token_count=row["token_count"],
        similarity=similarity,
        lexical=lexical,
    )
