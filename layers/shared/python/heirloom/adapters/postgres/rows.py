"""Row <-> record conversions and the small SQL helpers the store's parts share."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from heirloom.adapters.postgres.database import PgDatabase
from heirloom.contracts.records import (
    Link,
    LinkStatus,
    ShareMode,
)
from heirloom.domain.ordering import Stamp
from heirloom.ports import Change

#: a story's visibility as its rank, least to most restrictive (heirloom.domain.ordering)
VISIBILITY_RANK = "(CASE {t}.visibility WHEN 'public' THEN 0 WHEN 'private' THEN 1 ELSE 2 END)"


def advisory_lock(conn: psycopg.Connection[dict[str, Any]], key: str) -> None:
    """Serialise this transaction's writes to one record with its other writers (a
    transaction-level advisory lock: released at commit, nothing for RDS Proxy to pin on)."""
    advisory_locks(conn, [key])


def advisory_locks(conn: psycopg.Connection[dict[str, Any]], keys: Sequence[str]) -> None:
    """`advisory_lock` for several records in one statement, in key order (two writers of
    overlapping sets never deadlock)."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM"
        " (SELECT DISTINCT unnest(%s::text[]) AS k ORDER BY 1) keys",
        (list(keys),),
    )


def stamp_of(at: datetime | None, seq: int | None) -> Stamp | None:
    return Stamp.of(at, seq)


def person_order(fields: tuple[Any, ...]) -> tuple[Any, ...]:
    """A fixed order of two versions of a person with the same stamp (None years first)."""
    legacy, name, aliases, born, died = fields
    return (legacy, name, aliases, -1 if born is None else born, -1 if died is None else died)


def seq_value(seq: int | None) -> int:
    return -1 if seq is None else seq


def link_from_row(row: dict[str, Any]) -> Link:
    return Link(
        id=row["id"],
        legacy_a_id=row["legacy_a_id"],
        legacy_b_id=row["legacy_b_id"],
        status=LinkStatus(row["status"]),
        share_mode=ShareMode(row["share_mode"]),
        shared_story_ids=tuple(sorted(row["shared_story_ids"], key=str)),
    )


def change_from_row(row: dict[str, Any] | None) -> Change:
    if row is None:
        return Change.UNCHANGED
    return Change.CREATED if row["inserted"] else Change.UPDATED


class StoreBase:
    """What every part of the store shares: the database and one-row helpers."""

    def __init__(self, db: PgDatabase):
        self.db = db

    def _upsert(self, sql: str, params: Sequence[Any]) -> Change:
        with self.db.transaction() as conn:
            return change_from_row(conn.execute(sql, params).fetchone())

    def _one(self, sql: str, params: Sequence[Any]) -> dict[str, Any] | None:
        return self.db.connection().execute(sql, params).fetchone()
