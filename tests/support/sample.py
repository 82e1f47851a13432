"""Fresh stores on the embedded engines, optionally with the sample legacy loaded through the
production ingestion path, with the real local models (ONNX MiniLM, spaCy) by default."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.domain.ingestion import IngestionPorts
from heirloom.ports import Embedder
from heirloom_dev.stack import StackStatus
from tests.support.stack import create_database, new_graph

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"


def real_embedder() -> Embedder:
    from heirloom.adapters.factory import _onnx_embedder

    return _onnx_embedder()


def real_extractor():  # -> EntityExtractor
    from heirloom.adapters.factory import _spacy_extractor

    return _spacy_extractor()


@contextmanager
def fresh_ports(
    stack: StackStatus, *, embedder: Embedder | None = None, extract: bool = True, name: str = "f"
) -> Iterator[IngestionPorts]:
    """Ingestion ports over a new database and a private graph prefix, dropped afterwards."""
    assert stack.postgres_uri
    dbname = f"{name}_{uuid.uuid4().hex[:10]}"
    embedder = embedder or real_embedder()
    url = create_database(stack.postgres_uri, dbname, migrated_for=embedder.dimension)
    db = PgDatabase(url, embedding_dim=embedder.dimension)
    db.migrate()
    graph = new_graph(stack)
    extractor = real_extractor() if extract else None
    try:
        yield IngestionPorts(
            stories=PgStoryStore(db),
            vectors=PgVectorIndex(db, model_id=embedder.model_id),
            graph=graph,
            embedder=embedder,
            tokenizer=TiktokenTokenizer(),
            extractor=extractor,
            extractor_version=str(getattr(extractor, "version", "")) if extractor else "",
        )
    finally:
        graph.delete_all()
        db.close()
        with psycopg.connect(stack.postgres_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")


@contextmanager
def unhurried_graph_names() -> Iterator[None]:
    """The gazetteer waits for the graph's entity names instead of its 0.3 s budget, for tests
    that expect places and objects matched: on a loaded machine the graph (the Neptune-protocol
    server above all) can miss that budget, and the intent then sees persons only."""
    with pytest.MonkeyPatch.context() as mp:
        from heirloom.domain import intent_step

        mp.setattr(intent_step, "GRAPH_NAMES_BUDGET_S", 30.0)
        yield


@pytest.fixture
def unhurried_names() -> Iterator[None]:
    with unhurried_graph_names():
        yield


@pytest.fixture(scope="session")
def sample_ports(local_stack: StackStatus) -> Iterator[IngestionPorts]:
    """The sample legacy, loaded once per session with spaCy extraction and the hashing embedder
    (the embedding model is not what the suites using this exercise; it keeps the load fast).
    Read-only for its users: tests that write build their own stores with `fresh_ports`."""
    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom_dev.loader import load_dataset

    with fresh_ports(local_stack, embedder=HashingEmbedder(64), name="sample") as ports:
        load_dataset(ports, SAMPLE)
        # the learned intent classifier for this embedder, trained before any timed state runs
        # (as a layer ships its weights; decision 0008)
        from heirloom.adapters.factory import _intent_models

        _intent_models(None).get(ports.embedder)
        yield ports
