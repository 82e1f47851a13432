"""FalkorDB (openCypher over the Redis protocol): the local stand-in for Neptune."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from heirloom.adapters.cypher import logical_name, prefix_query, validate_prefix
from heirloom.domain.graph_schema import EDGE_INDEXES, NODE_LABELS
from heirloom.errors import GraphQueryRejected, GraphTimeout, GraphUnavailable


def normalise_value(value: Any, prefix: str) -> Any:
    """Nodes and relationships become plain dicts of their properties, with logical
    `_labels` / `_type`; lists and maps are normalised element-wise. Same shape as the Neptune
    adapter."""
    from falkordb.edge import Edge
    from falkordb.node import Node

    if isinstance(value, Node):
        labels = [logical_name(prefix, label) for label in (value.labels or [])]
        return {**value.properties, "_labels": [label for label in labels if label]}
    if isinstance(value, Edge):
        return {**value.properties, "_type": logical_name(prefix, value.relation) or value.relation}
    if isinstance(value, list):
        return [normalise_value(item, prefix) for item in value]
    if isinstance(value, dict):  # map values (the client's OrderedDict) may hold nodes too
        return {str(key): normalise_value(item, prefix) for key, item in value.items()}
    return value


class FalkorGraphStore:
    """Connects on first use, with connect and socket timeouts (`factory.build_graph` passes
    FALKOR_CONNECT_TIMEOUT_S / FALKOR_SOCKET_TIMEOUT_S): the client's constructor already talks
    to the server (it asks whether it is a sentinel), so a hung server held it forever and a
    stopped one raised ConnectionError from wherever the store was built. Connection failures
    and timeouts are GraphUnavailable."""

    def __init__(
        self,
        socket_path: str,
        graph_name: str,
        prefix: str,
        timeout_ms: int | None = None,
        *,
        connect_timeout_s: float | None = 1.0,
        socket_timeout_s: float | None = None,
    ):
        self.prefix = validate_prefix(prefix)
        self._socket_path = socket_path
        self._graph_name = graph_name
        self._timeout_ms = timeout_ms
        self._connect_timeout_s = connect_timeout_s
        self._socket_timeout_s = socket_timeout_s
        self._graph: Any = None
        self._connecting = threading.Lock()

    def _connected(self) -> Any:
        """The client, made once (a traversal's queries may ask from several threads at once: the
        client's connection pool is shared between them)."""
        if self._graph is not None:
            return self._graph
        with self._connecting:
            if self._graph is not None:
                return self._graph
            from falkordb import FalkorDB

            db = FalkorDB(
                unix_socket_path=self._socket_path,
                socket_connect_timeout=self._connect_timeout_s,
                socket_timeout=self._socket_timeout_s,
            )
            self._graph = db.select_graph(self._graph_name)
        return self._graph

    def _raw(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        import redis.exceptions

        try:
            result = self._connected().query(cypher, dict(params or {}), timeout=self._timeout_ms)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise GraphUnavailable(f"graph store unavailable: {exc}") from exc
        except redis.exceptions.ResponseError as exc:
            # typed like the Neptune adapter's errors: a timeout may pass on a retry, anything else
            # is a refusal (the message may quote the query, so it stays out of str())
            if "timed out" in str(exc).lower():
                raise GraphTimeout("FalkorDB gave up on the query (timed out)") from exc
            raise GraphQueryRejected(
                "FalkorDB refused the query", code="FalkorDBError", status=400, detail=str(exc)
            ) from exc
        columns = [col[1] if isinstance(col, list | tuple) else col for col in (result.header or [])]
        return [
            {str(name): normalise_value(value, self.prefix) for name, value in zip(columns, row, strict=True)}
            for row in result.result_set
        ]

    def run(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._raw(prefix_query(cypher, self.prefix), params)

    def ensure_indexes(self) -> None:
        statements = [f"CREATE INDEX FOR (n:{label}) ON (n.id)" for label in sorted(NODE_LABELS)]
        statements += [f"CREATE INDEX FOR ()-[r:{rel}]-() ON (r.{prop})" for rel, prop in EDGE_INDEXES]
        for statement in statements:
            try:
                self._raw(prefix_query(statement, self.prefix))
            except GraphQueryRejected as exc:
                if "already indexed" not in exc.detail:
                    raise

    def count_nodes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._raw("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS c"):
            name = logical_name(self.prefix, row["label"])
            if name:
                counts[name] = counts.get(name, 0) + int(row["c"])
        return counts

    def count_edges(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._raw("MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS c"):
            name = logical_name(self.prefix, row["t"])
            if name:
                counts[name] = counts.get(name, 0) + int(row["c"])
        return counts

    def delete_all(self) -> None:
        """Remove this prefix's nodes and edges (other prefixes are untouched)."""
        for label in sorted(NODE_LABELS):
            self.run(f"MATCH (n:{label}) DETACH DELETE n")
