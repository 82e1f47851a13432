"""ConnectionsAssemble: group what AccessFilter kept by the entity that connects it, rank, and
format the opening block or the enrichment lines."""

from __future__ import annotations

from heirloom.contracts.connections import ConnectionsAssembleInput, StoryConnections
from heirloom.contracts.context import RetrievalSource
from heirloom.domain.connections import assemble_connections
from heirloom.services import Services


def run(data: ConnectionsAssembleInput, services: Services) -> StoryConnections:
    return connections_step(data)


def connections_step(data: ConnectionsAssembleInput) -> StoryConnections:
    status = data.filtered.graph_status
    wanted = data.request.graph_enabled
    used: tuple[RetrievalSource, ...] = ("graph",) if status == "ok" else ()
    degraded: tuple[RetrievalSource, ...] = ("graph",) if wanted and status != "ok" else ()
    return assemble_connections(data, used, degraded)
