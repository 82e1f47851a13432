"""Shared by the property and bad-input tests: the long-run switch and whole-store snapshots.

`HEIRLOOM_LONG=1` makes them run many more examples (minutes instead of seconds); the
hypothesis profile of the same name is registered in `tests/conftest.py`.
"""

from __future__ import annotations

import os
from typing import Any

from heirloom.domain.graph_schema import NODE_LABELS, RELATIONSHIP_TYPES

LONG = os.environ.get("HEIRLOOM_LONG") == "1"


def tables(db: Any) -> list[str]:
    """Every table a write can touch: all of the schema's but the migrations ledger (read from
    the database, so a table a new migration adds is covered)."""
    rows = db.connection().execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'"
    )
    return sorted(r["tablename"] for r in rows.fetchall())


def examples(default: int, long: int) -> int:
    return long if LONG else default


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)


def snapshot(db: Any, graph: Any) -> dict[str, Any]:
    """Every row of every table and every node and edge of the graph prefix, order-free."""
    conn = db.connection()
    out: dict[str, Any] = {}
    for table in tables(db):
        rows = conn.execute(f"SELECT * FROM {table}").fetchall()
        out[table] = sorted((_frozen(dict(r)) for r in rows), key=repr)
    for label in sorted(NODE_LABELS):
        rows = graph.run(f"MATCH (n:{label}) RETURN n")
        out[f"graph:{label}"] = sorted((_frozen(r["n"]) for r in rows), key=repr)
    for kind in sorted(RELATIONSHIP_TYPES):
        rows = graph.run(f"MATCH (a)-[r:{kind}]->(b) RETURN a.id AS a, r, b.id AS b")
        out[f"graph:{kind}"] = sorted((_frozen(r) for r in rows), key=repr)
    return out


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed, per table / label / edge type, as short lines."""
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = set(before.get(key, ())), set(after.get(key, ()))
        if old != new:
            lines.append(
                f"{key}: +{len(new - old)} -{len(old - new)} {sorted(new - old, key=repr)[:2]!r:.300}"
            )
    return lines
