"""The bench stack: the corpus loaded (records through ingestion, chunks and the entity graph in
batches), ingestion throughput on probe stories, and the models' cost per story."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from heirloom.contracts.records import (
    Story,
)
from heirloom.ports import Embedder
from heirloom_dev.bench.corpus import GENERATOR_VERSION, SYNTHETIC_EXTRACTOR, Corpus, StoryPlan
from heirloom_dev.bench.stats import ProgressFn

if TYPE_CHECKING:
    from heirloom.adapters.postgres import PgDatabase, PgVectorIndex
    from heirloom.domain.entity_sync import EntityPlan
    from heirloom.domain.ingestion import IngestionPorts
    from heirloom.ports import Chunk, GraphStore

#: a story to load: its plan, its content hash and its chunks
_Todo = tuple[StoryPlan, str, list["Chunk"]]

PROBE_STORIES = 200
LOAD_BATCH = 64


# -- the bench stack --------------------------------------------------------------------------
@dataclass
class BenchStack:
    ports: IngestionPorts
    db: PgDatabase
    #: the same index as `ports.vectors`, with its bulk write (`replace_many`)
    index: PgVectorIndex
    name: str
    url: str
    falkor_socket: str


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _open_stack(
    name: str, embedder: Embedder, extractor: Any, postgres_uri: str | None, falkor_socket: str | None
) -> BenchStack:
    from heirloom.adapters.falkor import FalkorGraphStore
    from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
    from heirloom.adapters.tokenizer import TiktokenTokenizer
    from heirloom.domain.ingestion import IngestionPorts
    from heirloom.settings import Settings
    from heirloom_dev.runtime import project_root
    from heirloom_dev.stack import LocalStack, ensure_database

    if postgres_uri is None or falkor_socket is None:
        status = LocalStack(project_root() / ".heirloom" / "bench").up()
        postgres_uri, falkor_socket = status.postgres_uri, status.falkor_socket
    if postgres_uri is None or falkor_socket is None:
        raise RuntimeError("the bench stack did not come up")
    url = ensure_database(postgres_uri, name)
    settings = Settings()
    db = PgDatabase(url, statement_timeout_ms=60_000, embedding_dim=embedder.dimension)
    db.migrate()
    db.connection().execute(
        "CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value text NOT NULL)"
    )
    graph = FalkorGraphStore(falkor_socket, settings.graph.graph_name, name)
    graph.ensure_indexes()
    index = PgVectorIndex(db, model_id=embedder.model_id)
    ports = IngestionPorts(
        stories=PgStoryStore(db),
        vectors=index,
        graph=graph,
        embedder=embedder,
        tokenizer=TiktokenTokenizer(),
        chunk_max_tokens=settings.chunking.max_tokens,
        extractor=extractor,
        extractor_version=str(getattr(extractor, "version", "")) if extractor else "",
    )
    return BenchStack(ports=ports, db=db, index=index, name=name, url=url, falkor_socket=falkor_socket)


def _marker(stories: int, seed: int, embedder: Embedder) -> str:
    return f"{stories}|{seed}|{GENERATOR_VERSION}|{embedder.model_id}"


def _read_marker(stack: BenchStack) -> str | None:
    row = stack.db.connection().execute("SELECT value FROM bench_meta WHERE key = 'corpus'").fetchone()
    return str(row["value"]) if row else None


def _write_marker(stack: BenchStack, value: str) -> None:
    stack.db.connection().execute(
        "INSERT INTO bench_meta (key, value) VALUES ('corpus', %s)"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        (value,),
    )


def _batches(items: Sequence[StoryPlan], size: int) -> Iterator[Sequence[StoryPlan]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# The entity graph of many new stories, written once per batch instead of once per story: the
# same nodes, edges and properties as `sync_story_entities` story after story (one person ->
# entity edge per supporting story, entity properties take the last story's values), checked
# by tests/integration/test_bench_load.py.
BULK_ENTITIES = """
UNWIND $rows AS ent
MERGE (e:{label} {{id: ent.id}})
SET e.name = ent.name, e.legacy_id = ent.legacy_id, e.type = ent.type, e.date = ent.date, e.years = ent.years
"""
BULK_STORY_EDGES = """
UNWIND $rows AS row
MATCH (s:Story {{id: row.sid}})
MATCH (e:{label} {{id: row.id}})
MERGE (s)-[r:{edge}]->(e)
SET r.kind = '{edge}', r.in_title = row.in_title
"""
BULK_MENTIONS = """
UNWIND $rows AS row
MATCH (s:Story {id: row.sid})
MATCH (p:Person {id: row.pid})
MERGE (s)-[r:MENTIONS]->(p)
SET r.kind = 'MENTIONS', r.in_title = row.in_title
"""
BULK_PERSON_EDGES = """
UNWIND $rows AS edge
MATCH (p:Person {{id: edge.person_id}})
MATCH (e:{label} {{id: edge.entity_id}})
MERGE (p)-[r:{predicate} {{story_id: edge.sid}}]->(e)
SET r.kind = '{predicate}'
"""
BULK_STORY_FACTS = """
UNWIND $rows AS f
MATCH (s:Story {id: f.sid})
SET s.years = f.years, s.periods = f.periods, s.unresolved_people = f.unresolved, s.extractor_version = f.version
"""


def write_entity_graph(graph: GraphStore, plans: Sequence[EntityPlan]) -> None:
    """The graph writes of `sync_story_entities` for stories with no contributions yet, batched."""
    from heirloom.domain.entity_sync import STORY_EDGE

    entities: dict[tuple[str, str], dict[str, Any]] = {}
    story_edges: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    mentions: dict[tuple[str, str], dict[str, Any]] = {}
    person_edges: dict[tuple[str, str, str, str, str], dict[str, str]] = {}
    for plan in plans:
        for label, rows in plan.by_label.items():
            for row in rows:
                entities[(label, row["id"])] = row  # the last story's properties
                story_edges.setdefault(label, {})[(plan.sid, row["id"])] = {
                    "sid": plan.sid,
                    "id": row["id"],
                    "in_title": row["in_title"],
                }
        for pid in plan.person_ids:
            mentions[(plan.sid, pid)] = {
                "sid": plan.sid,
                "pid": pid,
                "in_title": pid in plan.title_person_ids,
            }
        for (predicate, label), edges in plan.person_edges.items():
            for edge in edges:
                key = (predicate, label, edge["person_id"], edge["entity_id"], plan.sid)
                person_edges[key] = {**edge, "sid": plan.sid}
    for label in ("Place", "Event", "Object"):
        rows = [row for (of, _), row in entities.items() if of == label]
        if rows:
            graph.run(BULK_ENTITIES.format(label=label), {"rows": rows})
            graph.run(
                BULK_STORY_EDGES.format(label=label, edge=STORY_EDGE[label]),
                {"rows": list(story_edges[label].values())},
            )
    if mentions:
        graph.run(BULK_MENTIONS, {"rows": list(mentions.values())})
    for predicate, label in sorted({(k[0], k[1]) for k in person_edges}):
        rows = [row for k, row in person_edges.items() if (k[0], k[1]) == (predicate, label)]
        graph.run(BULK_PERSON_EDGES.format(predicate=predicate, label=label), {"rows": rows})
    if plans:
        graph.run(BULK_STORY_FACTS, {"rows": [{"sid": p.sid, **p.facts} for p in plans]})


def _load_state(stack: BenchStack, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """What PostgreSQL holds for these stories: whether each is stored, and its processing marks."""
    rows = (
        stack.db.connection()
        .execute(
            "SELECT s.id, p.chunks_hash, p.embedder, p.graph_hash, p.extractor_version"
            " FROM stories s LEFT JOIN story_processing p ON p.story_id = s.id WHERE s.id = ANY(%s)",
            (list(ids),),
        )
        .fetchall()
    )
    return {r["id"]: r for r in rows}


def apply_records(ports: IngestionPorts, corpus: Corpus) -> None:
    """Every record of `corpus` but its stories, through the per-record ingestion functions."""
    from heirloom.domain import ingestion

    for plan in corpus.legacies:
        ingestion.apply_legacy(ports, plan.legacy)
    for person in corpus.persons:
        ingestion.apply_person(ports, person)
    for user in corpus.users:
        ingestion.apply_user(ports, user)
    for member in corpus.members:
        ingestion.apply_member(ports, member)
    for rel in corpus.relationships:
        ingestion.apply_relationship(ports, rel)
    for link in corpus.links:
        ingestion.apply_link(ports, link)


def _todo(stack: BenchStack, batch: Sequence[StoryPlan]) -> tuple[dict[UUID, dict[str, Any]], list[_Todo]]:
    """The batch's stories not yet loaded as this generator loads them, with their chunks."""
    from heirloom.domain import story_index
    from heirloom.domain.chunking import story_digest

    ports = stack.ports
    state = _load_state(stack, [sp.story.id for sp in batch])
    todo: list[_Todo] = []
    for sp in batch:
        digest = story_digest(sp.story.title, sp.story.content)
        row = state.get(sp.story.id)
        done = (
            story_index.index_key(digest, ports.chunk_max_tokens),
            ports.embedder.model_id,
            digest,
            SYNTHETIC_EXTRACTOR,
        )
        if (
            row is not None
            and (row["chunks_hash"], row["embedder"], row["graph_hash"], row["extractor_version"]) == done
        ):
            continue
        todo.append((sp, digest, story_index.story_chunks(ports, sp.story)))
    return state, todo


