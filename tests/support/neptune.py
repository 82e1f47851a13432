"""The Neptune adapter over the local openCypher server, on the session's FalkorDB.

The server serves the graph `new_graph` writes to (`heirloom_test`), so a FalkorDB store and a
Neptune store with the same prefix see the same data. It checks every request's SigV4 signature
against the fake credentials the tests run with (`conftest.py`, and moto's inside workflows).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from heirloom.adapters.neptune import NeptuneGraphStore
from heirloom_dev.neptune_server import LocalNeptuneServer
from heirloom_dev.stack import StackStatus

GRAPH_NAME = "heirloom_test"
REGION = "us-east-1"
#: access key -> secret key the server accepts: the suite's fake credentials and moto's
CREDENTIALS = {"testing": "testing", "FOOBARKEY": "FOOBARSECRET"}
#: the suite's Neptune read timeout, longer than production's 3 s: two cores shared by the whole
#: suite (two xdist workers, each with its engines); tests of the timeout itself set their own
READ_TIMEOUT_S = 15.0


#: one server per FalkorDB socket, for the session (`shared_server`)
_SERVERS: dict[str, LocalNeptuneServer] = {}


def shared_server(status: StackStatus) -> LocalNeptuneServer:
    """The session's local openCypher server on the stack's FalkorDB, started on first use."""
    assert status.falkor_socket
    server = _SERVERS.get(status.falkor_socket)
    if server is None:
        server = LocalNeptuneServer(status.falkor_socket, GRAPH_NAME, region=REGION, credentials=CREDENTIALS)
        _SERVERS[status.falkor_socket] = server.start()
    return server


def stop_shared_servers() -> None:
    while _SERVERS:
        _SERVERS.popitem()[1].stop()


@pytest.fixture(scope="session")
def neptune_server(local_stack: StackStatus) -> LocalNeptuneServer:
    return shared_server(local_stack)


def new_neptune_graph(
    server: LocalNeptuneServer, prefix: str | None = None, **kw: object
) -> NeptuneGraphStore:
    kw.setdefault("read_timeout_s", READ_TIMEOUT_S)
    return NeptuneGraphStore(
        server.endpoint,
        REGION,
        prefix or f"n{uuid.uuid4().hex[:10]}",
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def neptune_graph(neptune_server: LocalNeptuneServer) -> Iterator[NeptuneGraphStore]:
    server = neptune_server
    server.clear_faults()
    store = new_neptune_graph(server)
    yield store
    server.clear_faults()
    store.delete_all()
