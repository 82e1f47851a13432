"""The full stored state of one deployment (PostgreSQL + graph), for "a run with faults and
recovery ends where a clean run ends" comparisons.

`snapshot(db, graph)` captures:
- every row of every table in PostgreSQL's public schema (stories, chunks with text, token count,
  embedding and text-search vector, the processing markers, tombstones, links and shares,
  members, ...), except the columns in `VOLATILE` (wall-clock stamps written with now()) and the
  tables in `LOGS` (what went wrong on the way, compared separately);
- every node of the deployment's graph prefix with its labels and properties, and every edge
  with its type, endpoints and properties (provenance included: one edge per supporting story,
  each with its single `story_id`, docs/decisions/0007).

Normalisation is limited to what a different order of operations may change without changing
the state: rows, nodes and edges are sorted. A graph property holding a list or a map (which
Neptune cannot store) fails the capture. A new table or column is captured without changes here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from heirloom.adapters.cypher import logical_name
from heirloom.adapters.postgres import PgDatabase
from heirloom.domain.graph_schema import NODE_LABELS
from heirloom.ports import GraphStore

#: (table, column) written from the wall clock, not from the data
VOLATILE = {
    ("legacies", "created_at"),
    ("legacies", "updated_at"),
    ("story_processing", "processed_at"),
    ("schema_migrations", "applied_at"),
    ("entity_merges", "merged_at"),
    ("entity_merges", "unmerged_at"),
    ("entity_keep_apart", "decided_at"),
    ("graph_impact", "last_built_at"),
    ("communities", "built_at"),
    ("conversation_tombstones", "deleted_at"),
}
#: operational logs, not state: a run with faults records its failures here by design, and
#: counts each retried graph write again as impact toward community rebuilds
LOGS = {"ingest_failures", "graph_impact"}
#: engine metadata lists whose order carries no meaning
SET_LIKE = {"_labels"}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in sorted(value.items()) if not k.startswith("_") or k == "_labels"}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "to_list"):  # pgvector Vector
        return [float(x) for x in value.to_list()]
    if hasattr(value, "tolist"):  # numpy arrays
        return [float(x) for x in value.tolist()]
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return str(value)  # uuid, datetime (ISO, with offset), Decimal


def _props(props: dict[str, Any]) -> dict[str, Any]:
    lists = sorted(
        k for k, v in props.items() if not k.startswith("_") and isinstance(v, list | tuple | dict)
    )
    assert not lists, f"graph properties Neptune cannot store (lists or maps): {lists} in {props}"
    out = _plain(props)
    for key in SET_LIKE & out.keys():
        if isinstance(out[key], list):
            out[key] = sorted(out[key])
    return out


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@dataclass
class Snapshot:
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def state(self) -> dict[str, Any]:
        return {"tables": self.tables, "nodes": self.nodes, "edges": self.edges}

    def diff(self, other: Snapshot, limit: int = 12) -> list[str]:
        """Human-readable differences (what only self has: `-`, only other: `+`)."""
        out: list[str] = []
        mine, theirs = self.state(), other.state()
        for part in ("tables", "nodes", "edges"):
            a, b = mine[part], theirs[part]
            if part == "tables":
                for name in sorted(set(a) | set(b)):
                    ra = {json.dumps(r, sort_keys=True) for r in a.get(name, [])}
                    rb = {json.dumps(r, sort_keys=True) for r in b.get(name, [])}
                    out += [f"- {name} {r[:300]}" for r in sorted(ra - rb)]
                    out += [f"+ {name} {r[:300]}" for r in sorted(rb - ra)]
            else:
                ra = {json.dumps(r, sort_keys=True) for r in a}
                rb = {json.dumps(r, sort_keys=True) for r in b}
                out += [f"- {part} {r[:300]}" for r in sorted(ra - rb)]
                out += [f"+ {part} {r[:300]}" for r in sorted(rb - ra)]
        return out[:limit]

    def counts(self) -> dict[str, int]:
        return {
            **{name: len(rows) for name, rows in self.tables.items()},
            "graph_nodes": len(self.nodes),
            "graph_edges": len(self.edges),
        }


def pg_tables(db: PgDatabase) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    conn = db.connection()
    names = [
        r["table_name"]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()
    ]
    tables: dict[str, list[dict[str, Any]]] = {}
    logs: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        columns = [
            r["column_name"]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position",
                (name,),
            ).fetchall()
            if (name, r["column_name"]) not in VOLATILE
        ]
        select = ", ".join(f'"{c}"::text' if c == "tsv" else f'"{c}"' for c in columns)
        rows = [_plain(dict(r)) for r in conn.execute(f'SELECT {select} FROM "{name}"').fetchall()]
        (logs if name in LOGS else tables)[name] = _sorted(rows)
    return tables, logs


def graph_state(graph: GraphStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    for label in sorted(NODE_LABELS):
        for row in graph.run(f"MATCH (n:{label}) RETURN n"):
            node = _props(row["n"])
            key = json.dumps(node, sort_keys=True)
            nodes[key] = node  # a node with two labels is listed once
        for row in graph.run(
            f"MATCH (a:{label})-[r]->(b) RETURN a.id AS source, r, b.id AS target, labels(b) AS target_labels"
        ):
            edge = _props(row["r"])
            edges.append(
                {
                    "type": row["r"].get("_type"),
                    "source": row["source"],
                    "source_label": label,
                    "target": row["target"],
                    "target_labels": sorted(
                        n for n in (logical_name(graph.prefix, x) for x in row["target_labels"]) if n
                    ),
                    "props": edge,
                }
            )
    return _sorted(list(nodes.values())), _sorted(edges)


def snapshot(db: PgDatabase, graph: GraphStore) -> Snapshot:
    tables, logs = pg_tables(db)
    nodes, edges = graph_state(graph)
    return Snapshot(tables=tables, nodes=nodes, edges=edges, logs=logs)


def assert_same_state(fault_run: Snapshot, clean_run: Snapshot) -> None:
    """The run with faults and recovery holds exactly what the clean run holds."""
    diff = fault_run.diff(clean_run)
    assert not diff, "stored state differs from the clean run:\n" + "\n".join(diff)
