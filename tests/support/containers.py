"""Several Lambda containers over one embedded stack, and who is waiting on a lock: for the
tests that deliver events concurrently or hold a record's lock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.postgres.conversations import PgConversationStore


def containers(db: Any, ports: Any, n: int) -> tuple[list[PgDatabase], list[Any]]:
    """`n` sets of ports as `n` Lambda containers would hold them: a connection each, one graph."""
    dbs = [PgDatabase(db.url, embedding_dim=64) for _ in range(n)]
    return dbs, [
        replace(
            ports,
            stories=PgStoryStore(d),
            vectors=PgVectorIndex(d, model_id=ports.vectors.model_id),
            conversations=PgConversationStore(d),
        )
        for d in dbs
    ]


def waiting_backends(url: str) -> int:
    """How many of the database's sessions wait on a lock."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return int(row[0]) if row else 0
