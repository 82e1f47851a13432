"""`heirloom ask` unchanged with NEPTUNE_ENDPOINT pointing at the local openCypher server: the
sample legacy is loaded through the Neptune adapter (every write over HTTP), then one question
goes through the real context workflow twice, with the graph reached over HTTP and with
FalkorDB directly on the same graph; both answers must be the same."""

import json
import re
import uuid
from pathlib import Path

import psycopg
import pytest

from heirloom.adapters.embedders import HashingEmbedder
from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
from heirloom.domain.ingestion import IngestionPorts
from heirloom_dev.cli import main
from heirloom_dev.loader import load_dataset
from tests.support.neptune import GRAPH_NAME, REGION, new_neptune_graph
from tests.support.stack import _with_database

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"
PLAN = json.loads((SAMPLE / "demo.json").read_text())


@pytest.fixture(scope="module")
def loaded(local_stack, neptune_server, tokenizer):
    from heirloom.adapters.factory import _spacy_extractor

    name = f"ask_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = _with_database(local_stack.postgres_uri, name)
    db = PgDatabase(url, embedding_dim=64)
    db.migrate()
    graph = new_neptune_graph(neptune_server)
    embedder, extractor = HashingEmbedder(64), _spacy_extractor()
    ports = IngestionPorts(stories=PgStoryStore(db), vectors=PgVectorIndex(db, model_id=embedder.model_id),
                           graph=graph, embedder=embedder, tokenizer=tokenizer, extractor=extractor,
                           extractor_version=extractor.version)  # fmt: skip
    load_dataset(ports, SAMPLE)
    db.close()
    yield url, graph
    graph.delete_all()
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _ask(monkeypatch, capsys, env: dict[str, str]) -> tuple[str, dict]:
    from heirloom.domain import intent_step
    from heirloom.settings import get_settings

    with monkeypatch.context() as m:
        # budgets generous enough for a loaded machine: both runs must see the whole graph
        m.setattr(intent_step, "GRAPH_NAMES_BUDGET_S", 30.0, raising=False)
        for key in ("FALKOR_SOCKET", "FALKOR_GRAPH", "NEPTUNE_ENDPOINT", "NEPTUNE_REGION"):
            m.delenv(key, raising=False)
        for key, value in env.items():
            m.setenv(key, value)
        get_settings.cache_clear()
        q = PLAN["questions"][0]
        code = main(["ask", q["query"], "--legacy", PLAN["legacy_id"], "--user", q["user_id"],
                     "--persona", q["persona"], "--debug"])  # fmt: skip
        out = capsys.readouterr().out
    get_settings.cache_clear()
    assert code == 0
    context, _, debug = out.partition("\n{\n")
    return context, json.loads("{\n" + debug)


def _without_latencies(value):
    if isinstance(value, dict):
        return {k: _without_latencies(v) for k, v in value.items() if "latency" not in k}
    if isinstance(value, list):
        return [_without_latencies(v) for v in value]
    return value


def test_ask_reaches_the_graph_over_http_and_answers_as_with_falkordb(
    loaded, local_stack, neptune_server, monkeypatch, capsys
):
    from heirloom.services import default_services

    url, graph = loaded
    common = {"DATABASE_URL": url, "GRAPH_ENV_PREFIX": graph.prefix, "EMBEDDING_PROVIDER": "fake",
              "EMBEDDING_DIM": "64", "EXTRACTOR_PROVIDER": "none", "TRAVERSAL_BUDGET_MS": "10000",
              "TOTAL_BUDGET_MS": "20000"}  # fmt: skip
    before = neptune_server.request_count
    over_http = _ask(monkeypatch, capsys, {**common, "NEPTUNE_ENDPOINT": neptune_server.endpoint,
                                           "NEPTUNE_REGION": REGION})  # fmt: skip
    sent = neptune_server.requests_since(before)
    direct = _ask(monkeypatch, capsys, {**common, "FALKOR_SOCKET": local_stack.falkor_socket,
                                        "FALKOR_GRAPH": GRAPH_NAME})  # fmt: skip
    default_services.cache_clear()
    assert neptune_server.request_count == before + len(sent)  # the direct run never used HTTP

    context, meta = over_http
    assert meta["graph_status"] == "ok" and meta["intent"]["matches"]  # gazetteer found graph names
    templates = {t["template"]: t["results"] for t in meta["traversals"]}
    assert {"legacy_context", "facts"} <= set(templates) and sum(templates.values()) > 3
    assert context.startswith("## Known Connections")
    # every traversal and the gazetteer went over HTTP, signed and answered
    assert len(sent) >= len(templates) + 1 and {r.status for r in sent} == {200}
    assert all("neptune-db/aws4_request" in r.headers["Authorization"] for r in sent)
    # the same text but for each request's own story-block nonce
    assert re.sub(r"story-\d{12}", "story-N", over_http[0]) == re.sub(r"story-\d{12}", "story-N", direct[0])
    assert _without_latencies(meta) == _without_latencies(direct[1])
