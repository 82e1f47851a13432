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
from heirloom.ports import GraphStore
from heirloom.settings import Settings, get_settings
from heirloom_dev.stack import LocalStack, NotSetUp

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


def open_runtime(
    settings: Settings | None = None, *, start: bool = True, write: bool = False, repair: bool | None = None
) -> LocalRuntime:
    """Ports over the local stack. Only a writing command (`write=True`: load, backfill, `invoke`
    of a write step) migrates and creates graph indexes, and only one that loads or backfills
    (`repair`, by default `write`) repairs a lost graph; every other command gets PostgreSQL
    sessions that refuse writes and never writes to the graph."""
    settings = with_stack(settings or get_settings(), start=start)
    url = session_url(settings.database.url, read_only=not write)
    settings = settings.model_copy(update={"database": settings.database.model_copy(update={"url": url})})
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(project_root() / ".heirloom" / "tiktoken"))
    db = factory.build_database(settings)
    if write:
        db.migrate()
    else:
        require_schema(db)
    graph = factory.build_graph(settings)
    if write:
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
        curation=factory.build_curation_store(db),
    )
    if write and repair is not False and marks_describe(db, settings.graph.env_prefix):
        repair_lost_graph(ports)
    return LocalRuntime(settings=settings, db=db, graph=graph, ports=ports)


READ_ONLY_OPTION = "-c default_transaction_read_only=on"


def session_url(url: str, *, read_only: bool) -> str:
    """`url` whose sessions start read-only (PostgreSQL itself refuses any write), or without
    that option: the command decides, whatever an earlier command of the process left in the
    environment."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    parts = conninfo_to_dict(url)
    options = str(parts.get("options") or "").replace(READ_ONLY_OPTION, "").strip()
    if read_only:
        options = f"{options} {READ_ONLY_OPTION}".strip()
    if options == str(parts.get("options") or ""):
        return url
    parts["options"] = options or None
    return make_conninfo("", **{k: str(v) for k, v in parts.items() if v is not None})


def require_schema(db: PgDatabase) -> None:
    """A read-only command applies no migration: it needs a database a write command set up."""
    from importlib import resources

    from heirloom.adapters.postgres import _MIGRATION_NAME

    packaged = {
        f.name for f in resources.files("heirloom.migrations").iterdir() if _MIGRATION_NAME.fullmatch(f.name)
    }
    found = db.connection().execute("SELECT to_regclass('schema_migrations') IS NOT NULL AS ok").fetchone()
    missing = packaged - set(db.applied_migrations()) if found and found["ok"] else packaged
    if missing:
        what = (
            "has no Heirloom schema"
            if missing == packaged
            else f"lacks migrations {', '.join(sorted(missing))}"
        )
        raise NotSetUp(
            f"the database ({db.source.description}) {what}: run `heirloom load DIR` first;"
            " read-only commands write nothing"
        )


#: index_meta key: the graph prefix the graph sync marks of this database describe
MARKS_PREFIX_KEY = "graph_env_prefix"


def marks_describe(db: PgDatabase, prefix: str) -> bool:
    """Whether this database's graph sync marks describe the graph under `prefix` (the first
    writing command claims them for its prefix). Marks made for another prefix say nothing
    about this one's graph, so the repair must not compare them with it."""
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO index_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
            (MARKS_PREFIX_KEY, prefix),
        )
        row = conn.execute("SELECT value FROM index_meta WHERE key = %s", (MARKS_PREFIX_KEY,)).fetchone()
    owner = str(row["value"]) if row else prefix
    if owner != prefix:
        warnings.warn(
            f"this database's graph sync marks describe GRAPH_ENV_PREFIX={owner!r}, not {prefix!r}:"
            " the lost-graph repair does not run (use a database of its own for another prefix)",
            stacklevel=3,
        )
    return owner == prefix


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
