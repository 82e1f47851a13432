"""Wiring for local commands: settings filled from the embedded stack, ports built once."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from heirloom.adapters import factory
from heirloom.adapters.postgres import PgDatabase
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.domain.ingestion import IngestionPorts
from heirloom.local.stack import LocalStack
from heirloom.ports import GraphStore
from heirloom.settings import Settings, get_settings

warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def project_root() -> Path:
    """The checkout this package was installed from (editable install), else the cwd."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "functions").is_dir():
            return parent
    return Path.cwd()


def stack_home(settings: Settings) -> Path:
    home = settings.local.home
    return home if home.is_absolute() else project_root() / home


def with_stack(settings: Settings, *, start: bool = True) -> Settings:
    """`settings` with the database URL and graph socket of the local stack filled in."""
    # a Neptune endpoint (the local server, or a real cluster) replaces the FalkorDB socket
    neptune = bool(settings.graph.neptune_endpoint)
    if settings.database.url and (settings.graph.falkor_socket or neptune):
        return settings
    stack = LocalStack(stack_home(settings))
    status = stack.up() if start else stack.status()
    if not status.running or status.postgres_uri is None or status.falkor_socket is None:
        raise RuntimeError("the local stack is not running: run `heirloom local up`")
    return settings.model_copy(
        update={
            "database": settings.database.model_copy(
                update={"url": settings.database.url or status.postgres_uri}
            ),
            "graph": settings.graph.model_copy(
                update={
                    "falkor_socket": settings.graph.falkor_socket or ("" if neptune else status.falkor_socket)
                }
            ),
        }
    )


@dataclass
class LocalRuntime:
    settings: Settings
    db: PgDatabase
    graph: GraphStore
    ports: IngestionPorts


def open_runtime(settings: Settings | None = None, *, start: bool = True) -> LocalRuntime:
    settings = with_stack(settings or get_settings(), start=start)
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(project_root() / ".heirloom" / "tiktoken"))
    db = factory.build_database(settings)
    db.migrate()
    graph = factory.build_graph(settings)
    graph.ensure_indexes()
    embedder = factory.build_embedder(settings)
    extractor = factory.build_extractor(settings)
    ports = IngestionPorts(
        stories=factory.build_story_store(db),
        vectors=factory.build_vector_index(db, embedder),
        graph=graph,
        embedder=embedder,
        tokenizer=TiktokenTokenizer(),
        chunk_max_tokens=settings.chunking.max_tokens,
        extractor=extractor,
        extractor_version=getattr(extractor, "version", "") if extractor else "",
    )
    repair_lost_graph(ports)
    return LocalRuntime(settings=settings, db=db, graph=graph, ports=ports)


def repair_lost_graph(ports: IngestionPorts) -> bool:
    """Compare, story by story, the fingerprint stored with each sync mark (what the graph
    should hold) with what the graph holds; unmark the stories that differ (FalkorDB restarted
    from an older snapshot, or none: lost or rolled-back facts), so loading the dataset again
    (which `eval` and `demo` do) or `heirloom backfill` rebuilds them. True if it unmarked any."""
    from heirloom.domain.entity_sync import graph_fingerprints

    stored = ports.stories.graph_fingerprints()
    if not stored:
        return False
    held = graph_fingerprints(ports.graph)
    behind = sorted(
        sid for sid, expected in stored.items() if expected is None or held.get(str(sid)) != expected
    )
    if not behind:
        return False
    warnings.warn(
        f"the graph holds other facts than PostgreSQL recorded for {len(behind)} of the {len(stored)}"
        " stories marked as synced: it lost data; their graph facts will be rebuilt",
        stacklevel=2,
    )
    ports.stories.forget_graph_synced(behind)
    return True


def list_legacy_ids(db: PgDatabase) -> list[UUID]:
    return [r["id"] for r in db.connection().execute("SELECT id FROM legacies ORDER BY id").fetchall()]