def _embed_batch(stack: BenchStack, todo: list[_Todo], timings: dict[str, float] | None) -> None:
    """The batch's chunks embedded in one call and written as `replace_chunks` writes them."""
    from heirloom.domain import story_index
    from heirloom.ports import EmbeddedChunk

    ports = stack.ports
    texts = [story_index.embedding_text(sp.story.title, c.text) for sp, _, chunks in todo for c in chunks]
    embed_started = time.perf_counter()
    vectors = iter(ports.embedder.embed(texts) if texts else [])
    if timings is not None:
        timings["embed_seconds"] = timings.get("embed_seconds", 0.0) + time.perf_counter() - embed_started
        timings["chunks_embedded"] = timings.get("chunks_embedded", 0.0) + len(texts)
    stack.index.replace_many(
        [
            (
                sp.story.id,
                [
                    EmbeddedChunk(
                        index=c.index, text=c.text, token_count=c.token_count, embedding=tuple(next(vectors))
                    )
                    for c in chunks
                ],
                story_index.index_key(digest, ports.chunk_max_tokens),
            )
            for sp, digest, chunks in todo
        ]
    )


def _load_batch(
    stack: BenchStack, state: dict[UUID, dict[str, Any]], todo: list[_Todo], timings: dict[str, float] | None
) -> None:
    from heirloom.domain import ingestion
    from heirloom.domain.entity_sync import plan_story_entities, withdraw_story

    ports = stack.ports
    with stack.db.transaction():
        for sp, _, _ in todo:
            ingestion.apply_story(ports, sp.story, process=False)
    _embed_batch(stack, todo, timings)
    for sp, _, _ in todo:
        if sp.story.id in state:  # stored by an interrupted run: its graph may be half done
            withdraw_story(ports.graph, str(sp.story.id))
    plans = [plan_story_entities(sp.story, sp.entities, sp.resolved, []) for sp, _, _ in todo]
    write_entity_graph(ports.graph, plans)
    with stack.db.transaction():
        for (sp, digest, _), plan in zip(todo, plans, strict=True):
            ports.stories.mark_graph_synced(
                sp.story.id, digest, SYNTHETIC_EXTRACTOR, plan.fingerprint(str(sp.story.legacy_id))
            )


