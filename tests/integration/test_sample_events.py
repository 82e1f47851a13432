"""Every sample event in events/ through `heirloom invoke FUNCTION -e FILE` (the CLI's own path:
the local stack, moto for S3 and the context workflow), against the sample legacy loaded with
`heirloom load`. Each result is checked for what the event asks, not only for no exception.
The events/story_events/ sequence: test_sample_story_events.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from heirloom_dev.cli import main
from tests.support.stack import stack_home

ROOT = Path(__file__).parents[2]
EVENTS = ROOT / "events"
SAMPLE = ROOT / "examples" / "sample-legacy"
LEGACY = "f8156de7-80fc-4f32-a0b0-5596b12c22c1"
PUNCH_BOWL = "32edde71-76c6-42c8-9d40-0d0067e65339"


@pytest.fixture(scope="module")
def stack() -> Iterator[str]:
    yield from loaded_stack("local")


def loaded_stack(extractor: str) -> Iterator[str]:
    """A private stack with the sample legacy loaded (hashing vectors); yields its PostgreSQL URI."""
    from heirloom.settings import get_settings
    from heirloom_dev.runtime import stack_home as cli_home
    from heirloom_dev.stack import LocalStack

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HEIRLOOM_HOME", str(stack_home() / "home"))
        mp.setenv("EMBEDDING_PROVIDER", "fake")
        mp.setenv("EXTRACTOR_PROVIDER", extractor)
        for name in ("DATABASE_URL", "FALKOR_SOCKET", "GRAPH_ENV_PREFIX", "CONTEXT_STATE_MACHINE_ARN"):
            mp.delenv(name, raising=False)
        get_settings.cache_clear()
        assert main(["load", str(SAMPLE)]) == 0
        uri = LocalStack(cli_home(get_settings())).status().postgres_uri
        assert uri
        yield uri
        main(["local", "down"])
        get_settings.cache_clear()


def invoke(function: str, event_file: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    from heirloom.settings import get_settings

    capsys.readouterr()
    code = main(["invoke", function, "-e", str(event_file)])
    out = capsys.readouterr().out
    get_settings.cache_clear()
    assert code == 0, out
    # the handlers' own log lines are JSON objects too: the result is the last document printed
    return json.loads(out[out.rindex("\n{") + 1 :] if "\n{" in out else out)


def sample(name: str) -> Any:
    return json.loads((EVENTS / f"{name}.json").read_text())


def check_api(result: Any, db: str) -> None:
    assert result["statusCode"] == 200, result
    body = json.loads(result["body"])
    assert "## Relevant Stories" in body["context"] and '"The Punch Bowl"' in body["context"]
    assert PUNCH_BOWL in {s["story_id"] for s in body["sources"]}


def check_intent_analysis(result: Any, db: str) -> None:
    assert result["intent"] == "entity_focused"
    # "the wedding" alone is no node a question can name (decision 0041); the punch bowl is
    assert {(m["label"], m["name"]) for m in result["matches"]} >= {("Object", "punch bowl")}


def check_vector_search(result: Any, db: str) -> None:
    assert result["kind"] == "vector" and result["status"] == "ok"
    assert PUNCH_BOWL in {h["story_id"] for h in result["hits"]}


def check_graph_traversal(result: Any, db: str) -> None:
    assert result["kind"] == "graph" and result["graph"]["status"] == "ok"
    assert any(h["entity"] == "punch bowl" and h["story_id"] == PUNCH_BOWL for h in result["graph"]["hits"])
    assert result["graph"]["facts"], "the known connections of the legacy's subject"


def check_access_filter(result: Any, db: str) -> None:
    assert result["subject_name"] == "Dominic Ferraro"
    assert PUNCH_BOWL in {c["story_id"] for c in result["candidates"]}
    assert result["vector_status"] == "ok" and result["graph_status"] == "ok"


def check_rank_assemble(result: Any, db: str) -> None:
    assert result["formatted_context"].startswith("## Known Connections")
    assert '"The Punch Bowl"' in result["formatted_context"]
    assert result["ranked_story_ids"][0] == PUNCH_BOWL


def check_connections_plan(result: Any, db: str) -> None:
    request = result["request"]
    assert result["story_title"] == "The Punch Bowl" and request["purpose"] == "connections"
    assert request["query"].startswith("The Punch Bowl If you grew up at 411 Orchard Street")
    assert request["linked_story_id"] == PUNCH_BOWL


def check_connections_assemble(result: Any, db: str) -> None:
    assert result["formatted"].startswith("## Connections from This Story\nThis story mentions ")
    places = {e["name"]: e for e in result["entities"] if e["kind"] == "place"}
    assert places["Orchard Street"]["count"] >= 1
    assert PUNCH_BOWL not in {s["story_id"] for e in result["entities"] for s in e["stories"]}


def check_backfill_plan(result: Any, db: str) -> None:
    # every story was processed by the load (and by the write samples, inline)
    assert result == {
        "story_ids": [],
        "next": {
            "after": None,
            "page_size": 50,
            "stories_per_execution": 500,
            "planned": 0,
            "continued_from": None,
        },
        "done": True,
        "continue_as_new": False,  # a sample invoked alone: no execution to continue
        "continuation_name": None,
    }


def check_communities_rebuild(result: Any, db: str) -> None:
    (rebuilt,) = result["rebuilt"]
    assert rebuilt["legacy_id"] == LEGACY and rebuilt["kind"] == "full"
    assert rebuilt["communities"]["private"] >= 1
    with psycopg.connect(db) as conn:
        rows = conn.execute("SELECT count(*) FROM communities WHERE legacy_id = %s", (LEGACY,)).fetchone()
    assert rows is not None and rows[0] == sum(rebuilt["communities"].values())


def check_chunk_embed(result: Any, db: str) -> None:
    assert result["story_id"] == PUNCH_BOWL and result["status"] in ("indexed", "up_to_date")
    assert result["chunks"] == 5


def check_extract_entities(result: Any, db: str) -> None:
    assert result["story_id"] == PUNCH_BOWL and result["status"] in ("extracted", "up_to_date")


def check_graph_sync(result: Any, db: str) -> None:
    assert result["story_id"] == PUNCH_BOWL and result["status"] == "synced"
    assert result["entities"].get("Place", 0) >= 1 and result["entities"].get("Object", 0) >= 1


def check_ingest_failed(result: Any, db: str) -> None:
    assert result == {"story_id": PUNCH_BOWL, "recorded": True}
    row = _one(db, "SELECT error FROM ingest_failures WHERE story_id = %s", PUNCH_BOWL)
    assert row == ("GraphUnavailable",)


def check_ingest_object(result: Any, db: str) -> None:
    assert result["results"] == [
        {
            "key": "imports/f8156de7/last-sunday-dinner.md",
            "status": "imported",
            "change": result["results"][0]["change"],
        }
    ]
    assert result["results"][0]["change"] in ("created", "unchanged")
    row = _one(
        db, "SELECT legacy_id::text, visibility FROM stories WHERE title = %s", "Dad's last Sunday dinner"
    )
    assert row == (LEGACY, "private")


def check_story_events(result: Any, db: str) -> None:
    assert result["detail_type"] == "Story Created" and result["change"] in ("created", "unchanged")
    story = sample("story_events")["detail"]["story"]
    assert _one(db, "SELECT title FROM stories WHERE id = %s", story["id"]) == (story["title"],)


def _one(db: str, sql: str, *params: str) -> tuple[Any, ...] | None:
    with psycopg.connect(db) as conn:
        return conn.execute(sql, params).fetchone()


CHECKS: dict[str, Callable[[Any, str], None]] = {
    name.removeprefix("check_"): check for name, check in globals().items() if name.startswith("check_")
}
FILES = sorted(p.name for p in EVENTS.glob("*.json"))


def test_every_top_level_sample_has_a_check():
    from heirloom_dev.invoke import READ_ONLY

    assert sorted(f"{name}.json" for name in CHECKS) == FILES
    assert not READ_ONLY - set(CHECKS), "READ_ONLY names a function that does not exist"


@pytest.mark.parametrize("file", FILES)
def test_the_sample_event_runs_through_heirloom_invoke(stack, file, capsys, unhurried_names):
    from heirloom_dev.invoke import READ_ONLY
    from tests.support.fuzz import differences, snapshot

    function = file.removesuffix(".json")
    db, graph = stores(stack)
    before = snapshot(db, graph) if function in READ_ONLY else None
    CHECKS[function](invoke(function, EVENTS / file, capsys), stack)
    if before is not None:  # a read step wrote nothing, in PostgreSQL or the graph
        assert differences(before, snapshot(db, graph)) == []
    db.close()


def stores(uri: str) -> tuple[Any, Any]:
    """The stack's database and default graph prefix, opened directly."""
    from heirloom.adapters.falkor import FalkorGraphStore
    from heirloom.adapters.postgres import PgDatabase
    from heirloom.settings import settings_from_env

    defaults = settings_from_env({})
    from heirloom_dev.stack import LocalStack

    home = Path(uri.partition("host=")[2]).parent  # the stack keeps PostgreSQL in <home>/pg
    socket = str(LocalStack(home).falkor_socket)
    graph = FalkorGraphStore(socket, defaults.graph.graph_name, defaults.graph.env_prefix)
    return PgDatabase(uri, embedding_dim=defaults.embedding.dimension), graph


def test_a_failing_invocation_reports_like_lambda_and_exits_non_zero(stack, capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"story_id": "not-a-uuid"}))
    assert main(["invoke", "chunk_embed", "-e", str(bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["errorType"] == "InvalidRequest" and "story_id" in report["errorMessage"]
