"""The graph store of a deployment without a graph (GRAPH_PROVIDER=none, CDK `heirloom:graph=none`).

Every query is still checked against the label whitelist (a bad query fails the same way as on
Neptune), then answered with no rows: ingestion's structural and entity writes go nowhere, and
the context workflow never asks (GRAPH_AUGMENTATION_ENABLED=false routes it to GraphSkipped).
Switching a deployment to a graph later means rebuilding the graph from PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heirloom.adapters.cypher import prefix_query, validate_prefix


class NoGraphStore:
    def __init__(self, prefix: str):
        self.prefix = validate_prefix(prefix)

    def run(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        prefix_query(cypher, self.prefix)
        return []

    def ensure_indexes(self) -> None:
        return None

    def count_nodes(self) -> dict[str, int]:
        return {}

    def count_edges(self) -> dict[str, int]:
        return {}
