"""The connection to PostgreSQL (per container and thread, checked after it sat idle, reopened
when it broke; what keeps it from pinning an RDS Proxy connection is in the package docstring)
and the migrations, applied in order and recorded in `schema_migrations`."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any

import psycopg
from psycopg.rows import dict_row

from heirloom.adapters.aurora import ConnectionSource, UrlSource
from heirloom.errors import StoreUnavailable

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

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """A transaction-level advisory lock on `key`, held on this thread's second connection
        so the writes made meanwhile (on the first) commit on their own; re-entrant in the
        thread. Released at the end, or when the connection drops."""
        conn: psycopg.Connection[dict[str, Any]] | None = getattr(self._local, "lock_conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._connect()
            self._local.lock_conn = conn
        with conn.transaction():
            if self.pooled:
                conn.execute(
                    "SELECT set_config('statement_timeout', %s, true)",
                    (str(int(self._statement_timeout_ms)),),
                )
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
            yield

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        lock_conn = getattr(self._local, "lock_conn", None)
        if lock_conn is not None:
            lock_conn.close()
            self._local.lock_conn = None

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
