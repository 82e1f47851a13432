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

from heirloom.adapters.postgres.database import _MIGRATION_NAME, PgDatabase, SchemaMismatch
from heirloom.adapters.postgres.store import PgStoryStore
from heirloom.adapters.postgres.vectors import PgVectorIndex, scope_sql

__all__ = ["_MIGRATION_NAME", "PgDatabase", "PgStoryStore", "PgVectorIndex", "SchemaMismatch", "scope_sql"]