def load_corpus(
    stack: BenchStack,
    corpus: Corpus,
    progress: ProgressFn | None = None,
    timings: dict[str, float] | None = None,
) -> float:
    """Write the corpus (resuming a partial load); returns the seconds the stories took and fills
    `timings` with `embed_seconds` and `chunks_embedded` (what the embedding model took).

    The records go through `heirloom.domain.ingestion` in one transaction (each write a
    savepoint). Stories go in batches of `LOAD_BATCH`: their rows and Story nodes through
    `apply_story(process=False)` (one commit per batch), the chunks of the whole batch embedded
    in one call and written by `PgVectorIndex.replace_many` (the statements `replace_chunks`
    runs), the entity graph by `write_entity_graph` from `plan_story_entities` (what
    `sync_story_entities` writes; a story stored by an interrupted run is withdrawn first),
    and the processing marks in one transaction."""
    ports = stack.ports
    if not stack.db.connection().execute("SELECT 1 FROM stories LIMIT 1").fetchone():
        from heirloom.domain.graph_schema import NODE_LABELS

        for label in sorted(NODE_LABELS):  # a fresh database: no graph left from an earlier one
            ports.graph.run(f"MATCH (n:{label}) DETACH DELETE n")
    with stack.db.transaction():
        apply_records(ports, corpus)
    if progress:
        progress(
            f"bench: {len(corpus.legacies)} legacies, {len(corpus.persons)} persons written; loading stories"
        )
    started = time.perf_counter()
    done = 0
    for batch in _batches(corpus.stories, LOAD_BATCH):
        state, todo = _todo(stack, batch)
        if todo:
            _load_batch(stack, state, todo, timings)
        done += len(batch)
        if progress and (done % (LOAD_BATCH * 16) < LOAD_BATCH or done == len(corpus.stories)):
            rate = done / max(time.perf_counter() - started, 1e-9)
            progress(f"bench: {done}/{len(corpus.stories)} stories ({rate:.0f}/s)")
    return time.perf_counter() - started


