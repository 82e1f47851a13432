"""Integration fixtures beyond the root plugins: the local Neptune openCypher server."""

from tests.support.neptune import neptune_graph, neptune_server

__all__ = ["neptune_graph", "neptune_server"]
