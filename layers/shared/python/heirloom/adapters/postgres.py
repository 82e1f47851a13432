"""PostgreSQL + pgvector: the StoryStore (permission source of truth) and the VectorIndex.

One connection per container (per thread), reused across invocations: checked with `SELECT 1`
after it sat idle, reopened when it broke, pgvector's types registered once per connection.
Writes run in explicit transactions; upserts report whether anything changed.

Connection parameters come from a `ConnectionSource` (heirloom.adapters.aurora): a URL, the
Aurora secret or an IAM token. Behind RDS Proxy (`pooled` sources) the connection keeps no
session state that would pin it: no session `SET` (statement_timeout is set per transaction
with `set_config(..., true)`, and for single statements by the proxy's init query), no
server-side prepared statements (`prepare_threshold=None`), only transaction-level advisory
locks. A URL connection (local, migrations on the writer) sets statement_timeout per session.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from heirloom.adapters.aurora import ConnectionSource, UrlSource
from heirloom.contracts.records import (
    Legacy,
    Link,
    LinkStatus,
    Member,
    Person,
    Relationship,
    RelationshipType,
    Role,
    ShareMode,
    Story,
    User,
    Visibility,
)
from heirloom.domain.access import ReadScope, StoryMeta
from heirloom.domain.ordering import Stamp, Verdict, lesser_role, narrower_link, same_link_state, verdict
from heirloom.errors import StoreUnavailable
from heirloom.ports import Change, Chunk, ChunkHit, EmbeddedChunk

_MIGRATION_NAME = re.compile(r"(\d{3})_[a-z0-9_]+\.sql")


class SchemaMismatch(RuntimeError):
    """The database was built for another embedding dimension or model."""


#: a connection idle longer than this is checked with `SELECT 1` before use (RDS Proxy closes
#: idle client connections; a frozen Lambda container can sit idle for minutes)
IDLE_CHECK_S = 30.0
#: authentication failures (invalid_authorization_specification, invalid_password): a rotated
#: secret, so fetch it again once
_AUTH_SQLSTATES = ("28000", "28P01")


class PgDatabase:
    def __init__(
        self,
        url: str | ConnectionSource,
        *,
        statement_timeout_ms: int = 5000,
        embedding_dim: int = 384,
        idle_check_s: float = IDLE_CHECK_S,
    ):
        self.source: ConnectionSource = UrlSource(url) if isinstance(url, str) else url
        #: safe to log (no password)
        self.url = url if isinstance(url, str) else self.source.description
        self.embedding_dim = embedding_dim
        self._statement_timeout_ms = statement_timeout_ms
        self._idle_check_s = idle_check_s
        # one connection per thread: a Lambda container runs one invocation at a time, the local
        # interpreter runs parallel branches in threads of one process
        self._local = threading.local()

    @property
    def _conn(self) -> psycopg.Connection[dict[str, Any]] | None:
        conn: psycopg.Connection[dict[str, Any]] | None = getattr(self._local, "conn", None)
        return conn

    @_conn.setter
    def _conn(self, conn: psycopg.Connection[dict[str, Any]] | None) -> None:
        self._local.conn = conn

    @property
    def pooled(self) -> bool:
        return self.source.pooled

    def connection(self) -> psycopg.Connection[dict[str, Any]]:
        conn = self._conn
        if conn is not None and not (conn.closed or conn.broken) and self._stale(conn):
            conn.close()
        if conn is None or conn.closed or conn.broken:
            conn = self._connect()
            self._conn = conn
        self._local.used = time.monotonic()
        return conn

    def _stale(self, conn: psycopg.Connection[dict[str, Any]]) -> bool:
        """After a long idle, whether the server (or the proxy) has dropped the connection."""
        if time.monotonic() - getattr(self._local, "used", 0.0) < self._idle_check_s:
            return False
        try:
            conn.execute("SELECT 1")
        except psycopg.Error:
            return True
        return False

    def _connect(self) -> psycopg.Connection[dict[str, Any]]:
        try:
            conn = self._open(refresh=False)
        except psycopg.OperationalError as exc:
            if exc.sqlstate not in _AUTH_SQLSTATES:
                raise StoreUnavailable(f"PostgreSQL unavailable ({self.source.description}): {exc}") from exc
            try:  # the password was rotated since the secret was cached
                conn = self._open(refresh=True)
            except psycopg.OperationalError as again:
                raise StoreUnavailable(
                    f"PostgreSQL unavailable ({self.source.description}): {again}"
                ) from again
        try:
            if not self.pooled:
                conn.execute(f"SET statement_timeout = {int(self._statement_timeout_ms)}")
            if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                from pgvector.psycopg import register_vector

                register_vector(conn)
        except psycopg.OperationalError as exc:
            conn.close()
            raise StoreUnavailable(f"PostgreSQL unavailable ({self.source.description}): {exc}") from exc
        return conn

    def _open(self, *, refresh: bool) -> psycopg.Connection[dict[str, Any]]:
        conninfo = self.source.conninfo(refresh=refresh)
        if self.pooled:
            # no named server-side prepared statements: RDS Proxy pins sessions that use them
            return psycopg.connect(conninfo, autocommit=True, row_factory=dict_row, prepare_threshold=None)
        return psycopg.connect(conninfo, autocommit=True, row_factory=dict_row, connect_timeout=5)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        conn = self.connection()
        with conn.transaction():
            if self.pooled:  # transaction-scoped: no session state for RDS Proxy to pin on
                conn.execute(
                    "SELECT set_config('statement_timeout', %s, true)",
                    (str(int(self._statement_timeout_ms)),),
                )
            yield conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- migrations -------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply the packaged migrations in order, once each; return the names applied now."""
        conn = self.connection()
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        applied_now: list[str] = []
        files = sorted(
            (
                f
                for f in resources.files("heirloom.migrations").iterdir()
                if _MIGRATION_NAME.fullmatch(f.name)
            ),
            key=lambda f: f.name,
        )
        for file in files:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(72157)")
                if conn.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (file.name,)).fetchone():
                    continue
                sql = file.read_text().replace("${EMBEDDING_DIM}", str(int(self.embedding_dim)))
                conn.execute(sql.encode())
                conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (file.name,))
                applied_now.append(file.name)
        from pgvector.psycopg import register_vector

        register_vector(conn)
        self._check_dimension()
        return applied_now

    def _check_dimension(self) -> None:
        row = (
            self.connection()
            .execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'story_chunks'::regclass"
                " AND attname = 'embedding'"
            )
            .fetchone()
        )
        if row and int(row["atttypmod"]) != self.embedding_dim:
            raise SchemaMismatch(
                f"story_chunks holds {row['atttypmod']}-dimension vectors but settings ask for "
                f"{self.embedding_dim}: use a fresh database for another embedding model"
            )

    def applied_migrations(self) -> list[str]:
        rows = self.connection().execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
        return [r["name"] for r in rows]