def graph_loaded(stack: BenchStack, corpus: Corpus) -> bool:
    """Does the graph hold the corpus's Story nodes? FalkorDB logs every write (fsynced each
    second), but a stack from before that log, or a crash within that second, can keep PostgreSQL
    and the load marker and start with an older or empty graph."""
    rows = stack.ports.graph.run("MATCH (s:Story) RETURN count(s) AS n")
    return bool(rows) and int(rows[0]["n"]) >= len(corpus.stories)


def rebuild_graph(stack: BenchStack, corpus: Corpus, progress: ProgressFn | None = None) -> float:
    """Write the graph of an already loaded corpus again, nothing embedded: the records through
    `apply_records` (their rows are unchanged), the Story nodes as `apply_story` writes them and
    the entity graph by `write_entity_graph`, in the batches `load_corpus` uses. Returns seconds."""
    from heirloom.domain import graph_sync
    from heirloom.domain.entity_sync import plan_story_entities
    from heirloom.domain.graph_schema import NODE_LABELS

    started = time.perf_counter()
    graph = stack.ports.graph
    for label in sorted(NODE_LABELS):
        graph.run(f"MATCH (n:{label}) DETACH DELETE n")
    with stack.db.transaction():
        apply_records(stack.ports, corpus)
    for batch in _batches(corpus.stories, LOAD_BATCH):
        for sp in batch:
            graph_sync.sync_story(graph, sp.story)
        write_entity_graph(
            graph, [plan_story_entities(sp.story, sp.entities, sp.resolved, []) for sp in batch]
        )
    if progress:
        progress(f"bench: graph rebuilt in {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


def measure_ingestion(stack: BenchStack, corpus: Corpus, count: int) -> dict[str, Any]:
    """Full `apply_story` (PostgreSQL, Story node, chunk + embed, extraction + graph sync) on probe
    copies of `count` corpus stories spread over the legacies; the probes are deleted afterwards."""
    from heirloom.domain import ingestion

    ports = stack.ports
    step = max(1, len(corpus.stories) // max(1, count))
    picked = corpus.stories[::step][:count]
    nonce = time.time_ns()
    probes = [
        sp.story.model_copy(update={"id": uuid.uuid5(uuid.NAMESPACE_OID, f"bench-probe|{nonce}|{i}")})
        for i, sp in enumerate(picked)
    ]
    if ports.extractor is not None and hasattr(ports.extractor, "warm"):
        ports.extractor.warm()
    ports.embedder.embed(["warm up"])
    started, cpu_started = time.perf_counter(), time.process_time()
    for story in probes:
        ingestion.apply_story(ports, story)
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started  # every thread of this process
    for story in probes:
        ingestion.delete_story(ports, story.id)
    _settle(stack)
    return {
        "stories": len(probes),
        "seconds": round(seconds, 2),
        "stories_per_s": round(len(probes) / seconds, 2) if seconds else 0.0,
        "cpu_ms_per_story": round(cpu_seconds / len(probes) * 1000, 1) if probes else 0.0,
        "embedder": ports.embedder.model_id,
        "extractor": ports.extractor_version or "none",
        **_model_costs(ports, probes[:COST_SAMPLE]),
    }


def _settle(stack: BenchStack) -> None:
    """Vacuum and analyze what the probes churned (inserts, then deletes), and compact FalkorDB's
    append-only log now: otherwise autovacuum, or the log's automatic rewrite, may start while
    the stages are timed (one run's vector_search p95 was 189 ms)."""
    import psycopg
    import redis

    with psycopg.connect(stack.url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) stories, story_chunks, story_processing")
    with redis.Redis(unix_socket_path=stack.falkor_socket) as falkor:
        falkor.bgrewriteaof()
        while True:
            info = falkor.info("persistence")
            if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
                break
            time.sleep(0.05)


#: probes whose model calls are also timed alone (where an ingested story's time goes)
COST_SAMPLE = 20


def _model_costs(ports: IngestionPorts, stories: Sequence[Story]) -> dict[str, float]:
    """Mean wall time per story of the two model calls alone, one after the other: embedding
    its chunks and extracting its entities (rules included)."""
    from heirloom.domain import story_graph, story_index

    if not stories:
        return {}
    embed = extract = 0.0
    chunks = 0
    for story in stories:
        texts = [
            story_index.embedding_text(story.title, c.text) for c in story_index.story_chunks(ports, story)
        ]
        chunks += len(texts)
        started = time.perf_counter()
        ports.embedder.embed(texts)
        embed += time.perf_counter() - started
        if ports.extractor is not None:
            started = time.perf_counter()
            story_graph.extract_story(ports, story)
            extract += time.perf_counter() - started
    n = len(stories)
    return {
        "chunks_per_story": round(chunks / n, 1),
        "embed_ms_per_story": round(embed / n * 1000, 1),
        "extract_ms_per_story": round(extract / n * 1000, 1),
    }