#: a story's visibility as its rank, least to most restrictive (heirloom.domain.ordering)
_VISIBILITY_RANK = "(CASE {t}.visibility WHEN 'public' THEN 0 WHEN 'private' THEN 1 ELSE 2 END)"


def _lock(conn: psycopg.Connection[dict[str, Any]], key: str) -> None:
    """Serialise this transaction's writes to one record with its other writers (a
    transaction-level advisory lock: released at commit, nothing for RDS Proxy to pin on)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))


def _stamp(at: datetime | None, seq: int | None) -> Stamp | None:
    return Stamp.of(at, seq)


def _person_order(fields: tuple[Any, ...]) -> tuple[Any, ...]:
    """A fixed order of two versions of a person with the same stamp (None years first)."""
    legacy, name, aliases, born, died = fields
    return (legacy, name, aliases, -1 if born is None else born, -1 if died is None else died)


def _seq(seq: int | None) -> int:
    return -1 if seq is None else seq


def _link(row: dict[str, Any]) -> Link:
    return Link(
        id=row["id"],
        legacy_a_id=row["legacy_a_id"],
        legacy_b_id=row["legacy_b_id"],
        status=LinkStatus(row["status"]),
        share_mode=ShareMode(row["share_mode"]),
        shared_story_ids=tuple(sorted(row["shared_story_ids"], key=str)),
    )


def _change(row: dict[str, Any] | None) -> Change:
    if row is None:
        return Change.UNCHANGED
    return Change.CREATED if row["inserted"] else Change.UPDATED


class PgStoryStore:
    def __init__(self, db: PgDatabase):
        self.db = db

    def _upsert(self, sql: str, params: Sequence[Any]) -> Change:
        with self.db.transaction() as conn:
            return _change(conn.execute(sql, params).fetchone())

    # -- writes -----------------------------------------------------------------------------
    def upsert_legacy(self, legacy: Legacy) -> Change:
        return self._upsert(
            "INSERT INTO legacies (id, name, subject_person_id) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name,"
            " subject_person_id = EXCLUDED.subject_person_id, updated_at = now()"
            " WHERE (legacies.name, legacies.subject_person_id)"
            " IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.subject_person_id)"
            " RETURNING (xmax = 0) AS inserted",
            (legacy.id, legacy.name, legacy.subject_person_id),
        )

    def upsert_person(self, person: Person, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a person's legacy decides who
        may see the known relationships it is in, so an older change (a late Person Created
        moving it back) is SKIPPED; at an equal stamp a fixed order of the fields decides.
        Without `as_of` (a dataset record) it applies only where no event has set the person."""
        p = person
        incoming = (str(p.legacy_id), p.name, list(p.aliases), p.birth_year, p.death_year)
        with self.db.transaction() as conn:
            _lock(conn, f"person:{p.id}")
            row = conn.execute(
                "SELECT legacy_id, name, aliases, birth_year, death_year, changed_at, changed_seq"
                " FROM persons WHERE id = %s",
                (p.id,),
            ).fetchone()
            stored = (
                None
                if row is None
                else (
                    str(row["legacy_id"]),
                    row["name"],
                    list(row["aliases"]),
                    row["birth_year"],
                    row["death_year"],
                )
            )
            same = stored == incoming
            match verdict(_stamp(row["changed_at"], row["changed_seq"]) if row else None, Stamp.of(as_of, seq),
                          exists=row is not None):  # fmt: skip
                case Verdict.SKIP:
                    return Change.UNCHANGED if same else Change.SKIPPED
                case Verdict.MERGE if (
                    not same and stored is not None and _person_order(incoming) < _person_order(stored)
                ):
                    return Change.SKIPPED
            conn.execute(
                "INSERT INTO persons (id, legacy_id, name, aliases, birth_year, death_year, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_id = EXCLUDED.legacy_id, name = EXCLUDED.name,"
                " aliases = EXCLUDED.aliases, birth_year = EXCLUDED.birth_year, death_year = EXCLUDED.death_year,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (p.id, p.legacy_id, p.name, list(p.aliases), p.birth_year, p.death_year, as_of, seq),
            )
        if row is None:
            return Change.CREATED
        return Change.UNCHANGED if same else Change.UPDATED

    def upsert_user(self, user: User) -> Change:
        return self._upsert(
            "INSERT INTO users (id, name, person_id) VALUES (%s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, person_id = EXCLUDED.person_id"
            " WHERE (users.name, users.person_id) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.person_id)"
            " RETURNING (xmax = 0) AS inserted",
            (user.id, user.name, user.person_id),
        )

    def upsert_member(self, member: Member, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a change older than the
        membership's last change or removal is SKIPPED; at an equal stamp the lesser role stays
        and a removal wins. Without `as_of` (a dataset record) it applies only where no event
        has set or removed the membership."""
        m = member
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            _lock(conn, f"member:{m.legacy_id}:{m.user_id}")
            removal = conn.execute(
                "SELECT removed_at, removed_seq FROM member_removals WHERE legacy_id = %s AND user_id = %s",
                (m.legacy_id, m.user_id),
            ).fetchone()
            stored = conn.execute(
                "SELECT role, changed_at, changed_seq FROM legacy_members WHERE legacy_id = %s AND user_id = %s",
                (m.legacy_id, m.user_id),
            ).fetchone()
            role = m.role
            # not applied: what is stored already says so (UNCHANGED), or it differs (SKIPPED)
            kept = Change.UNCHANGED if stored and stored["role"] == role.value else Change.SKIPPED
            if removal is not None and (
                incoming is None or incoming <= Stamp(removal["removed_at"], _seq(removal["removed_seq"]))
            ):
                return kept
            stored_stamp = _stamp(stored["changed_at"], stored["changed_seq"]) if stored else None
            match verdict(stored_stamp, incoming, exists=stored is not None):
                case Verdict.SKIP:
                    return kept
                case Verdict.MERGE:
                    role = lesser_role(Role(stored["role"]), role) if stored else role
            conn.execute(
                "INSERT INTO legacy_members (legacy_id, user_id, role, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (legacy_id, user_id) DO UPDATE SET role = EXCLUDED.role,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (m.legacy_id, m.user_id, role.value, as_of, seq),
            )
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if stored["role"] == role.value else Change.UPDATED

    def remove_member(
        self, legacy_id: UUID, user_id: UUID, as_of: datetime | None = None, seq: int | None = None
    ) -> Change:
        """With `as_of` (and `seq`), the removal is remembered (an older or equal-time add
        delivered later is SKIPPED), and a membership changed after it stays."""
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            _lock(conn, f"member:{legacy_id}:{user_id}")
            if as_of is not None:
                conn.execute(
                    "INSERT INTO member_removals (legacy_id, user_id, removed_at, removed_seq) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (legacy_id, user_id) DO UPDATE"
                    " SET removed_at = EXCLUDED.removed_at, removed_seq = EXCLUDED.removed_seq"
                    " WHERE (member_removals.removed_at, coalesce(member_removals.removed_seq, -1))"
                    " < (EXCLUDED.removed_at, coalesce(EXCLUDED.removed_seq, -1))",
                    (legacy_id, user_id, as_of, seq),
                )
            stored = conn.execute(
                "SELECT changed_at, changed_seq FROM legacy_members WHERE legacy_id = %s AND user_id = %s",
                (legacy_id, user_id),
            ).fetchone()
            if stored is None:
                return Change.UNCHANGED
            stored_stamp = _stamp(stored["changed_at"], stored["changed_seq"])
            if incoming is not None and stored_stamp is not None and stored_stamp > incoming:
                return Change.SKIPPED  # re-admitted after this removal
            conn.execute(
                "DELETE FROM legacy_members WHERE legacy_id = %s AND user_id = %s", (legacy_id, user_id)
            )
            return Change.DELETED

    def upsert_relationship(self, relationship: Relationship) -> Change:
        r = relationship
        return self._upsert(
            "INSERT INTO person_relationships (from_person_id, to_person_id, type, detail, since, until)"
            " VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (from_person_id, to_person_id, type) DO UPDATE SET detail = EXCLUDED.detail,"
            " since = EXCLUDED.since, until = EXCLUDED.until"
            " WHERE (person_relationships.detail, person_relationships.since, person_relationships.until)"
            " IS DISTINCT FROM (EXCLUDED.detail, EXCLUDED.since, EXCLUDED.until)"
            " RETURNING (xmax = 0) AS inserted",
            (r.from_person_id, r.to_person_id, r.type.value, r.detail, r.since, r.until),
        )

    def upsert_link(self, link: Link, as_of: datetime | None = None, seq: int | None = None) -> Change:
        """Ordered by (`as_of`, `seq`) (heirloom.domain.ordering): a change older than the link's
        last one is SKIPPED; at an equal stamp the more restrictive status and the narrower
        share list stay. Without `as_of` (a dataset record) it applies only where no event has
        set the link."""
        incoming = Stamp.of(as_of, seq)
        with self.db.transaction() as conn:
            _lock(conn, f"link:{link.id}")
            row = conn.execute(
                "SELECT l.id, l.legacy_a_id, l.legacy_b_id, l.status, l.share_mode, l.changed_at, l.changed_seq,"
                " coalesce(array_agg(s.story_id) FILTER (WHERE s.story_id IS NOT NULL), '{}') AS shared_story_ids"
                " FROM legacy_links l LEFT JOIN legacy_link_shares s ON s.link_id = l.id WHERE l.id = %s GROUP BY l.id",
                (link.id,),
            ).fetchone()
            stored = None if row is None else _link(row)
            wanted = link
            match verdict(
                _stamp(row["changed_at"], row["changed_seq"]) if row else None,
                incoming,
                exists=row is not None,
            ):
                case Verdict.SKIP:
                    return Change.UNCHANGED if stored and same_link_state(stored, link) else Change.SKIPPED
                case Verdict.MERGE:
                    wanted = narrower_link(stored, link) if stored else link
            conn.execute(
                "INSERT INTO legacy_links (id, legacy_a_id, legacy_b_id, status, share_mode, changed_at, changed_seq)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_a_id = EXCLUDED.legacy_a_id,"
                " legacy_b_id = EXCLUDED.legacy_b_id, status = EXCLUDED.status, share_mode = EXCLUDED.share_mode,"
                " changed_at = EXCLUDED.changed_at, changed_seq = EXCLUDED.changed_seq",
                (
                    wanted.id,
                    wanted.legacy_a_id,
                    wanted.legacy_b_id,
                    wanted.status.value,
                    wanted.share_mode.value,
                    as_of,
                    seq,
                ),
            )
            have = set(stored.shared_story_ids) if stored else set()
            shared = set(wanted.shared_story_ids)
            if shared != have:
                conn.execute(
                    "DELETE FROM legacy_link_shares WHERE link_id = %s AND NOT story_id = ANY(%s)",
                    (link.id, list(shared)),
                )
                conn.cursor().executemany(
                    "INSERT INTO legacy_link_shares (link_id, story_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    [(link.id, sid) for sid in shared - have],
                )
        if stored is None:
            return Change.CREATED
        return Change.UNCHANGED if same_link_state(stored, wanted) else Change.UPDATED

    def upsert_story(self, story: Story, content_hash: str, seq: int | None = None) -> Change:
        """Insert or update in the order of (`updated_at`, `seq`) (heirloom.domain.ordering): an
        older version is SKIPPED; at an equal stamp the more restrictive visibility stays (then
        a fixed order of the other fields, so every delivery order ends the same). A deleted
        story stays deleted (SKIPPED)."""
        s = story
        with self.db.transaction() as conn:
            _lock(conn, f"story:{s.id}")
            if conn.execute("SELECT 1 FROM story_tombstones WHERE story_id = %s", (s.id,)).fetchone():
                return Change.SKIPPED
            row = conn.execute(
                "INSERT INTO stories (id, legacy_id, author_user_id, title, content, visibility, content_hash,"
                " created_at, updated_at, updated_seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET legacy_id = EXCLUDED.legacy_id,"
                " author_user_id = EXCLUDED.author_user_id, title = EXCLUDED.title, content = EXCLUDED.content,"
                " visibility = EXCLUDED.visibility, content_hash = EXCLUDED.content_hash,"
                " created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,"
                " updated_seq = EXCLUDED.updated_seq"
                " WHERE (stories.updated_at, coalesce(stories.updated_seq, -1))"
                " < (EXCLUDED.updated_at, coalesce(EXCLUDED.updated_seq, -1))"
                " OR ((stories.updated_at, coalesce(stories.updated_seq, -1))"
                " = (EXCLUDED.updated_at, coalesce(EXCLUDED.updated_seq, -1))"
                f" AND ({_VISIBILITY_RANK.format(t='stories')}, stories.content_hash, stories.title,"
                " stories.legacy_id::text, stories.author_user_id::text)"
                f" < ({_VISIBILITY_RANK.format(t='EXCLUDED')}, EXCLUDED.content_hash, EXCLUDED.title,"
                " EXCLUDED.legacy_id::text, EXCLUDED.author_user_id::text))"
                " RETURNING (xmax = 0) AS inserted",
                (
                    s.id,
                    s.legacy_id,
                    s.author_user_id,
                    s.title,
                    s.content,
                    s.visibility.value,
                    content_hash,
                    s.created_at,
                    s.updated_at,
                    seq,
                ),
            ).fetchone()
            if row is not None:
                return _change(row)
            same = conn.execute(
                "SELECT 1 FROM stories WHERE id = %s AND (legacy_id, author_user_id, title, visibility, content_hash,"
                " updated_at, coalesce(updated_seq, -1)) = (%s, %s, %s, %s, %s, %s, %s)",
                (
                    s.id,
                    s.legacy_id,
                    s.author_user_id,
                    s.title,
                    s.visibility.value,
                    content_hash,
                    s.updated_at,
                    -1 if seq is None else seq,
                ),
            ).fetchone()
            return Change.UNCHANGED if same else Change.SKIPPED

    def delete_story(
        self, story_id: UUID, deleted_at: datetime | None = None, legacy_id: UUID | None = None
    ) -> Change:
        """Delete and leave a tombstone, final for this id: no create or update of it, older or
        newer, revives the story (heirloom.domain.ordering). A deletion of a story not stored
        (yet) leaves its tombstone when `legacy_id` is given, so a create delivered after its
        delete is skipped as well."""
        with self.db.transaction() as conn:
            _lock(conn, f"story:{story_id}")
            row = conn.execute(
                "SELECT legacy_id FROM stories WHERE id = %s FOR UPDATE", (story_id,)
            ).fetchone()
            owner = row["legacy_id"] if row is not None else legacy_id
            if owner is not None:
                conn.execute(
                    "INSERT INTO story_tombstones (story_id, legacy_id, deleted_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (story_id) DO UPDATE SET deleted_at = greatest(story_tombstones.deleted_at,"
                    " EXCLUDED.deleted_at)",
                    (story_id, owner, deleted_at or datetime.now(UTC)),
                )
            if row is None:
                return Change.UNCHANGED
            conn.execute("DELETE FROM stories WHERE id = %s", (story_id,))
            return Change.DELETED

    # -- reads ------------------------------------------------------------------------------
    def _one(self, sql: str, params: Sequence[Any]) -> dict[str, Any] | None:
        return self.db.connection().execute(sql, params).fetchone()

    def get_legacy(self, legacy_id: UUID) -> Legacy | None:
        row = self._one("SELECT id, name, subject_person_id FROM legacies WHERE id = %s", (legacy_id,))
        return Legacy(**row) if row else None

    def get_person(self, person_id: UUID) -> Person | None:
        row = self._one(
            "SELECT id, legacy_id, name, aliases, birth_year, death_year FROM persons WHERE id = %s",
            (person_id,),
        )
        return Person(**{**row, "aliases": tuple(row["aliases"])}) if row else None

    def get_user(self, user_id: UUID) -> User | None:
        row = self._one("SELECT id, name, person_id FROM users WHERE id = %s", (user_id,))
        return User(**row) if row else None

    def get_story(self, story_id: UUID) -> Story | None:
        row = self._one(
            "SELECT id, legacy_id, author_user_id, title, content, visibility, created_at, updated_at"
            " FROM stories WHERE id = %s",
            (story_id,),
        )
        return Story(**row) if row else None

    def get_story_hash(self, story_id: UUID) -> str | None:
        row = self._one("SELECT content_hash FROM stories WHERE id = %s", (story_id,))
        return str(row["content_hash"]) if row else None

    def role_of(self, user_id: UUID, legacy_id: UUID) -> Role | None:
        row = self._one(
            "SELECT role FROM legacy_members WHERE user_id = %s AND legacy_id = %s", (user_id, legacy_id)
        )
        return Role(row["role"]) if row else None

    def member_legacy_ids(self, user_id: UUID) -> list[UUID]:
        rows = (
            self.db.connection()
            .execute("SELECT legacy_id FROM legacy_members WHERE user_id = %s ORDER BY legacy_id", (user_id,))
            .fetchall()
        )
        return [r["legacy_id"] for r in rows]

    def links_of(self, legacy_id: UUID) -> list[Link]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT l.id, l.legacy_a_id, l.legacy_b_id, l.status, l.share_mode,"
                " coalesce(array_agg(s.story_id ORDER BY s.story_id) FILTER (WHERE s.story_id IS NOT NULL), '{}')"
                " AS shared_story_ids"
                " FROM legacy_links l LEFT JOIN legacy_link_shares s ON s.link_id = l.id"
                " WHERE l.legacy_a_id = %s OR l.legacy_b_id = %s GROUP BY l.id ORDER BY l.id",
                (legacy_id, legacy_id),
            )
            .fetchall()
        )
        return [
            Link(
                id=r["id"],
                legacy_a_id=r["legacy_a_id"],
                legacy_b_id=r["legacy_b_id"],
                status=LinkStatus(r["status"]),
                share_mode=ShareMode(r["share_mode"]),
                shared_story_ids=tuple(r["shared_story_ids"]),
            )
            for r in rows
        ]

    def persons_of(self, legacy_ids: Sequence[UUID]) -> list[Person]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, name, aliases, birth_year, death_year FROM persons"
                " WHERE legacy_id = ANY(%s) ORDER BY name, id",
                (list(legacy_ids),),
            )
            .fetchall()
        )
        return [Person(**{**r, "aliases": tuple(r["aliases"])}) for r in rows]

    def relationships_of(self, person_ids: Sequence[UUID]) -> list[Relationship]:
        ids = list(person_ids)
        rows = (
            self.db.connection()
            .execute(
                "SELECT from_person_id, to_person_id, type, detail, since, until FROM person_relationships"
                " WHERE from_person_id = ANY(%s) OR to_person_id = ANY(%s)"
                " ORDER BY from_person_id, to_person_id, type",
                (ids, ids),
            )
            .fetchall()
        )
        return [Relationship(**{**r, "type": RelationshipType(r["type"])}) for r in rows]

    def story_meta(self, story_ids: Iterable[UUID]) -> list[StoryMeta]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, author_user_id, visibility, title FROM stories WHERE id = ANY(%s)",
                (list(story_ids),),
            )
            .fetchall()
        )
        return [StoryMeta(**{**r, "visibility": Visibility(r["visibility"])}) for r in rows]

    def stories_of(self, legacy_id: UUID) -> list[Story]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT id, legacy_id, author_user_id, title, content, visibility, created_at, updated_at"
                " FROM stories WHERE legacy_id = %s ORDER BY created_at, id",
                (legacy_id,),
            )
            .fetchall()
        )
        return [Story(**r) for r in rows]

    def graph_synced(self, story_id: UUID) -> tuple[str, str] | None:
        row = self._one(
            "SELECT graph_hash, extractor_version FROM story_processing WHERE story_id = %s AND graph_hash IS NOT NULL",
            (story_id,),
        )
        return (row["graph_hash"], row["extractor_version"] or "") if row else None

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
                "SELECT s.id FROM stories s LEFT JOIN story_processing p ON p.story_id = s.id"
                " WHERE (%s::uuid IS NULL OR s.id > %s::uuid)"
                " AND (p.story_id IS NULL OR p.chunks_hash IS DISTINCT FROM s.content_hash || ':' || %s"
                " OR p.embedder IS DISTINCT FROM %s"
                " OR (%s::text IS NOT NULL AND (p.graph_hash IS DISTINCT FROM s.content_hash"
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
    return ("(" + " OR ".join(clauses) + ")" if clauses else "FALSE"), params


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
            _lock(conn, f"chunks:{story_id}")
            conn.execute("DELETE FROM story_chunks WHERE story_id = %s", (story_id,))
            conn.execute("UPDATE story_processing SET chunks_hash = NULL WHERE story_id = %s", (story_id,))

    def search(
        self,
        embedding: Sequence[float],
        scope: ReadScope,
        k: int,
        *,
        also: Sequence[tuple[UUID, int]] = (),
    ) -> list[ChunkHit]:
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
        return [
            ChunkHit(
                story_id=r["story_id"],
                legacy_id=r["legacy_id"],
                chunk_index=r["chunk_index"],
                text=r["content"],
                token_count=r["token_count"],
                similarity=float(r["similarity"]),
            )
            for r in rows
        ]

    def search_text(self, text: str, scope: ReadScope, k: int) -> list[ChunkHit]:
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
        hits = [
            ChunkHit(
                story_id=r["story_id"],
                legacy_id=r["legacy_id"],
                chunk_index=r["chunk_index"],
                text=r["content"],
                token_count=r["token_count"],
                similarity=0.0,
                lexical=round(float(r["lexical"] or 0.0), 6),
            )
            for r in rows
        ]
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
